//! `mxctl reply check` run as a user would: the binary, files and standard input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn replies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replies")
}

fn mxctl(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(["--config", "/dev/null"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin.unwrap_or_default()).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn check_json(file: &str) -> (i32, serde_json::Value) {
    let path = replies().join(file);
    let output = mxctl(&["reply", "check", "--json", path.to_str().unwrap()], None);
    let document = serde_json::from_slice(&output.stdout).unwrap();
    (output.status.code().unwrap(), document)
}

#[test]
fn an_accepted_reply_exits_zero_and_reports_its_outcome() {
    let (code, document) = check_json("accepted.json");
    assert_eq!(code, 0);
    insta::assert_json_snapshot!("accepted", document);
}

#[test]
fn a_lossy_reply_is_accepted_and_lists_what_it_lost_and_did_not_know() {
    let (code, document) = check_json("lossy.json");
    assert_eq!(code, 0);
    insta::assert_json_snapshot!("lossy", document);
}

#[test]
fn a_refused_reply_exits_one_and_names_the_member() {
    let (code, document) = check_json("refused.json");
    assert_eq!(code, 1);
    insta::assert_json_snapshot!("refused", document);
}

#[test]
fn the_text_output_of_a_lossy_reply_gives_each_loss_with_its_reason() {
    let path = replies().join("lossy.json");
    let output = mxctl(&["reply", "check", path.to_str().unwrap()], None);
    insta::assert_snapshot!("lossy_text", String::from_utf8(output.stdout).unwrap());
}

#[test]
fn a_reply_read_from_standard_input_with_a_dash_gives_the_same_answer() {
    let bytes = std::fs::read(replies().join("lossy.json")).unwrap();
    let from_stdin = mxctl(&["reply", "check", "--json", "-"], Some(&bytes));
    let (_, from_file) = check_json("lossy.json");
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&from_stdin.stdout).unwrap(),
        from_file
    );
}

#[test]
fn bytes_that_are_not_json_are_a_refusal_at_the_root_not_a_failure() {
    let output = mxctl(&["reply", "check", "--json"], Some(b"\xff\xfe not json"));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(document["accepted"], false);
    assert_eq!(document["error"]["pointer"], "");
}

#[test]
fn empty_input_is_a_refusal_at_the_root() {
    let output = mxctl(&["reply", "check", "--json"], Some(b""));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["pointer"], "");
    assert!(
        document["error"]["message"]
            .as_str()
            .unwrap()
            .contains("empty")
    );
}

#[test]
fn a_reply_for_another_device_is_refused_when_a_device_is_named() {
    let path = replies().join("accepted.json");
    let output = mxctl(
        &[
            "reply",
            "check",
            "--json",
            "--device",
            "0000:3c:00.0",
            path.to_str().unwrap(),
        ],
        None,
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["pointer"], "/device");
}

#[test]
fn a_file_that_cannot_be_opened_is_a_failure_in_the_generic_shape() {
    let output = mxctl(
        &["reply", "check", "--json", "/nonexistent/reply.json"],
        None,
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(document["error"]["kind"], "input");
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/reply.json"));
}

#[test]
fn global_options_may_come_after_the_command() {
    let path = replies().join("accepted.json");
    let output = mxctl(&["reply", "check", path.to_str().unwrap(), "--json"], None);
    assert!(serde_json::from_slice::<serde_json::Value>(&output.stdout).is_ok());
}

#[test]
fn a_usage_error_exits_two() {
    assert_eq!(
        mxctl(&["reply", "check", "--device", "3b:00"], None)
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn a_missing_named_config_file_is_a_failure() {
    let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args([
            "--config",
            "/nonexistent/mxctl.conf",
            "--json",
            "reply",
            "check",
            "-",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["kind"], "config");
}

#[test]
fn an_unknown_config_key_is_warned_about_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mxctl.conf");
    std::fs::write(&config, "# sample\ncolour = blue\n").unwrap();
    let path = replies().join("accepted.json");
    let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args([
            "--config",
            config.to_str().unwrap(),
            "reply",
            "check",
            path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown key `colour`"), "{stderr}");
}

#[test]
fn debug_logging_shows_every_setting_with_its_description() {
    let path = replies().join("accepted.json");
    let output = mxctl(&["-v", "reply", "check", path.to_str().unwrap()], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("gpu-partition-helper = /opt/xensource/libexec/gpu-partition-helper (Reads the partitions of the host's GPUs)"),
        "{stderr}"
    );
}

#[test]
fn a_reply_of_format_1_0_is_accepted_with_the_members_of_1_1_1_2_and_1_3_lost() {
    let (code, document) = check_json("format-1.0-none-carved.json");
    assert_eq!(code, 0);
    assert_eq!(document["accepted"], true);
    assert_eq!(
        document["lost"],
        serde_json::json!([
            "/card",
            "/processes",
            "/profiles/0/placements",
            "/vgpu_mode",
            "/vgpu_types"
        ])
    );
}

#[test]
fn a_reply_of_format_1_1_is_accepted_with_its_placements_and_processes_and_the_later_members_lost()
{
    let (code, document) = check_json("format-1.1-none-carved.json");
    assert_eq!(code, 0);
    assert_eq!(
        (document["accepted"].clone(), document["lost"].clone()),
        (
            serde_json::json!(true),
            serde_json::json!(["/card", "/vgpu_mode", "/vgpu_types"])
        )
    );
    assert_eq!(document["partition_mode"], "disabled");
}
