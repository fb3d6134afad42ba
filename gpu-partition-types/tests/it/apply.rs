//! The `apply` request and answer: every step reads, every fault of a request is refused at its
//! member, requests and answers read back equal, and an answer keeps a refusal kind it does not
//! know.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{device, sample};
use gpu_partition_types::{
    ApplyAnswer, ApplyRequest, Enumerated, Op, Placement, RefusalKind, Step, StepOutcome,
    StepResult,
};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::json;

fn refused_at(request: serde_json::Value) -> String {
    ApplyRequest::from_json(request.to_string().as_bytes())
        .map(|request| panic!("accepted: {request:?}"))
        .unwrap_or_else(|refused| refused.pointer.to_string())
}

#[test]
fn every_step_of_the_protocol_reads() {
    let request = ApplyRequest::from_json(
        json!({"steps": [
            {"op": "set_mig_mode", "enabled": false},
            {"op": "create_gpu_instance", "profile_id": 19, "placement": {"start": 6, "size": 1}},
            {"op": "create_compute_instance", "gpu_instance_id": 1, "profile_id": 0},
            {"op": "create_compute_instance", "gpu_instance_id": 1, "profile_id": 0,
             "placement": {"start": 0, "size": 1}},
            {"op": "destroy_compute_instance", "gpu_instance_id": 1, "compute_instance_id": 0},
            {"op": "destroy_gpu_instance", "gpu_instance_id": 1}
        ]})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(
        request.steps,
        [
            Step::SetMigMode { enabled: false },
            Step::CreateGpuInstance {
                profile_id: 19,
                placement: Placement::new(6, 1)
            },
            Step::CreateComputeInstance {
                gpu_instance_id: 1,
                profile_id: 0,
                placement: None
            },
            Step::CreateComputeInstance {
                gpu_instance_id: 1,
                profile_id: 0,
                placement: Some(Placement::new(0, 1))
            },
            Step::DestroyComputeInstance {
                gpu_instance_id: 1,
                compute_instance_id: 0
            },
            Step::DestroyGpuInstance { gpu_instance_id: 1 },
        ]
    );
}

#[test]
fn an_empty_list_of_steps_is_a_request_that_changes_nothing() {
    let request = ApplyRequest::from_json(br#"{"steps": []}"#).unwrap();
    assert!(request.steps.is_empty());
}

#[test]
fn an_op_this_reader_does_not_know_is_refused_not_skipped() {
    assert_eq!(
        refused_at(json!({"steps": [{"op": "set_mig_mode", "enabled": true}, {"op": "reshape"}]})),
        "/steps/1/op"
    );
}

#[test]
fn a_member_a_step_does_not_have_is_refused() {
    // A misspelt optional member would otherwise change what is created.
    assert_eq!(
        refused_at(
            json!({"steps": [{"op": "create_compute_instance", "gpu_instance_id": 1,
                                      "profile_id": 0, "placment": {"start": 0, "size": 1}}]})
        ),
        "/steps/0/placment"
    );
    assert_eq!(
        refused_at(json!({"steps": [], "dry_run": true})),
        "/dry_run"
    );
}

#[test]
fn each_missing_member_is_refused_at_its_pointer() {
    for (step, pointer) in [
        (json!({"enabled": true}), "/steps/0/op"),
        (json!({"op": "set_mig_mode"}), "/steps/0/enabled"),
        (
            json!({"op": "create_gpu_instance", "placement": {"start": 0, "size": 1}}),
            "/steps/0/profile_id",
        ),
        (
            json!({"op": "create_gpu_instance", "profile_id": 19}),
            "/steps/0/placement",
        ),
        (
            json!({"op": "create_gpu_instance", "profile_id": 19, "placement": {"start": 0}}),
            "/steps/0/placement/size",
        ),
        (
            json!({"op": "create_compute_instance", "profile_id": 0}),
            "/steps/0/gpu_instance_id",
        ),
        (
            json!({"op": "destroy_compute_instance", "gpu_instance_id": 1}),
            "/steps/0/compute_instance_id",
        ),
        (
            json!({"op": "destroy_gpu_instance"}),
            "/steps/0/gpu_instance_id",
        ),
    ] {
        assert_eq!(refused_at(json!({ "steps": [step] })), pointer);
    }
}

#[test]
fn each_value_of_the_wrong_type_or_range_is_refused_at_its_pointer() {
    for (step, pointer) in [
        (
            json!({"op": "set_mig_mode", "enabled": 1}),
            "/steps/0/enabled",
        ),
        (
            json!({"op": "set_mig_mode", "enabled": "true"}),
            "/steps/0/enabled",
        ),
        (json!({"op": 7}), "/steps/0/op"),
        (
            json!({"op": "Set_Mig_Mode", "enabled": true}),
            "/steps/0/op",
        ),
        (
            json!({"op": "destroy_gpu_instance", "gpu_instance_id": -1}),
            "/steps/0/gpu_instance_id",
        ),
        (
            json!({"op": "destroy_gpu_instance", "gpu_instance_id": 1.0}),
            "/steps/0/gpu_instance_id",
        ),
        (
            json!({"op": "destroy_gpu_instance", "gpu_instance_id": "1"}),
            "/steps/0/gpu_instance_id",
        ),
        (
            json!({"op": "destroy_gpu_instance", "gpu_instance_id": 4_294_967_296_u64}),
            "/steps/0/gpu_instance_id",
        ),
        (
            json!({"op": "create_gpu_instance", "profile_id": 19, "placement": [0, 1]}),
            "/steps/0/placement",
        ),
    ] {
        assert_eq!(refused_at(json!({ "steps": [step] })), pointer, "{step}");
    }
    assert_eq!(refused_at(json!({"steps": [7]})), "/steps/0");
    assert_eq!(
        refused_at(json!({"steps": {"op": "set_mig_mode"}})),
        "/steps"
    );
}

#[test]
fn bytes_that_are_not_one_json_object_are_refused_at_the_root() {
    for input in [&b""[..], b"[]", b"{\"steps\": [", b"{} {}", b"\xff"] {
        let refused = ApplyRequest::from_json(input).unwrap_err();
        assert!(refused.pointer.is_root(), "{refused}");
    }
}

fn answer() -> ApplyAnswer {
    ApplyAnswer::new(
        vec![
            StepResult::new(
                Op::SetMigMode,
                StepOutcome::Done {
                    gpu_instance_id: None,
                    compute_instance_id: None,
                    pending: true,
                },
            ),
            StepResult::new(
                Op::CreateGpuInstance,
                StepOutcome::Refused {
                    kind: Enumerated::Known(RefusalKind::InsufficientResources),
                    message: "the placement 0+4 overlaps GPU instance 1".to_owned(),
                },
            ),
            StepResult::new(Op::CreateComputeInstance, StepOutcome::Skipped),
        ],
        sample(),
    )
}

#[test]
fn an_answer_reads_back_equal() {
    let answer = answer();
    assert_eq!(
        ApplyAnswer::from_json(answer.to_json().as_bytes(), &device()).unwrap(),
        answer
    );
}

#[test]
fn an_answer_keeps_a_refusal_kind_of_a_later_version_and_ignores_members_it_does_not_know() {
    let mut value: serde_json::Value = serde_json::from_str(&answer().to_json()).unwrap();
    value["results"][1]["kind"] = json!("thermal_limit");
    value["results"][1]["later"] = json!({"x": 1});
    value["elapsed_ms"] = json!(12);
    let read = ApplyAnswer::from_json(value.to_string().as_bytes(), &device()).unwrap();
    match &read.results[1].outcome {
        StepOutcome::Refused { kind, .. } => assert_eq!(kind.as_str(), "thermal_limit"),
        other => panic!("{other:?}"),
    }
    assert!(read.to_json().contains("\"thermal_limit\""));
}

#[test]
fn a_fault_in_the_answers_reply_is_named_under_reply() {
    let mut value: serde_json::Value = serde_json::from_str(&answer().to_json()).unwrap();
    value["reply"]["mode"]["current"] = json!("on");
    let refused = ApplyAnswer::from_json(value.to_string().as_bytes(), &device()).unwrap_err();
    assert_eq!(refused.pointer.to_string(), "/reply/mode/current");
}

#[test]
fn an_answer_for_another_card_or_of_another_major_is_refused() {
    let mut value: serde_json::Value = serde_json::from_str(&answer().to_json()).unwrap();
    value["device"] = json!("0000:3c:00.0");
    let refused = ApplyAnswer::from_json(value.to_string().as_bytes(), &device()).unwrap_err();
    assert_eq!(refused.pointer.to_string(), "/device");
    let mut value: serde_json::Value = serde_json::from_str(&answer().to_json()).unwrap();
    value["format"] = json!("2.0");
    let refused = ApplyAnswer::from_json(value.to_string().as_bytes(), &device()).unwrap_err();
    assert_eq!(refused.pointer.to_string(), "/format");
    let mut value: serde_json::Value = serde_json::from_str(&answer().to_json()).unwrap();
    value["results"][2]["result"] = json!("maybe");
    let refused = ApplyAnswer::from_json(value.to_string().as_bytes(), &device()).unwrap_err();
    assert_eq!(refused.pointer.to_string(), "/results/2/result");
}

fn placement() -> impl Strategy<Value = Placement> {
    (any::<u32>(), any::<u32>()).prop_map(|(start, size)| Placement::new(start, size))
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<bool>().prop_map(|enabled| Step::SetMigMode { enabled }),
        (any::<u32>(), placement()).prop_map(|(profile_id, placement)| {
            Step::CreateGpuInstance {
                profile_id,
                placement,
            }
        }),
        (
            any::<u32>(),
            any::<u32>(),
            proptest::option::of(placement())
        )
            .prop_map(|(gpu_instance_id, profile_id, placement)| {
                Step::CreateComputeInstance {
                    gpu_instance_id,
                    profile_id,
                    placement,
                }
            }),
        (any::<u32>(), any::<u32>()).prop_map(|(gpu_instance_id, compute_instance_id)| {
            Step::DestroyComputeInstance {
                gpu_instance_id,
                compute_instance_id,
            }
        }),
        any::<u32>().prop_map(|gpu_instance_id| Step::DestroyGpuInstance { gpu_instance_id }),
        any::<bool>().prop_map(|enabled| Step::SetVgpuHeterogeneousMode { enabled }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn a_written_request_reads_back_equal(steps in vec(step(), 0..20)) {
        let request = ApplyRequest::new(steps);
        prop_assert_eq!(ApplyRequest::from_json(request.to_json().as_bytes()).unwrap(), request);
    }

    #[test]
    fn a_request_with_one_member_removed_is_refused_at_that_member_or_still_reads(
        steps in vec(step(), 1..6),
        pick in any::<prop::sample::Index>(),
    ) {
        let request = ApplyRequest::new(steps);
        let mut value: serde_json::Value = serde_json::from_str(&request.to_json()).unwrap();
        let step = pick.index(request.steps.len());
        let members: Vec<String> = value["steps"][step]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let member = &members[pick.index(members.len())];
        value["steps"][step].as_object_mut().unwrap().remove(member);
        match ApplyRequest::from_json(value.to_string().as_bytes()) {
            // Only an optional placement may go.
            Ok(read) => {
                prop_assert_eq!(member.as_str(), "placement");
                let is_ci = matches!(read.steps[step], Step::CreateComputeInstance { placement: None, .. });
                prop_assert!(is_ci);
            }
            Err(refused) => {
                let at = format!("/steps/{step}/{member}");
                prop_assert_eq!(refused.pointer.to_string(), at);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_request_reader(bytes in vec(any::<u8>(), 0..256)) {
        let _ = ApplyRequest::from_json(&bytes);
    }
}
