//! `mxctl reset` against a fake `mx-smi` that prints the published layouts (both header layouts,
//! with and without the banner) and records every call, a built `/proc/modules` and a kernel log
//! file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{BOARD_NO_BANNER, GPU_NAME_BANNER, Host, Layout, OTHER_VENDOR, ended as outcome};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

const LAYOUTS: [(&str, Layout); 2] = [
    ("board layout, no banner", BOARD_NO_BANNER),
    ("GPU NAME layout, banner", GPU_NAME_BANNER),
];

/// Nothing was changed: no `mx-smi -r`, no journal left in flight.
fn assert_nothing_changed(host: &Host) {
    assert_eq!(host.resets(), 0, "{:?}", host.calls());
    let journal = host.read("state/warm-reset-journal.json");
    assert!(!journal.contains("\"target\""), "{journal}");
}

/// Resets with `args`: blocked for `reason`, and nothing was changed. Its document.
#[track_caller]
fn blocked_unchanged(host: &Host, args: &[&str], reason: &str) -> serde_json::Value {
    let document = common::blocked(host.reset(args), reason);
    assert_nothing_changed(host);
    document
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_healthy_reset_is_done_with_exactly_one_reset_call_in_both_published_layouts() {
    common::require_root();
    for (name, layout) in LAYOUTS {
        let host = Host::of(layout);
        let (code, document) = host.reset(&["--device", "1"]);
        assert_eq!(
            (code, outcome(&document)),
            (0, ("done", "")),
            "{name}: {document}"
        );
        assert_eq!(
            host.calls(),
            ["(plain)", "-L", "topo -m", "-r -i 1", "-L", "topo -m"],
            "{name}"
        );
        assert_eq!(document["group"], serde_json::json!([0, 1, 2, 3]), "{name}");
        assert_eq!(document["verified"].as_array().unwrap().len(), 8, "{name}");
    }
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_healthy_reset_reports_the_target_its_group_and_every_gpu_verified() {
    common::require_root();
    let host = Host::new();
    let (code, mut document) = host.reset(&["--device", "1"]);
    assert_eq!(code, 0, "{document}");
    document["elapsed_ms"] = "[elapsed]".into();
    insta::assert_json_snapshot!("reset_done", document);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_pci_address_is_reset_by_its_node_id() {
    common::require_root();
    let host = Host::new();
    let (code, _) = host.reset(&["--device", "0000:0f:00.0"]);
    assert_eq!(code, 0);
    assert!(host.calls().contains(&"-r -i 1".to_owned()));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_process_whose_name_has_spaces_blocks_with_gpu_busy_naming_it() {
    common::require_root();
    for (name, layout) in LAYOUTS {
        let host = Host::of(layout);
        host.edit(
            "bin/plain",
            "bin/plain",
            "|  no process found                                                               |",
            "|  2                  3496691         vllm serve qwen              4066           |",
        );
        let (code, document) = host.reset(&["--device", "1"]);
        assert_eq!(
            (code, outcome(&document)),
            (3, ("blocked", "gpu_busy")),
            "{name}"
        );
        common::assert_detail(&document, "3496691 vllm serve qwen (GPU 2)");
        assert_nothing_changed(&host);
    }
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_driver_in_use_blocks_and_resets_nothing() {
    common::require_root();
    let host = Host::new();
    host.write(
        "proc/modules",
        "metax 1605632 1 - Live 0x0000000000000000\n",
    );
    blocked_unchanged(&host, &["--device", "1"], "driver_in_use");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_driver_not_loaded_blocks_and_resets_nothing() {
    common::require_root();
    let host = Host::new();
    host.write("proc/modules", "nvme 61440 3 - Live 0x0\n");
    blocked_unchanged(&host, &["--device", "1"], "driver_not_loaded");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_kernel_driver_older_than_2_4_1_blocks_with_driver_too_old_in_both_layouts() {
    common::require_root();
    for (name, layout, from) in [
        (
            "board",
            BOARD_NO_BANNER,
            "Kernel Mode Driver Version: 3.4.4 ",
        ),
        (
            "GPU NAME",
            GPU_NAME_BANNER,
            "Kernel Mode Driver Version: 2.15.9",
        ),
    ] {
        let host = Host::of(layout);
        host.edit(
            "bin/plain",
            "bin/plain",
            from,
            "Kernel Mode Driver Version: 2.3.0 ",
        );
        let (code, document) = host.reset(&["--device", "1"]);
        assert_eq!(
            (code, outcome(&document)),
            (3, ("blocked", "driver_too_old")),
            "{name}: {document}"
        );
        common::assert_detail(&document, "kernel driver 2.3.0 is older than 2.4.1");
        assert_nothing_changed(&host);
    }
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_bios_older_than_1_12_blocks_with_driver_too_old() {
    common::require_root();
    let host = Host::of(GPU_NAME_BANNER);
    host.edit(
        "bin/plain",
        "bin/plain",
        "BIOS Version: 1.25.1.0",
        "BIOS Version: 1.11.9.0",
    );
    blocked_unchanged(&host, &["--device", "1"], "driver_too_old");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn another_vendors_mx_smi_blocks_with_mx_smi_unavailable() {
    common::require_root();
    let host = Host::new();
    host.write("bin/plain", OTHER_VENDOR);
    let document = blocked_unchanged(&host, &["--device", "1"], "mx_smi_unavailable");
    common::assert_detail(&document, "is not MetaX's");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_process_section_that_does_not_read_blocks_and_is_never_idle() {
    common::require_root();
    let host = Host::new();
    host.edit(
        "bin/plain",
        "bin/plain",
        "|  no process found                                                               |",
        "|  some text this reader does not know                                            |",
    );
    let line = host
        .read("bin/plain")
        .lines()
        .position(|line| line.contains("some text this reader"))
        .unwrap()
        + 1;
    let document = blocked_unchanged(&host, &["--device", "1"], "mx_smi_unavailable");
    common::assert_detail(&document, &format!("line {line}:"));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_absent_mx_smi_blocks_with_mx_smi_unavailable() {
    common::require_root();
    let host = Host::new();
    std::fs::remove_file(host.path("bin/mx-smi")).unwrap();
    let document = common::blocked(host.reset(&["--device", "1"]), "mx_smi_unavailable");
    common::assert_detail(&document, "does not exist");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_unknown_device_blocks_and_resets_nothing() {
    common::require_root();
    let host = Host::new();
    blocked_unchanged(&host, &["--device", "9"], "unknown_device");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_listing_without_gpu_rows_blocks_instead_of_finding_no_gpus() {
    common::require_root();
    let host = Host::new();
    host.write("bin/listing", "mx-smi  version: 2.2.9\n");
    blocked_unchanged(&host, &["--device", "all"], "mx_smi_unavailable");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_unreadable_kernel_log_blocks_in_the_preflight_and_changes_nothing() {
    common::require_root();
    let host = Host::new();
    std::fs::remove_file(host.path("bin/kmsg")).unwrap();
    let document = blocked_unchanged(&host, &["--device", "1"], "kernel_log_unreadable");
    common::assert_detail(&document, "bin/kmsg");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_dry_run_records_no_reset_call_and_names_the_group() {
    common::require_root();
    let host = Host::new();
    let document = common::dry_run(host.reset(&["--device", "5", "--dry-run"]));
    assert_eq!(document["gpus"], serde_json::json!(["0000:36:00.0"]));
    assert_eq!(document["group"], serde_json::json!([4, 5, 6, 7]));
    assert_nothing_changed(&host);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_topology_that_does_not_read_is_a_warning_and_the_group_stays_unknown() {
    common::require_root();
    let host = Host::new();
    host.write("bin/topo", "mx-smi: topo is not supported on this device\n");
    let document = common::done(host.reset(&["--device", "1"]));
    assert_eq!(document["group"], serde_json::Value::Null);
    let warnings = document["warnings"].to_string();
    assert!(warnings.contains("topology does not read"), "{warnings}");
    assert_eq!(host.calls(), ["(plain)", "-L", "topo -m", "-r -i 1", "-L"]);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_hung_reset_is_killed_at_the_windows_end_and_needs_a_cold_reboot() {
    common::require_root();
    let host = Host::in_mode("hang");
    let started = Instant::now();
    common::cold_reboot(
        host.reset(&["--device", "1", "--window", "1"]),
        "reset_hung",
    );
    // It was killed at the window's end, not before (how long after depends on the machine).
    assert!(started.elapsed() >= Duration::from_secs(1));
    let pid: u32 = host.read("bin/reset-pid").trim().parse().unwrap();
    assert!(!alive(pid), "mx-smi -r still running");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_reset_that_exits_1_needs_a_cold_reboot() {
    common::require_root();
    let host = Host::in_mode("error");
    let document = common::cold_reboot(host.reset(&["--device", "1"]), "reset_error");
    common::assert_detail(&document, "warm reset failed on GPU#1");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_reset_that_exits_0_but_says_it_failed_needs_a_cold_reboot() {
    common::require_root();
    let host = Host::in_mode("says-failed");
    let document = common::cold_reboot(host.reset(&["--device", "1"]), "reset_error");
    common::assert_detail(&document, "GPU#1: Reset Failed");
    assert_eq!(host.resets(), 1);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_gpu_missing_after_the_reset_needs_a_cold_reboot() {
    common::require_root();
    let host = Host::new();
    let listing: Vec<String> = host
        .read("bin/listing")
        .lines()
        .filter(|line| !line.starts_with("GPU#1 "))
        .map(|line| format!("{line}\n"))
        .collect();
    host.write("bin/listing-after", &listing.concat());
    let document = common::cold_reboot(
        host.reset(&["--device", "0", "--window", "2"]),
        "gpu_missing",
    );
    common::assert_detail(&document, "GPU#1 (0000:0f:00.0)");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_gpu_not_available_when_the_window_ends_needs_a_cold_reboot() {
    common::require_root();
    let host = Host::new();
    host.edit(
        "bin/listing",
        "bin/listing-after",
        "Available (UUID: GPU-5a1e2222-bcef-1502-e2db-752724095702)",
        "Not Available(hardware error)",
    );
    let started = Instant::now();
    let document = common::cold_reboot(
        host.reset(&["--device", "0", "--window", "2"]),
        "gpu_unavailable",
    );
    common::assert_detail(&document, "GPU#2 is Not Available(hardware error)");
    // It was polled until the window's end, not given up on at once.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn kernel_errors_after_the_reset_need_a_cold_reboot() {
    common::require_root();
    let host = Host::in_mode("kernel-errors");
    let document = common::cold_reboot(host.reset(&["--device", "1"]), "kernel_errors");
    common::assert_detail(&document, "fatal link error");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_metaxlink_that_does_not_come_back_needs_a_cold_reboot() {
    common::require_root();
    for (name, layout) in LAYOUTS {
        let host = Host::of(layout);
        // After the reset, GPU1 no longer reaches GPU2 by MetaXLink (both sides of the matrix).
        let topo = host.read("bin/topo");
        let lines: Vec<String> = topo
            .lines()
            .map(|line| {
                let mut words: Vec<&str> = line.split_whitespace().collect();
                match words.first() {
                    Some(&"GPU1") => words[3] = "SYS",
                    Some(&"GPU2") => words[2] = "SYS",
                    _ => return line.to_owned(),
                }
                words.join("    ")
            })
            .collect();
        host.write("bin/topo-after", &(lines.join("\n") + "\n"));
        let (code, document) = host.reset(&["--device", "1"]);
        assert_eq!(
            (code, outcome(&document)),
            (4, ("cold_reboot_required", "topology_wrong")),
            "{name}: {document}"
        );
        common::assert_detail(&document, "GPU#1-GPU#2");
        assert_eq!(host.resets(), 1);
    }
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn two_resets_started_at_once_issue_exactly_one_reset() {
    common::require_root();
    let host = Host::in_mode("slow1");
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
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_restart_after_sigkill_inside_the_window_issues_no_second_reset() {
    common::require_root();
    let host = Host::in_mode("slow3");
    let mut first = host.spawn(&["--device", "1", "--window", "30"]);
    let started = Instant::now();
    while host.resets() == 0 && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    common::blocked(
        host.reset(&["--device", "1", "--window", "30"]),
        "reset_in_flight",
    );
    assert_eq!(host.resets(), 1);
    // The orphaned mx-smi -r of the killed run finishes on its own; end it here.
    if let Ok(pid) = std::fs::read_to_string(host.path("bin/reset-pid")) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_text_output_shows_each_step_and_the_outcome() {
    common::require_root();
    let host = Host::new();
    let output = host
        .mxctl_configured(Path::new("/dev/null"))
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
            "preflight: tool, driver and versions",
            "preflight: target",
            "preflight: cold reboot pending",
            "preflight: in use",
            "preflight: kernel log",
            "resetting",
            "verifying",
            "checking the kernel log",
            "done",
        ]
    );
    assert!(text.contains("outcome: done\n"), "{text}");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn two_resets_of_the_same_gpu_at_once_reset_it_exactly_once() {
    common::require_root();
    let host = Host::in_mode("slow1");
    let outcomes = common::two_at_once(|| host.command(&["--device", "1"]));
    assert_eq!(host.resets(), 1, "{outcomes:?}");
}
