//! Each member of the protocol table dropped or broken, and what a newer helper may add:
//! strict members refuse the reply at their pointer, lenient ones lose exactly their unit. The
//! card's inventory (profiles, GPU instances, vGPUs) is `mutations_inventory`'s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_partition_types::{JsonType, Problem};
use serde_json::json;

/// `$name`: after `$edit`, the reply is refused at `$pointer`.
macro_rules! refused {
    ($name:ident, $pointer:literal, |$v:ident| $edit:expr) => {
        #[test]
        fn $name() {
            let read = edited(|$v| {
                $edit;
            });
            assert_eq!(refusal(&read).as_deref(), Some($pointer), "{read:?}");
        }
    };
}

/// `$name`: after `$edit`, the reply reads and loses exactly `$lost`.
macro_rules! loses {
    ($name:ident, [$($lost:literal),*], |$v:ident| $edit:expr) => {
        #[test]
        fn $name() {
            let read = edited(|$v| {
                $edit;
            });
            let expected: Vec<&str> = vec![$($lost),*];
            assert_eq!(lost(&read), expected);
        }
    };
}

// The inventory's members (`mutations_inventory`) lose their unit by the same rule.
pub(crate) use loses;

#[test]
fn the_written_sample_reads_back_with_nothing_lost() {
    let read = read_value(&written());
    assert_eq!(read.as_ref().ok(), Some(&sample()));
    assert!(lost(&read).is_empty());
}

// format
refused!(a_missing_format_refuses_the_reply, "/format", |v| remove(
    v, "/format"
));
refused!(format_major_two_refuses_the_reply, "/format", |v| set(
    v,
    "/format",
    json!("2.0")
));
refused!(format_major_zero_refuses_the_reply, "/format", |v| set(
    v,
    "/format",
    json!("0.9")
));
refused!(
    a_format_without_minor_refuses_the_reply,
    "/format",
    |v| set(v, "/format", json!("1"))
);
refused!(a_numeric_format_refuses_the_reply, "/format", |v| set(
    v,
    "/format",
    json!(1.0)
));
loses!(a_later_minor_format_reads_with_nothing_lost, [], |v| set(
    v,
    "/format",
    json!("1.9")
));

// device
refused!(a_missing_device_refuses_the_reply, "/device", |v| remove(
    v, "/device"
));
refused!(a_reply_for_another_device_is_refused, "/device", |v| set(
    v,
    "/device",
    json!("0000:3c:00.0")
));
refused!(an_upper_case_device_is_refused, "/device", |v| set(
    v,
    "/device",
    json!("0000:3B:00.0")
));
refused!(
    a_device_that_is_not_a_string_is_refused,
    "/device",
    |v| set(v, "/device", json!(59))
);

// page
loses!(an_absent_page_member_means_the_only_page, [], |v| assert!(
    v.get("page").is_none()
));
loses!(page_zero_of_one_reads, [], |v| set(
    v,
    "/page",
    json!({"index": 0, "count": 1})
));
refused!(a_page_index_not_below_its_count_is_refused, "/page", |v| {
    set(v, "/page", json!({"index": 1, "count": 1}))
});
refused!(a_page_that_is_not_an_object_is_refused, "/page", |v| set(
    v,
    "/page",
    json!("0/1")
));
refused!(
    a_page_without_count_is_refused_at_count,
    "/page/count",
    |v| set(v, "/page", json!({"index": 0}))
);
refused!(a_lone_page_of_two_is_refused, "/page", |v| set(
    v,
    "/page",
    json!({"index": 0, "count": 2})
));

// mode
refused!(a_missing_mode_refuses_the_reply, "/mode", |v| remove(
    v, "/mode"
));
refused!(
    a_mode_that_is_not_an_object_refuses_the_reply,
    "/mode",
    |v| set(v, "/mode", json!("enabled"))
);
refused!(a_missing_capable_refuses_the_reply, "/mode/capable", |v| {
    remove(v, "/mode/capable")
});
refused!(
    a_capable_that_is_a_string_refuses_the_reply,
    "/mode/capable",
    |v| set(v, "/mode/capable", json!("true"))
);
refused!(a_missing_current_refuses_the_reply, "/mode/current", |v| {
    remove(v, "/mode/current")
});
refused!(
    a_capitalised_current_refuses_the_reply,
    "/mode/current",
    |v| set(v, "/mode/current", json!("Enabled"))
);
refused!(an_unknown_current_refuses_the_reply, "/mode/current", |v| {
    set(v, "/mode/current", json!("on"))
});
refused!(a_missing_pending_refuses_the_reply, "/mode/pending", |v| {
    remove(v, "/mode/pending")
});
refused!(an_unknown_pending_refuses_the_reply, "/mode/pending", |v| {
    set(v, "/mode/pending", json!("ENABLED"))
});
refused!(a_numeric_pending_refuses_the_reply, "/mode/pending", |v| {
    set(v, "/mode/pending", json!(1))
});
refused!(
    capable_is_named_before_current_when_both_are_wrong,
    "/mode/capable",
    |v| {
        set(v, "/mode/current", json!("on"));
        set(v, "/mode/capable", json!(null))
    }
);

// case
refused!(a_missing_case_refuses_the_reply, "/case", |v| remove(
    v, "/case"
));
refused!(a_capitalised_case_refuses_the_reply, "/case", |v| set(
    v,
    "/case",
    json!("Partitions")
));
refused!(a_case_a_later_minor_adds_refuses_the_reply, "/case", |v| {
    set(v, "/case", json!("shared"))
});
refused!(
    partitions_on_a_card_that_is_not_capable_is_refused,
    "/case",
    |v| set(v, "/mode/capable", json!(false))
);
refused!(
    the_first_strict_fault_in_table_order_is_named,
    "/format",
    |v| {
        remove(v, "/case");
        remove(v, "/format")
    }
);

// unreadable
refused!(
    an_unreadable_case_without_unreadable_is_refused,
    "/unreadable",
    |v| set(v, "/case", json!("unreadable"))
);
refused!(
    an_unreadable_without_kind_is_refused,
    "/unreadable/kind",
    |v| {
        set(v, "/case", json!("unreadable"));
        set(v, "/unreadable", json!({"message": "x"}))
    }
);
loses!(
    a_broken_unreadable_message_is_not_reported_as_lost,
    [],
    |v| {
        set(v, "/case", json!("unreadable"));
        set(v, "/unreadable", json!({"kind": "busy", "message": 7}))
    }
);
loses!(
    a_broken_unreadable_is_ignored_when_the_case_is_not_unreadable,
    [],
    |v| set(v, "/unreadable", json!(42))
);

#[test]
fn an_unreadable_reply_gives_the_helpers_kind_as_reason() {
    let read = edited(|v| {
        set(v, "/case", json!("unreadable"));
        set(
            v,
            "/unreadable",
            json!({"kind": "driver_error", "message": "NVML gone"}),
        );
    })
    .unwrap();
    assert_eq!(
        read.outcome().reason().map(ToString::to_string).as_deref(),
        Some("helper:driver_error")
    );
}

// driver
loses!(a_missing_driver_loses_the_driver, ["/driver"], |v| remove(
    v, "/driver"
));
loses!(
    a_driver_without_nvml_version_loses_the_whole_driver,
    ["/driver"],
    |v| remove(v, "/driver/nvml_version")
);
loses!(
    a_driver_that_is_a_string_loses_the_driver,
    ["/driver"],
    |v| set(v, "/driver", json!("570"))
);

// what a newer helper may add
#[test]
fn new_members_at_every_level_are_listed_with_their_type_and_otherwise_ignored() {
    let read = edited(|v| {
        set(v, "/format", json!("1.9"));
        set(v, "/later", json!({"deep": [1, {"x": null}]}));
        set(v, "/mode/later", json!(1));
        set(v, "/page", json!({"index": 0, "count": 1, "later": true}));
        set(v, "/driver/later", json!("x"));
        set(v, "/card/later", json!(null));
        set(v, "/profiles/0/later", json!([]));
        set(v, "/profiles/0/signature/later", json!(2));
        set(v, "/gpu_instances/0/later", json!(3));
        set(v, "/gpu_instances/0/placement/later", json!(3));
        set(v, "/gpu_instances/0/compute_instances/0/later", json!(3.5));
        set(v, "/vgpus/0/later", json!(4));
        set(v, "/processes/0/later", json!(-4));
    });
    let mut reply = read.unwrap();
    let listed: Vec<(String, JsonType)> = reply
        .unknown_members
        .iter()
        .map(|member| (member.pointer.to_string(), member.kind))
        .collect();
    let expected = [
        ("/card/later", JsonType::Null),
        ("/driver/later", JsonType::String),
        (
            "/gpu_instances/0/compute_instances/0/later",
            JsonType::Number,
        ),
        ("/gpu_instances/0/later", JsonType::Number),
        ("/gpu_instances/0/placement/later", JsonType::Number),
        ("/later", JsonType::Object),
        ("/mode/later", JsonType::Number),
        ("/page/later", JsonType::Bool),
        ("/processes/0/later", JsonType::Number),
        ("/profiles/0/later", JsonType::Array),
        ("/profiles/0/signature/later", JsonType::Number),
        ("/vgpus/0/later", JsonType::Number),
    ]
    .map(|(pointer, kind)| (pointer.to_owned(), kind));
    assert_eq!(listed, expected);
    reply.unknown_members.clear();
    reply.format = sample().format;
    assert_eq!(reply, sample());
}

#[test]
fn a_new_capability_is_kept_as_unknown_and_written_back_unchanged() {
    let read = edited(|v| {
        set(
            v,
            "/profiles/0/signature/capabilities",
            json!(["p2p", "nvlink"]),
        )
    });
    assert_eq!(unknown(&read), ["/profiles/0/signature/capabilities/1"]);
    assert!(lost(&read).is_empty());
    let rewritten = read.unwrap().to_json();
    assert!(
        rewritten.contains(r#""capabilities":["p2p","nvlink"]"#),
        "{rewritten}"
    );
}

loses!(
    a_missing_card_is_lost_as_in_a_reply_of_format_1_1,
    ["/card"],
    |v| remove(v, "/card")
);
loses!(a_card_that_is_not_an_object_is_lost, ["/card"], |v| set(
    v,
    "/card",
    json!("NVIDIA H200")
));
loses!(
    a_numeric_card_name_loses_the_name_only,
    ["/card/name"],
    |v| set(v, "/card/name", json!(7))
);
loses!(
    a_card_without_a_uuid_loses_the_uuid_only,
    ["/card/uuid"],
    |v| remove(v, "/card/uuid")
);

// card.architecture (format 1.4): NVML's number, lenient; an unknown number is kept.
loses!(
    a_card_without_an_architecture_loses_it_only_as_in_a_reply_of_format_1_3,
    ["/card/architecture"],
    |v| remove(v, "/card/architecture")
);
loses!(
    an_architecture_spelled_as_a_name_loses_it_only,
    ["/card/architecture"],
    |v| set(v, "/card/architecture", json!("hopper"))
);

#[test]
fn a_reply_of_format_1_3_without_an_architecture_reads_it_as_unknown() {
    let read = edited(|v| {
        set(v, "/format", json!("1.3"));
        remove(v, "/card/architecture");
    })
    .unwrap();
    assert_eq!(read.architecture(), None);
    let lost: Vec<(String, Problem)> = read
        .lost()
        .iter()
        .map(|lost| (lost.pointer.to_string(), lost.problem))
        .collect();
    assert_eq!(lost, [("/card/architecture".to_owned(), Problem::Absent)]);
}

#[test]
fn a_negative_architecture_is_lost_as_out_of_range() {
    let read = edited(|v| set(v, "/card/architecture", json!(-1))).unwrap();
    let problems: Vec<Problem> = read.lost().iter().map(|lost| lost.problem).collect();
    assert_eq!(problems, [Problem::OutOfRange]);
}

#[test]
fn each_architecture_number_of_nvml_h_reads_as_its_architecture() {
    use gpu_partition_types::{Architecture, CardArchitecture};
    for (number, architecture) in [
        (7, Architecture::Ampere),
        (8, Architecture::Ada),
        (9, Architecture::Hopper),
        (10, Architecture::Blackwell),
    ] {
        let read = edited(|v| set(v, "/card/architecture", json!(number))).unwrap();
        assert_eq!(
            read.architecture(),
            Some(CardArchitecture::Known(architecture))
        );
    }
}

#[test]
fn an_architecture_a_later_nvml_adds_is_kept_with_its_number_and_written_back_unchanged() {
    let read = edited(|v| set(v, "/card/architecture", json!(11))).unwrap();
    let architecture = read.architecture().unwrap();
    assert_eq!((architecture.known(), architecture.nvml()), (None, 11));
    assert!(read.lost().is_empty(), "{:?}", read.lost());
    let unknown: Vec<String> = read.unknown().iter().map(ToString::to_string).collect();
    assert_eq!(unknown, ["/card/architecture"]);
    let rewritten: serde_json::Value = serde_json::from_str(&read.to_json()).unwrap();
    assert_eq!(rewritten["card"]["architecture"], json!(11));
}

#[test]
fn a_board_without_a_serial_says_null_and_loses_nothing() {
    let read = edited(|v| set(v, "/card/serial", json_null())).unwrap();
    let card = read.card.read().unwrap();
    assert_eq!(
        card.serial.read(),
        Some(&gpu_partition_types::Nullable::Null)
    );
    assert!(read.lost().is_empty(), "{:?}", read.lost());
}

// Members this reader does not know: listed (pointer and JSON type), never lost or refused.

#[test]
fn a_reply_of_known_members_only_lists_no_unknown_member() {
    assert_eq!(edited(|_| {}).unwrap().unknown_members, []);
}

#[test]
fn each_lost_member_says_which_kind_of_fault_cost_it() {
    let read = edited(|v| {
        remove(v, "/driver/version");
        set(v, "/profiles/0/free_instances", json!("2"));
        set(v, "/profiles/1/free_instances", json!(-3));
        set(v, "/vgpus/1/type_id", json!(4_294_967_296_u64));
    })
    .unwrap();
    let kinds: Vec<(String, Problem)> = read
        .lost()
        .iter()
        .map(|lost| (lost.pointer.to_string(), lost.problem))
        .collect();
    let expected = [
        ("/driver", Problem::Absent),
        ("/profiles/0/free_instances", Problem::WrongType),
        ("/profiles/1/free_instances", Problem::OutOfRange),
        ("/vgpus/1/type_id", Problem::OutOfRange),
    ]
    .map(|(pointer, problem)| (pointer.to_owned(), problem));
    assert_eq!(kinds, expected);
}

#[test]
fn each_refusal_says_which_kind_of_fault_refused_the_reply() {
    let kind = |edit: fn(&mut serde_json::Value)| edited(edit).unwrap_err().problem;
    assert_eq!(kind(|v| remove(v, "/case")), Problem::Absent);
    assert_eq!(
        kind(|v| set(v, "/mode/capable", json!("yes"))),
        Problem::WrongType
    );
    assert_eq!(
        kind(|v| set(v, "/mode/current", json!("Enabled"))),
        Problem::UnknownSpelling
    );
    assert_eq!(kind(|v| set(v, "/format", json!("2.0"))), Problem::Invalid);
    let bytes = gpu_partition_types::Reply::from_json(b"{\"format\": ", Some(&device()));
    assert_eq!(bytes.unwrap_err().problem, Problem::Malformed);
}

loses!(
    missing_vgpu_types_are_lost_as_in_a_reply_of_format_1_2,
    ["/vgpu_types"],
    |v| remove(v, "/vgpu_types")
);
loses!(
    a_vgpu_type_without_an_id_is_lost_at_its_index,
    ["/vgpu_types/1"],
    |v| remove(v, "/vgpu_types/1/id")
);
loses!(
    a_text_framebuffer_loses_the_framebuffer_only,
    ["/vgpu_types/0/framebuffer_mib"],
    |v| set(v, "/vgpu_types/0/framebuffer_mib", json!("72704"))
);
loses!(
    a_driver_that_does_not_say_the_count_per_gpu_instance_loses_that_count_only,
    ["/vgpu_types/0/max_instances_per_gpu_instance"],
    |v| remove(v, "/vgpu_types/0/max_instances_per_gpu_instance")
);
loses!(
    a_missing_vgpu_mode_is_lost_as_in_a_reply_of_format_1_2,
    ["/vgpu_mode"],
    |v| remove(v, "/vgpu_mode")
);
loses!(
    a_vgpu_mode_without_its_member_is_lost_whole,
    ["/vgpu_mode"],
    |v| remove(v, "/vgpu_mode/heterogeneous")
);

#[test]
fn a_time_sliced_type_says_null_for_its_profile_and_loses_nothing() {
    let read = edited(|_| {}).unwrap();
    let types = read.vgpu_types.read().unwrap();
    let whole_card = types[1].read().unwrap();
    assert_eq!(whole_card.mig_backed(), Some(false));
    assert_eq!(types[0].read().unwrap().mig_backed(), Some(true));
    assert!(read.lost().is_empty(), "{:?}", read.lost());
}

#[test]
fn a_card_without_the_setting_says_null_for_its_heterogeneous_mode_and_loses_nothing() {
    let read = edited(|v| set(v, "/vgpu_mode/heterogeneous", json_null())).unwrap();
    let mode = read.vgpu_mode.read().unwrap();
    assert_eq!(mode.heterogeneous, gpu_partition_types::Nullable::Null);
    assert!(read.lost().is_empty(), "{:?}", read.lost());
}
