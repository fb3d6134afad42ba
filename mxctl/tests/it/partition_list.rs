//! `mxctl partition list`: the partitions of the host's GPUs as the last sync read them, each
//! GPU's layout generation, rows recorded or inferred, and the last-known rows of a GPU that
//! does not read, marked stale with their age.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_layouts::{GPU0, balanced_h100};
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
