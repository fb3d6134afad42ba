//! `mxctl reset` against a fake `mx-smi` that records every call, a built `/proc/modules` and a
//! kernel log file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Host, LISTING};
use std::process::Command;
use std::time::{Duration, Instant};

fn outcome(document: &serde_json::Value) -> (&str, &str) {
    (
        document["outcome"].as_str().unwrap(),
        document["reason"].as_str().unwrap(),
    )
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[test]
fn a_healthy_reset_is_done_with_exactly_one_reset_call() {
    needs_root!();
    let host = Host::new();
    let (code, mut document) = host.reset(&["--device", "1"]);
    assert_eq!(code, 0, "{document}");
    assert!(document["elapsed_ms"].as_u64().unwrap() < 5000);
    document["elapsed_ms"] = "[elapsed]".into();
    insta::assert_json_snapshot!("reset_done", document);
    let calls = std::fs::read_to_string(host.path("bin/calls")).unwrap();
    assert_eq!(
        calls
            .lines()
            .filter(|l| l.starts_with("-r"))
            .collect::<Vec<_>>(),
        ["-r -i 1"]
    );
    assert!(
        calls.starts_with("--show-version\n--show-process\n-L\n-r -i 1\n-L\n"),
        "{calls}"
    );
}

#[test]
fn a_pci_address_is_reset_by_its_node_id() {
    needs_root!();
    let host = Host::new();
    let (code, _) = host.reset(&["--device", "0000:07:00.0"]);
    assert_eq!(code, 0);
    assert!(
        std::fs::read_to_string(host.path("bin/calls"))
            .unwrap()
            .contains("-r -i 1\n")
    );
}

#[test]
fn a_process_on_the_gpus_blocks_with_gpu_busy_and_resets_nothing() {
    needs_root!();
    let host = Host::new();
    host.write(
        "bin/processes",
        "GPU  PID    Process name          GPU Memory\n0    4242   python3               1024MiB\n",
    );
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!((code, outcome(&document)), (3, ("blocked", "gpu_busy")));
    assert_eq!(host.resets(), 0);
}

#[test]
fn a_driver_in_use_blocks_and_resets_nothing() {
    needs_root!();
    let host = Host::new();
    host.write("proc/modules", "metax 4194304 1 - Live 0x0\n");
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(
        (code, outcome(&document)),
        (3, ("blocked", "driver_in_use"))
    );
    assert_eq!(host.resets(), 0);
}

#[test]
fn a_driver_not_loaded_blocks_and_resets_nothing() {
    needs_root!();
    let host = Host::new();
    host.write("proc/modules", "nvme 61440 3 - Live 0x0\n");
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(
        (code, outcome(&document)),
        (3, ("blocked", "driver_not_loaded"))
    );
}

#[test]
fn another_vendors_mx_smi_blocks_with_mx_smi_unavailable() {
    needs_root!();
    let host = Host::new();
    host.write("bin/version", "mx-smi 1.0 (not MetaX)\n");
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(
        (code, outcome(&document)),
        (3, ("blocked", "mx_smi_unavailable"))
    );
    assert_eq!(host.resets(), 0);
}

#[test]
fn an_absent_mx_smi_blocks_with_mx_smi_unavailable() {
    needs_root!();
    let host = Host::new();
    std::fs::remove_file(host.path("bin/mx-smi")).unwrap();
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(
        (code, outcome(&document)),
        (3, ("blocked", "mx_smi_unavailable"))
    );
    assert!(
        document["detail"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
}

#[test]
fn an_unknown_device_blocks_and_resets_nothing() {
    needs_root!();
    let host = Host::new();
    let (code, document) = host.reset(&["--device", "7"]);
    assert_eq!(
        (code, outcome(&document)),
        (3, ("blocked", "unknown_device"))
    );
    assert_eq!(host.resets(), 0);
}

#[test]
fn a_listing_without_gpu_rows_blocks_instead_of_finding_no_gpus() {
    needs_root!();
    let host = Host::new();
    host.write("bin/listing", "mx-smi version: 2.2.1\nno devices\n");
    let (code, document) = host.reset(&["--device", "all"]);
    assert_eq!(
        (code, outcome(&document)),
        (3, ("blocked", "mx_smi_unavailable"))
    );
}

#[test]
fn a_dry_run_records_no_reset_call() {
    needs_root!();
    let host = Host::new();
    let (code, document) = host.reset(&["--device", "all", "--dry-run"]);
    assert_eq!((code, outcome(&document)), (0, ("dry_run", "")));
    assert_eq!(
        document["gpus"],
        serde_json::json!(["0000:06:00.0", "0000:07:00.0"])
    );
    assert_eq!(host.resets(), 0);
}

#[test]
fn a_hung_reset_is_killed_at_the_windows_end_and_needs_a_cold_reboot() {
    needs_root!();
    let host = Host::new();
    host.write("bin/reset-mode", "hang");
    let started = Instant::now();
    let (code, document) = host.reset(&["--device", "1", "--window", "1"]);
    assert_eq!(
        (code, outcome(&document)),
        (4, ("cold_reboot_required", "reset_hung"))
    );
    assert!(
        started.elapsed()
            < Duration::from_secs(1) + Duration::from_millis(500) + Duration::from_secs(2)
    );
    let pid: u32 = std::fs::read_to_string(host.path("bin/reset-pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "mx-smi -r still running");
}

#[test]
fn a_reset_error_needs_a_cold_reboot() {
    needs_root!();
    let host = Host::new();
    host.write("bin/reset-mode", "error");
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(
        (code, outcome(&document)),
        (4, ("cold_reboot_required", "reset_error"))
    );
    assert!(
        document["detail"]
            .as_str()
            .unwrap()
            .contains("warm reset failed on GPU#1")
    );
}

#[test]
fn a_gpu_missing_after_the_reset_needs_a_cold_reboot() {
    needs_root!();
    let host = Host::new();
    host.write(
        "bin/listing-after",
        &LISTING
            .lines()
            .filter(|l| !l.starts_with("GPU#1"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let (code, document) = host.reset(&["--device", "0", "--window", "2"]);
    assert_eq!(
        (code, outcome(&document)),
        (4, ("cold_reboot_required", "gpu_missing"))
    );
}

#[test]
fn a_gpu_unavailable_after_the_reset_needs_a_cold_reboot() {
    needs_root!();
    let host = Host::new();
    host.write(
        "bin/listing-after",
        &LISTING.replacen("Available", "Unavailable", 1),
    );
    let (code, document) = host.reset(&["--device", "0", "--window", "2"]);
    assert_eq!(
        (code, outcome(&document)),
        (4, ("cold_reboot_required", "gpu_unavailable"))
    );
}

#[test]
fn kernel_errors_after_the_reset_need_a_cold_reboot() {
    needs_root!();
    let host = Host::new();
    host.write("bin/reset-mode", "kernel-errors");
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(
        (code, outcome(&document)),
        (4, ("cold_reboot_required", "kernel_errors"))
    );
    assert!(
        document["detail"]
            .as_str()
            .unwrap()
            .contains("fatal link error")
    );
}

#[test]
fn two_resets_started_at_once_issue_exactly_one_reset() {
    needs_root!();
    let host = Host::new();
    host.write("bin/reset-mode", "slow1");
    let (first, second) = (
        host.spawn(&["--device", "1"]),
        host.spawn(&["--device", "1"]),
    );
    let codes: Vec<i32> = [first, second]
        .into_iter()
        .map(|child| child.wait_with_output().unwrap().status.code().unwrap())
        .collect();
    let mut sorted = codes.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [0, 3], "{codes:?}");
    assert_eq!(host.resets(), 1);
}

#[test]
fn a_restart_after_sigkill_inside_the_window_issues_no_second_reset() {
    needs_root!();
    let host = Host::new();
    host.write("bin/reset-mode", "slow3");
    let mut first = host.spawn(&["--device", "1", "--window", "30"]);
    let started = Instant::now();
    while host.resets() == 0 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    let (code, document) = host.reset(&["--device", "1", "--window", "30"]);
    assert_eq!(
        (code, outcome(&document)),
        (3, ("blocked", "reset_in_flight"))
    );
    assert_eq!(host.resets(), 1);
    // The orphaned mx-smi -r of the killed run finishes on its own; end it here.
    if let Ok(pid) = std::fs::read_to_string(host.path("bin/reset-pid")) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
}

#[test]
fn the_text_output_shows_each_step_and_the_outcome() {
    needs_root!();
    let host = Host::new();
    let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(["--config", "/dev/null", "--proc-root"])
        .arg(host.path("proc"))
        .arg("--state-dir")
        .arg(host.path("state"))
        .args(["reset", "--device", "1", "--mx-smi"])
        .arg(host.path("bin/mx-smi"))
        .arg("--kmsg")
        .arg(host.path("bin/kmsg"))
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let steps: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split_once("s  ").map(|(_, step)| step))
        .collect();
    assert_eq!(
        steps,
        [
            "taking the host lock",
            "reading the journal",
            "preflight: root",
            "preflight: mx-smi",
            "preflight: metax driver",
            "preflight: versions",
            "preflight: processes",
            "preflight: target",
            "resetting",
            "verifying",
            "checking the kernel log",
            "done",
        ]
    );
    assert!(text.contains("outcome: done\n"), "{text}");
}
