//! `mxctl partition list`: the partitions of the host's GPUs as the last sync read them, each
//! GPU's layout generation, rows recorded or inferred, and the last-known rows of a GPU that
//! does not read, marked stale with their age.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::PartitionHost;
use common::partition_layouts::{GPU0, GPU1, SEVEN_ON_GPU0, balanced_h100};
use serde_json::Value;

fn rows(list: &Value) -> Vec<(String, String, u64, String)> {
    list["gpus"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let slot = &row["slot"];
            (
                format!("{} {}", slot["kind"].as_str().unwrap(), slot["id"]),
                row["profile"]["name"].as_str().unwrap().to_owned(),
                row["ordinal"].as_u64().unwrap(),
                row["origin"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Rows as [`profiles`] gives them.
fn owned(rows: &[(&str, u64, &str)]) -> Vec<(String, u64, String)> {
    rows.iter()
        .map(|(profile, ordinal, origin)| ((*profile).to_owned(), *ordinal, (*origin).to_owned()))
        .collect()
}

/// Each row's profile, ordinal and origin.
fn profiles(list: &Value) -> Vec<(String, u64, String)> {
    rows(list)
        .into_iter()
        .map(|(_, profile, ordinal, origin)| (profile, ordinal, origin))
        .collect()
}

#[test]
fn an_applied_layout_lists_each_gpu_instance_recorded_in_placement_order_with_its_generation() {
    let host = balanced_h100();
    let list = host.list();
    let gpu = &list["gpus"][0];
    assert_eq!(gpu["device"], GPU0, "{list:#}");
    assert_eq!(
        (&gpu["stale"], &gpu["because"], &gpu["requires_reset"]),
        (&Value::Bool(false), &Value::Null, &Value::Bool(false)),
        "{list:#}"
    );
    assert!(gpu["generation"].as_u64().unwrap() >= 1, "{list:#}");
    assert_eq!(
        profiles(&list),
        owned(&[
            ("1g.10gb", 0, "recorded"),
            ("1g.10gb", 1, "recorded"),
            ("2g.20gb", 0, "recorded"),
            ("3g.40gb", 0, "recorded"),
        ]),
        "{list:#}"
    );
    let starts: Vec<u64> = gpu["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["placement"]["start"].as_u64().unwrap())
        .collect();
    assert!(
        starts.windows(2).all(|pair| pair[0] < pair[1]),
        "{starts:?}"
    );
}

#[test]
fn an_instance_made_by_hand_is_found_inferred_as_the_next_generation_and_a_reread_keeps_it() {
    let host = balanced_h100();
    let before = host.list()["gpus"][0]["generation"].as_u64().unwrap();
    // By hand: the 2g.20gb at slices 2 and 3 (GI 3) destroyed, a 1g.10gb (profile 19) made
    // at slice 2.
    host.by_hand(
        GPU0,
        "[{\"op\": \"destroy_compute_instance\", \"gpu_instance_id\": 3, \"compute_instance_id\": 0}, \
          {\"op\": \"destroy_gpu_instance\", \"gpu_instance_id\": 3}, \
          {\"op\": \"create_gpu_instance\", \"profile_id\": 19, \"placement\": {\"start\": 2, \"size\": 1}}]",
    );
    host.sync("enabled");
    let list = host.list();
    assert_eq!(list["gpus"][0]["generation"], before + 1, "{list:#}");
    assert_eq!(
        profiles(&list),
        owned(&[
            ("1g.10gb", 0, "recorded"),
            ("1g.10gb", 1, "recorded"),
            ("1g.10gb", 2, "inferred"),
            ("3g.40gb", 0, "recorded"),
        ]),
        "{list:#}"
    );
    host.sync("enabled");
    assert_eq!(
        host.list()["gpus"][0]["generation"],
        before + 1,
        "a read of the same"
    );
}

#[test]
fn a_declared_instance_the_card_no_longer_admits_makes_the_gpu_require_a_reset() {
    let host = balanced_h100();
    // By hand: the 2g.20gb at slices 2 and 3 (GI 3) destroyed. A restore makes it again: no
    // reset is required.
    host.by_hand(
        GPU0,
        "[{\"op\": \"destroy_compute_instance\", \"gpu_instance_id\": 3, \"compute_instance_id\": 0}, \
          {\"op\": \"destroy_gpu_instance\", \"gpu_instance_id\": 3}]",
    );
    host.sync("enabled");
    let list = host.list();
    assert_eq!(list["gpus"][0]["requires_reset"], false, "{list:#}");
    assert_eq!(
        list["gpus"][0]["unadmitted"],
        serde_json::json!([]),
        "{list:#}"
    );
    // The card no longer lists the 2g.20gb's placement at slice 2: the division it was declared
    // with is not admitted until the GPU is reset.
    host.change_nvml(|state| {
        let profiles = state["devices"][0]["gpu_instance_profiles"]
            .as_array_mut()
            .unwrap();
        let two = profiles.iter_mut().find(|p| p["id"] == 14).unwrap();
        two["placements"] = serde_json::json!([{"start": 0, "size": 2}, {"start": 4, "size": 2}]);
    });
    host.sync("enabled");
    let list = host.list();
    assert_eq!(list["gpus"][0]["requires_reset"], true, "{list:#}");
    assert_eq!(
        list["gpus"][0]["unadmitted"],
        serde_json::json!([{"profile_id": 14, "placement": {"start": 2, "size": 2}}]),
        "{list:#}"
    );
}

#[test]
fn a_gpu_that_does_not_read_lists_its_last_rows_stale_with_why_and_their_age() {
    let host = balanced_h100();
    let (code, sync) = common::run_json({
        let mut command = host.mxctl(&[]);
        command.args([
            "sync",
            "--after-boot",
            "no",
            "--pool",
            "enabled",
            "--helper",
            "/nonexistent/gpu-partition-helper",
        ]);
        command
    });
    assert_eq!(code, 0, "{sync:#}");
    let list = host.list();
    let gpu = &list["gpus"][0];
    assert_eq!(
        (&gpu["stale"], gpu["because"].as_str()),
        (&Value::Bool(true), Some("not_read")),
        "{list:#}"
    );
    assert!(
        gpu["why"].as_str().unwrap().contains("nonexistent"),
        "{list:#}"
    );
    assert_eq!(
        gpu["partitions"].as_array().unwrap().len(),
        4,
        "never an empty list"
    );
    assert!(gpu["age_s"].as_u64().is_some(), "{list:#}");
    assert_eq!(gpu["requires_reset"], Value::Null, "its mode did not read");
    let text = host.list_text();
    assert!(text.contains("stale ( RO): yes (not_read)"), "{text}");
}

#[test]
fn the_list_for_people_is_one_xe_style_record_per_gpu_and_per_partition() {
    let host = balanced_h100();
    // When it was read, and how long ago, are the clock's: shown as placeholders.
    let text: String = host
        .list_text()
        .lines()
        .map(|line| match line.split_once("read ( RO): ") {
            Some((name, _)) => format!("{name}read ( RO): [read at] (Unix time), [age] s ago\n"),
            None => format!("{line}\n"),
        })
        .collect();
    insta::assert_snapshot!("partition_list_text", text);
}

/// Each GPU's architecture and what a restart does to its division, as `--json` gives them.
fn after_restart(list: &Value, index: usize) -> (Value, Value) {
    let gpu = &list["gpus"][index];
    (gpu["architecture"].clone(), gpu["after_restart"].clone())
}

#[test]
fn a_hopper_division_does_not_come_back_after_a_restart_and_the_restore_turns_mig_on_without_a_reset()
 {
    let host = balanced_h100();
    let list = host.list();
    assert_eq!(
        after_restart(&list, 0),
        (
            Value::from("hopper"),
            serde_json::json!({
                "mig_mode": "cleared",
                "enabling_mig_needs_reset": "not_needed",
                "instances_kept": false,
                "vfs_kept": false,
                "comes_back": false,
                "restore": "mode_and_partitions",
                "needs_reset": false,
            })
        ),
        "{list:#}"
    );
}

#[test]
fn an_ampere_gpu_keeps_its_mig_mode_so_only_its_instances_are_remade_and_one_left_whole_loses_nothing()
 {
    let host = PartitionHost::two_a100s();
    let (code, report) = host.apply(SEVEN_ON_GPU0, "gpu0-1g.5gb", &[]);
    assert_eq!(code, 0, "{report:#}");
    let list = host.list();
    let (gpus, answers): (Vec<&str>, Vec<(Value, Value)>) = (
        vec![
            list["gpus"][0]["device"].as_str().unwrap(),
            list["gpus"][1]["device"].as_str().unwrap(),
        ],
        vec![after_restart(&list, 0), after_restart(&list, 1)],
    );
    assert_eq!(gpus, [GPU0, GPU1]);
    let answer = |comes_back: bool, restore: &str| {
        (
            Value::from("ampere"),
            serde_json::json!({
                "mig_mode": "kept",
                "enabling_mig_needs_reset": "needed",
                "instances_kept": false,
                "vfs_kept": false,
                "comes_back": comes_back,
                "restore": restore,
                "needs_reset": false,
            }),
        )
    };
    assert_eq!(
        answers,
        [answer(false, "partitions"), answer(true, "nothing")],
        "{list:#}"
    );
}
