//! The fixture backend's replies, checked by `mxctl reply check` as the probe would read them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;

fn helper_reply(device: &str, page_size: Option<usize>) -> Vec<u8> {
    let mut command = Command::new(common::helper());
    command.arg("--fixture-dir").arg(common::fixtures());
    if let Some(size) = page_size {
        command.args(["--page-size", &size.to_string()]);
    }
    let output = command
        .args(["read", "--device", device, "--format", "1"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn check(reply: &[u8], device: &str) -> serde_json::Value {
    common::check(reply, device)
}

#[test]
fn every_fixture_passes_reply_check_with_nothing_lost_in_one_page() {
    for (device, mode) in [
        ("0000:3b:00.0", "enabled"),
        ("0000:3c:00.0", "enable_on_reboot"),
        ("0000:3d:00.0", "not_supported"),
    ] {
        let result = check(&helper_reply(device, None), device);
        assert_eq!(result["accepted"], true, "{device}: {result}");
        assert_eq!(result["partition_mode"], mode, "{device}");
        assert_eq!(result["lost"], serde_json::json!([]), "{device}");
        assert_eq!(result["unknown"], serde_json::json!([]), "{device}");
    }
}

#[test]
fn a_fixture_split_into_pages_passes_reply_check_with_nothing_lost_and_the_same_outcome() {
    let device = "0000:3b:00.0";
    let paged = helper_reply(device, Some(1));
    assert_eq!(
        String::from_utf8_lossy(&paged).lines().count(),
        3,
        "three vGPUs, one per page"
    );
    let one_page = check(&helper_reply(device, None), device);
    let several = check(&paged, device);
    assert_eq!(several, one_page);
    assert_eq!(several["lost"], serde_json::json!([]));
}

#[test]
fn pages_fold_back_into_the_fixture_itself() {
    let device: gpu_partition_types::Bdf = "0000:3b:00.0".parse().unwrap();
    let fixture = std::fs::read(common::fixtures().join("0000:3b:00.0.json")).unwrap();
    let expected = gpu_partition_types::Reply::from_json(&fixture, Some(&device)).unwrap();
    let paged = gpu_partition_types::Reply::from_json(
        &helper_reply("0000:3b:00.0", Some(2)),
        Some(&device),
    )
    .unwrap();
    assert_eq!(paged, expected);
}

#[test]
fn the_fixture_is_served_as_the_device_asked_for() {
    let reply = helper_reply_with_file("0000:5e:00.0");
    let result = check(&reply, "0000:5e:00.0");
    assert_eq!(result["accepted"], true, "{result}");
}

fn helper_reply_with_file(device: &str) -> Vec<u8> {
    let output = Command::new(common::helper())
        .args(["read", "--format", "1", "--device", device, "--fixture"])
        .arg(common::fixtures().join("0000:3b:00.0.json"))
        .output()
        .unwrap();
    output.stdout
}

#[test]
fn a_device_without_a_fixture_is_unreadable_with_kind_not_found() {
    let result = check(&helper_reply("0000:99:00.0", None), "0000:99:00.0");
    assert_eq!(
        (
            result["outcome"].as_str(),
            result["partition_mode"].as_str()
        ),
        (Some("unreadable"), Some("unknown"))
    );
}

#[test]
fn a_fixture_that_is_not_a_reply_exits_one_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    std::fs::write(&file, "{\"format\": \"1.0\"}").unwrap();
    let output = Command::new(common::helper())
        .args([
            "read",
            "--device",
            "0000:3b:00.0",
            "--format",
            "1",
            "--fixture",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is not a reply"));
}

#[test]
fn the_version_reply_serves_read_format_1_4() {
    let output = Command::new(common::helper())
        .arg("--version")
        .output()
        .unwrap();
    let version = gpu_partition_types::VersionReply::from_json(&output.stdout).unwrap();
    assert_eq!(version.negotiate_read().unwrap().to_string(), "1.4");
}

#[test]
fn a_format_other_than_1_is_a_usage_error() {
    let output = Command::new(common::helper())
        .args(["read", "--device", "0000:3b:00.0", "--format", "2"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn without_nvml_the_reply_is_unreadable_with_driver_error_naming_the_library() {
    // Whether or not this machine has NVML, the loader finds first a libnvidia-ml.so.1 that
    // is no library (an empty file on LD_LIBRARY_PATH): the real one, if any, stays hidden.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("libnvidia-ml.so.1"), b"").unwrap();
    let output = Command::new(common::helper())
        .args(["read", "--device", "0000:3b:00.0", "--format", "1"])
        .env("LD_LIBRARY_PATH", dir.path())
        .output()
        .unwrap();
    let reply = gpu_partition_types::Reply::from_json(&output.stdout, None).unwrap();
    common::assert_unreadable_without_nvml(&reply);
}
