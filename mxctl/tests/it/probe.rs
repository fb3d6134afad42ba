//! `mxctl probe` with fake helpers the tests write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::test_util::{Act, FakeHelper};
use std::path::{Path, PathBuf};
use std::process::Command;

const REPLY: &str = r#"{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "enabled", "pending": null}, "case": "partitions", "driver": {"version": "1", "nvml_version": "1"}, "profiles": [{"id": 9, "name": 5}], "gpu_instances": [{"id": 1, "profile_id": 9, "placement": {"start": 0, "size": 4}, "uuid": null, "compute_instances": []}], "vgpus": []}"#;

/// Card 1 answers (its first profile's name is a number: lost), card 2 hangs, card 3 is busy.
fn fake_helper(dir: &Path) -> PathBuf {
    FakeHelper::new(dir)
        .reply(REPLY)
        .on("0000:02:00.0", Act::Hang)
        .on("0000:03:00.0", Act::Exit(75))
        .write()
        .unwrap()
}

/// `mxctl` on an empty directory of the test's own: its sysfs tree, state and locks.
fn mxctl(state: &Path) -> Command {
    common::mxctl_on(state, state, &state.join("locks"))
}

fn probe(args: &[&str]) -> (i32, serde_json::Value) {
    let state = tempfile::tempdir().unwrap();
    let output = mxctl(state.path())
        .arg("--json")
        .arg("probe")
        .args(args)
        .output()
        .unwrap();
    let mut document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    if let Some(gpus) = document["gpus"].as_array_mut() {
        for gpu in gpus {
            assert!(gpu["elapsed_ms"].is_u64());
            gpu["elapsed_ms"] = "[elapsed]".into();
        }
    }
    let document = gpu_host_probe::test_util::redact_temp_dirs(&document.to_string());
    (
        output.status.code().unwrap(),
        serde_json::from_str(&document).unwrap(),
    )
}

#[test]
fn probe_reads_each_named_card_and_reports_each_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let helper = fake_helper(dir.path());
    let (code, document) = probe(&[
        "--helper",
        helper.to_str().unwrap(),
        "--deadline",
        "0.3",
        "--device",
        "0000:01:00.0",
        "--device",
        "0000:02:00.0",
        "--device",
        "0000:03:00.0",
    ]);
    assert_eq!(code, 0);
    insta::assert_json_snapshot!("probe_three_cards", document);
}

#[test]
fn probe_with_an_absent_helper_gives_every_card_helper_absent() {
    let (code, document) = probe(&[
        "--helper",
        "/nonexistent/helper",
        "--device",
        "0000:01:00.0",
        "--device",
        "0000:02:00.0",
    ]);
    assert_eq!(code, 0);
    insta::assert_json_snapshot!("probe_helper_absent", document);
}

#[test]
fn probe_text_output_is_an_aligned_table() {
    let dir = tempfile::tempdir().unwrap();
    let helper = fake_helper(dir.path());
    let state = tempfile::tempdir().unwrap();
    let output = mxctl(state.path())
        .args(["probe", "--helper", helper.to_str().unwrap()])
        .args(["--device", "0000:01:00.0", "--device", "0000:03:00.0"])
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("DEVICE        OUTCOME     PARTITION-MODE  REASON  ELAPSED"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("0000:01:00.0  partitions  enabled         -"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("0000:03:00.0  unreadable  unknown         busy"),
        "{text}"
    );
    assert!(
        text.contains("0000:01:00.0: lost /profiles/0/name: expected a string"),
        "{text}"
    );
}
