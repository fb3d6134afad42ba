//! `mxctl reset --method pci` against a built sysfs tree whose `reset` file is a FIFO the test
//! serves, a `<proc-root>` with fd links, and a kernel log file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::pci_host::{AUDIO, GPU, PciHost};
use std::time::Duration;

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_function_on_vfio_is_reset_once_and_reads_its_ids_again() {
    common::require_root();
    let host = PciHost::new();
    let served = host.serve(|| {});
    let document = common::done(host.reset(&["--device", GPU]));
    assert_eq!(served.finish(), (1, 1));
    assert_eq!(document["verified"], serde_json::json!([GPU]));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_process_holding_the_vfio_group_blocks_with_gpu_busy_naming_it() {
    common::require_root();
    let host = PciHost::new();
    host.holder(4242, "qemu-system-x86", "/dev/vfio/12");
    let watched = host.never_serve();
    let document = common::blocked(host.reset(&["--device", GPU]), "gpu_busy");
    common::assert_detail(&document, "4242 qemu-system-x86 (/dev/vfio/12)");
    assert_eq!(watched.finish(), (0, 0));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_host_driver_bound_blocks_with_driver_in_use_naming_it() {
    common::require_root();
    let host = PciHost::new();
    host.bind(GPU, "nvidia");
    let watched = host.never_serve();
    let document = common::blocked(host.reset(&["--device", GPU]), "driver_in_use");
    common::assert_detail(&document, "nvidia");
    assert_eq!(watched.finish(), (0, 0));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_bus_reset_with_an_active_sibling_blocks_with_group_in_use_naming_it() {
    common::require_root();
    let host = PciHost::new();
    host.set_methods(GPU, "bus");
    host.bind(AUDIO, "snd_hda_intel");
    let watched = host.never_serve();
    let document = common::blocked(host.reset(&["--device", GPU]), "group_in_use");
    common::assert_detail(&document, AUDIO);
    common::assert_detail(&document, "snd_hda_intel");
    assert_eq!(watched.finish(), (0, 0));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_bus_reset_verifies_every_function_of_the_bus() {
    common::require_root();
    let host = PciHost::new();
    host.set_methods(GPU, "bus");
    let served = host.serve(|| {});
    let document = common::done(host.reset(&["--device", GPU]));
    assert_eq!(document["verified"], serde_json::json!([GPU, AUDIO]));
    assert_eq!(served.finish().0, 1);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn no_reset_method_blocks_with_reset_unsupported() {
    common::require_root();
    let host = PciHost::new();
    host.set_methods(GPU, "");
    common::blocked(host.reset(&["--device", GPU]), "reset_unsupported");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_write_still_blocked_at_the_windows_end_is_killed_and_needs_a_cold_reboot() {
    common::require_root();
    let host = PciHost::new();
    let watched = host.never_serve();
    common::cold_reboot(
        host.reset(&["--device", GPU, "--window", "2"]),
        "reset_hung",
    );
    assert_eq!(watched.finish(), (0, 1));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_function_that_reads_0xffff_after_the_reset_is_gpu_missing() {
    common::require_root();
    let host = PciHost::new();
    let vendor = host.sysfs.device_dir(GPU).join("vendor");
    let served = host.serve(move || std::fs::write(&vendor, "0xffff\n").unwrap());
    let document = common::cold_reboot(
        host.reset(&["--device", GPU, "--window", "2"]),
        "gpu_missing",
    );
    common::assert_detail(&document, "0xffff");
    assert_eq!(served.finish().0, 1);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_function_gone_after_the_reset_is_gpu_missing() {
    common::require_root();
    let host = PciHost::new();
    let link = host.sysfs.root().join("bus/pci/devices").join(GPU);
    let served = host.serve(move || std::fs::remove_file(&link).unwrap());
    let document = common::cold_reboot(
        host.reset(&["--device", GPU, "--window", "2"]),
        "gpu_missing",
    );
    common::assert_detail(&document, "is gone");
    assert_eq!(served.finish().0, 1);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_kernel_giving_up_on_the_function_at_warning_level_is_kernel_errors() {
    common::require_root();
    let host = PciHost::new();
    let kmsg = host.path("kmsg");
    let served = host.serve(move || {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&kmsg)
            .unwrap();
        file.write_all(
            b"4,90,5000,-;vfio-pci 0000:3b:00.0: not ready 65535ms after FLR; giving up\n",
        )
        .unwrap();
    });
    let document = common::cold_reboot(host.reset(&["--device", GPU]), "kernel_errors");
    common::assert_detail(&document, "giving up");
    assert_eq!(served.finish().0, 1);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_dry_run_writes_nothing_to_reset() {
    common::require_root();
    let host = PciHost::new();
    let watched = host.never_serve();
    common::dry_run(host.reset(&["--device", GPU, "--dry-run"]));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(watched.finish(), (0, 0));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn two_resets_of_the_same_function_at_once_reset_it_exactly_once() {
    common::require_root();
    let host = PciHost::new();
    let served = host.serve(|| std::thread::sleep(Duration::from_millis(500)));
    let outcomes = common::two_at_once(|| host.command(&["--device", GPU]));
    assert_eq!(served.finish().0, 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .any(|o| o.contains("lock_busy") || o.contains("reset_in_flight")),
        "{outcomes:?}"
    );
}
