//! `mxctl reset --method amd` on a hive of eight MI300X in a built sysfs tree, against a fake
//! `amd-smi` printing the published listing layout: one GPU named resets the hive together, and
//! the whole hive is verified.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use common::ended;

use common::amd_host::{AmdHost, GPUS, LISTING_2GPU};

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn one_gpu_of_a_hive_of_eight_resets_the_hive_together_once_and_verifies_every_gpu() {
    common::require_root();
    let host = AmdHost::new();
    let document = common::done(host.reset(&["--device", GPUS[1]]));
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
    let document = common::done(host.reset(&["--device", "1"]));
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
    let document = common::blocked(host.reset(&["--device", GPUS[0]]), "gpu_busy");
    common::assert_detail(&document, "31415 python3 (/dev/kfd)");
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_process_holding_a_hive_peers_render_node_blocks_with_group_in_use_naming_it() {
    common::require_root();
    let host = AmdHost::new();
    host.holder(2718, "amd-metrics-exp", "/dev/dri/renderD133");
    let document = common::blocked(host.reset(&["--device", GPUS[0]]), "group_in_use");
    common::assert_detail(&document, "2718 amd-metrics-exp (/dev/dri/renderD133)");
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn amd_smi_saying_it_was_unable_with_exit_0_needs_a_cold_reboot() {
    common::require_root();
    let host = AmdHost::in_mode("unable");
    let document = common::cold_reboot(host.reset(&["--device", GPUS[0]]), "reset_error");
    common::assert_detail(&document, "Unable to reset GPU");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_amd_smi_error_needs_a_cold_reboot_quoting_it() {
    common::require_root();
    let host = AmdHost::in_mode("error");
    let document = common::cold_reboot(host.reset(&["--device", GPUS[0]]), "reset_error");
    common::assert_detail(&document, "AMDSMI_STATUS_BUSY");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_gpu_of_the_hive_that_does_not_come_back_needs_a_cold_reboot_naming_it() {
    common::require_root();
    let host = AmdHost::in_mode("driver-lost");
    let document = common::cold_reboot(
        host.reset(&["--device", GPUS[0], "--window", "2"]),
        "gpu_unavailable",
    );
    common::assert_detail(&document, "0000:65:00.0 is bound to no driver");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_hung_reset_is_killed_at_the_windows_end_and_needs_a_cold_reboot() {
    common::require_root();
    let host = AmdHost::in_mode("hang");
    common::cold_reboot(
        host.reset(&["--device", GPUS[0], "--window", "2"]),
        "reset_hung",
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn amdgpu_saying_the_reset_of_a_hive_gpu_failed_is_kernel_errors() {
    common::require_root();
    let host = AmdHost::in_mode("kernel-errors");
    let document = common::cold_reboot(host.reset(&["--device", GPUS[0]]), "kernel_errors");
    common::assert_detail(&document, "0000:46:00.0: amdgpu: GPU reset(1) failed");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_dry_run_names_the_hive_and_resets_nothing() {
    common::require_root();
    let host = AmdHost::new();
    let document = common::dry_run(host.reset(&["--device", GPUS[0], "--dry-run"]));
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
    common::done(common::run_json(command));
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
    common::blocked(common::run_json(absent), "amd_smi_unavailable");
}

#[test]
fn a_simulated_hive_of_eight_is_reset_together_and_verified() {
    let host = AmdHost::new();
    let document = common::done(common::run_json(host.mxctl(&[
        "reset",
        "--method",
        "amd",
        "--simulate",
        "ok",
        "--device",
        "0",
    ])));
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
    let names = common::field_of_each(&document["scenarios"], "name");
    for scenario in ["ok", "no-hive", "peer-busy", "stays-in-reset", "no-amd-smi"] {
        assert!(names.contains(&scenario), "{document}");
    }
    assert!(host.resets().is_empty(), "a listing runs no amd-smi");
}
