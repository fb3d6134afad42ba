//! `mxctl reset --method nvidia` against a fake `nvidia-smi` printing the published messages,
//! with the driver's files and fd links under a `<proc-root>`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::nvidia_host::NvidiaHost;

/// GPU 0 and its NVLink peer GPU 2, as `--gpu-reset -i` is given them.
const GROUP_OF_0: &str = "--gpu-reset -i 00000000:18:00.0,00000000:1A:00.0";

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_gpu_is_reset_once_with_its_nvlink_peer_in_the_same_command() {
    common::require_root();
    let host = NvidiaHost::new();
    let document = common::done(host.reset(&["--device", "0"]));
    assert_eq!(host.resets(), [GROUP_OF_0]);
    assert_eq!(document["group"], serde_json::json!([0, 2]));
    assert_eq!(
        document["verified"],
        serde_json::json!(["0000:18:00.0", "0000:1a:00.0"])
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_gpu_named_by_its_uuid_or_bus_id_is_the_same_gpu() {
    common::require_root();
    for id in ["GPU-737e2423-874a-23a4-1126-dfbe3e770001", "0000:19:00.0"] {
        let host = NvidiaHost::new();
        let (code, _) = host.reset(&["--device", id]);
        assert_eq!(code, 0, "{id}");
        assert_eq!(
            host.resets(),
            ["--gpu-reset -i 00000000:19:00.0,00000000:1B:00.0"],
            "{id}"
        );
    }
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_process_holding_the_peers_device_file_blocks_with_gpu_busy_naming_it() {
    common::require_root();
    let host = NvidiaHost::new();
    host.holder(5150, "nv-fabricmanager", "/dev/nvidia2");
    let document = common::blocked(host.reset(&["--device", "0"]), "gpu_busy");
    common::assert_detail(&document, "5150 nv-fabricmanager (/dev/nvidia2)");
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_compute_app_on_the_group_blocks_with_gpu_busy_naming_its_pid() {
    common::require_root();
    let host = NvidiaHost::new();
    host.write("bin/apps", "31415, 00000000:1A:00.0\n");
    let document = common::blocked(host.reset(&["--device", "0"]), "gpu_busy");
    common::assert_detail(&document, "31415");
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_published_busy_block_is_blocked_and_leaves_nothing_in_flight() {
    common::require_root();
    let host = NvidiaHost::in_mode("busy");
    let document = common::blocked(host.reset(&["--device", "0"]), "gpu_busy");
    common::assert_detail(&document, "In use by another client");
    assert_eq!(host.resets().len(), 1);
    host.no_reset_in_flight();
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn any_other_failure_of_the_reset_needs_a_cold_reboot() {
    common::require_root();
    let host = NvidiaHost::in_mode("error");
    let document = common::cold_reboot(host.reset(&["--device", "0"]), "reset_error");
    common::assert_detail(&document, "exited with code 3");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_hung_reset_is_killed_at_the_windows_end_and_needs_a_cold_reboot() {
    common::require_root();
    let host = NvidiaHost::in_mode("hang");
    // The hung command is killed at the window's end: reset_hung (were it not, the command
    // would run on and the verdict would be another).
    common::cold_reboot(
        host.reset(&["--device", "0", "--window", "2"]),
        "reset_hung",
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_peer_gone_after_the_reset_is_gpu_missing() {
    common::require_root();
    let host = NvidiaHost::new();
    let gpus = std::fs::read_to_string(host.path("bin/gpus")).unwrap();
    let after: String = gpus
        .lines()
        .filter(|l| !l.starts_with("2,"))
        .map(|l| format!("{l}\n"))
        .collect();
    host.write("bin/gpus-after", &after);
    let document = common::cold_reboot(
        host.reset(&["--device", "0", "--window", "2"]),
        "gpu_missing",
    );
    common::assert_detail(&document, "00000000:1A:00.0");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_kernel_giving_up_on_a_gpu_of_the_group_is_kernel_errors() {
    common::require_root();
    let host = NvidiaHost::in_mode("kernel-errors");
    let document = common::cold_reboot(host.reset(&["--device", "0"]), "kernel_errors");
    common::assert_detail(&document, "giving up");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_dry_run_resets_nothing_and_names_the_group() {
    common::require_root();
    let host = NvidiaHost::new();
    let document = common::dry_run(host.reset(&["--device", "0", "--dry-run"]));
    assert_eq!(document["group"], serde_json::json!([0, 2]));
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_topology_that_does_not_read_blocks_because_the_peers_are_unknown() {
    common::require_root();
    let host = NvidiaHost::new();
    host.write("bin/topo", "GPU0 GPU1\nGPU0 X\n");
    common::blocked(host.reset(&["--device", "0"]), "nvidia_smi_unavailable");
    assert!(host.resets().is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn two_resets_of_the_same_gpu_at_once_reset_it_exactly_once() {
    common::require_root();
    let host = NvidiaHost::in_mode("slow");
    let outcomes = common::two_at_once(|| host.command(&["--device", "0"]));
    assert_eq!(host.resets().len(), 1, "{outcomes:?}");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_reset_whose_nvlink_peer_is_not_ours_is_blocked_and_resets_nothing() {
    use host_sync::StateStore;
    common::require_root();
    let host = NvidiaHost::new();
    // GPU 2, GPU 0's NVLink peer, is an allocator's.
    let mut state = host_sync::HostState::default();
    state.ownership.insert(
        "0000:1a:00.0".parse().unwrap(),
        gpu_host_probe::Ownership::Dynamic,
    );
    host_sync::FileStore::new(host.path("state"))
        .save(&state)
        .unwrap();
    let (code, document) = host.reset(&["--device", "0"]);
    assert_eq!(
        (code, &document["reason"]),
        (3, &serde_json::Value::from("gpu_not_ours")),
        "{document}"
    );
    assert!(
        document["detail"]
            .as_str()
            .unwrap()
            .contains("0000:1a:00.0"),
        "{document}"
    );
    assert!(host.resets().is_empty(), "{:?}", host.resets());
}
