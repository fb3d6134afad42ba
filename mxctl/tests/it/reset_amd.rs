//! `mxctl reset --method amd` on a hive of eight MI300X in a built sysfs tree, against a fake
//! `amd-smi` printing the published listing layout: one GPU named resets the hive together, and
//! the whole hive is verified.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use common::{detail, ended};

use common::amd_host::{AmdHost, GPUS, LISTING_2GPU};

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn one_gpu_of_a_hive_of_eight_resets_the_hive_together_once_and_verifies_every_gpu() {
    common::require_root();
    let host = AmdHost::new();
    let (code, document) = host.reset(&["--device", GPUS[1]]);
    assert_eq!((code, ended(&document)), (0, ("done", "")), "{document}");
    assert_eq!(host.resets(), ["reset --gpureset --gpu 0000:26:00.0"]);
    assert_eq!(document["gpus"], serde_json::json!([GPUS[1]]));
    assert_eq!(document["verified"], serde_json::json!(GPUS));
    let warnings = document["warnings"].to_string();
    assert!(
        warnings.contains("the kernel resets the XGMI hive together") && warnings.contains(GPUS[7]),
        "{document}"
    );
    host.no_reset_in_flight();
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_amd_smi_gpu_id_is_read_from_the_published_listing() {
    common::require_root();
    let host = AmdHost::with_gpus(&["0000:23:00.0", "0000:26:00.0"]);
    host.write("bin/list", LISTING_2GPU);
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!((code, ended(&document)), (0, ("done", "")), "{document}");
    assert_eq!(host.resets(), ["reset --gpureset --gpu 0000:26:00.0"]);
    assert_eq!(
        document["verified"],
        serde_json::json!(["0000:23:00.0", "0000:26:00.0"])
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_process_holding_kfd_blocks_with_gpu_busy_naming_it() {
    common::require_root();
    let host = AmdHost::new();
    host.holder(31415, "python3", "/dev/kfd");
    let (code, document) = host.reset(&["--device", GPUS[0]]);
    assert_eq!((code, ended(&document)), (3, ("blocked", "gpu_busy")));
    assert!(
        detail(&document).contains("31415 python3 (/dev/kfd)"),
        "{document}"
    );
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_process_holding_a_hive_peers_render_node_blocks_with_group_in_use_naming_it() {
    common::require_root();
    let host = AmdHost::new();
    host.holder(2718, "amd-metrics-exp", "/dev/dri/renderD133");
    let (code, document) = host.reset(&["--device", GPUS[0]]);
    assert_eq!((code, ended(&document)), (3, ("blocked", "group_in_use")));
    assert!(
        detail(&document).contains("2718 amd-metrics-exp (/dev/dri/renderD133)"),
        "{document}"
    );
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn amd_smi_saying_it_was_unable_with_exit_0_needs_a_cold_reboot() {
    common::require_root();
    let host = AmdHost::new();
    host.write("bin/reset-mode", "unable");
    let (code, document) = host.reset(&["--device", GPUS[0]]);
    assert_eq!(
        (code, ended(&document)),
        (4, ("cold_reboot_required", "reset_error"))
    );
    assert!(
        detail(&document).contains("Unable to reset GPU"),
        "{document}"
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_amd_smi_error_needs_a_cold_reboot_quoting_it() {
    common::require_root();
    let host = AmdHost::new();
    host.write("bin/reset-mode", "error");
    let (code, document) = host.reset(&["--device", GPUS[0]]);
    assert_eq!(
        (code, ended(&document)),
        (4, ("cold_reboot_required", "reset_error"))
    );
    assert!(
        detail(&document).contains("AMDSMI_STATUS_BUSY"),
        "{document}"
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_gpu_of_the_hive_that_does_not_come_back_needs_a_cold_reboot_naming_it() {
    common::require_root();
    let host = AmdHost::new();
    host.write("bin/reset-mode", "driver-lost");
    let (code, document) = host.reset(&["--device", GPUS[0], "--window", "2"]);
    assert_eq!(
        (code, ended(&document)),
        (4, ("cold_reboot_required", "gpu_unavailable"))
    );
    assert!(
        detail(&document).contains("0000:65:00.0 is bound to no driver"),
        "{document}"
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_hung_reset_is_killed_at_the_windows_end_and_needs_a_cold_reboot() {
    common::require_root();
    let host = AmdHost::new();
    host.write("bin/reset-mode", "hang");
    let (code, document) = host.reset(&["--device", GPUS[0], "--window", "2"]);
    assert_eq!(
        (code, ended(&document)),
        (4, ("cold_reboot_required", "reset_hung"))
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn amdgpu_saying_the_reset_of_a_hive_gpu_failed_is_kernel_errors() {
    common::require_root();
    let host = AmdHost::new();
    host.write("bin/reset-mode", "kernel-errors");
    let (code, document) = host.reset(&["--device", GPUS[0]]);
    assert_eq!(
        (code, ended(&document)),
        (4, ("cold_reboot_required", "kernel_errors"))
    );
    assert!(
        detail(&document).contains("0000:46:00.0: amdgpu: GPU reset(1) failed"),
        "{document}"
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_dry_run_names_the_hive_and_resets_nothing() {
    common::require_root();
    let host = AmdHost::new();
    let (code, document) = host.reset(&["--device", GPUS[0], "--dry-run"]);
    assert_eq!((code, ended(&document)), (0, ("dry_run", "")), "{document}");
    assert_eq!(document["verified"], serde_json::json!(GPUS));
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_id_that_names_no_amd_gpu_is_unknown_device() {
    common::require_root();
    let host = AmdHost::new();
    for id in ["0000:3b:00.0", "9"] {
        let (code, document) = host.reset(&["--device", id]);
        assert_eq!(
            (code, ended(&document)),
            (3, ("blocked", "unknown_device")),
            "{id}"
        );
    }
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_amd_smi_of_the_config_is_used_and_an_absent_one_is_amd_smi_unavailable() {
    common::require_root();
    let host = AmdHost::new();
    host.write(
        "mxctl.conf",
        &format!("amd-smi = {}\n", host.path("bin/amd-smi").display()),
    );
    let mut command = host.mxctl_configured(&host.path("mxctl.conf"));
    command
        .args(["--json", "reset", "--method", "amd", "--kmsg"])
        .arg(host.path("kmsg"))
        .args(["--device", GPUS[0]]);
    let (code, document) = common::run_json(command);
    assert_eq!((code, ended(&document)), (0, ("done", "")), "{document}");
    assert_eq!(host.resets().len(), 1);
    let mut absent = host.mxctl(&[
        "reset",
        "--method",
        "amd",
        "--amd-smi",
        "/nonexistent/amd-smi",
    ]);
    absent
        .arg("--kmsg")
        .arg(host.path("kmsg"))
        .args(["--device", GPUS[0]]);
    let (code, document) = common::run_json(absent);
    assert_eq!(
        (code, ended(&document)),
        (3, ("blocked", "amd_smi_unavailable")),
        "{document}"
    );
}

#[test]
fn a_simulated_hive_of_eight_is_reset_together_and_verified() {
    let host = AmdHost::new();
    let (code, document) = common::run_json(host.mxctl(&[
        "reset",
        "--method",
        "amd",
        "--simulate",
        "ok",
        "--device",
        "0",
    ]));
    assert_eq!((code, ended(&document)), (0, ("done", "")), "{document}");
    assert_eq!(document["verified"].as_array().map(Vec::len), Some(8));
    assert!(host.resets().is_empty(), "a simulation runs no amd-smi");
}

#[test]
fn the_simulated_scenarios_of_the_amd_method_are_listed_as_json_and_nothing_is_reset() {
    let host = AmdHost::new();
    let (code, document) = common::run_json(host.mxctl(&[
        "reset",
        "--method",
        "amd",
        "--simulate",
        "help",
        "--device",
        "0",
    ]));
    assert_eq!(code, 0, "{document}");
    assert_eq!(document["method"], "amd", "{document}");
    let names: Vec<&str> = document["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|scenario| scenario["name"].as_str().unwrap())
        .collect();
    for scenario in ["ok", "no-hive", "peer-busy", "stays-in-reset", "no-amd-smi"] {
        assert!(names.contains(&scenario), "{document}");
    }
    assert!(host.resets().is_empty(), "a listing runs no amd-smi");
}
