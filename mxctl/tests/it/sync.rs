//! `mxctl sync` and `mxctl status` end to end: built sysfs trees, fake helpers, a state
//! directory of the test's own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use gpu_host_probe::test_util::Act;

use common::sync_host::{CARVED, NO_MIG, NONE_CARVED, ON_PENDING, SyncHost as Host};
use std::process::Command;
use std::time::{Duration, Instant};

fn four_nvidia_gpus(host: &Host) {
    for bus in 1..=4 {
        host.sysfs
            .nvidia(&format!("0000:0{bus}:00.0"), Some("nvidia"))
            .unwrap();
    }
}

#[test]
fn a_host_without_gpu_is_inactive_with_no_partitionable_gpu() {
    let host = Host::new();
    host.sysfs
        .function(
            "0000:00:03.0",
            "0x1af4",
            "0x1000",
            "0x020000",
            Some("virtio-pci"),
        )
        .unwrap();
    let (code, sync) = host.run(&["sync", "--pool", "enabled"]);
    assert_eq!(code, 0);
    insta::assert_json_snapshot!("no_gpu_sync", redacted(&sync));
    let (_, status) = host.run(&["status"]);
    insta::assert_json_snapshot!("no_gpu_status", redacted(&status));
}

#[test]
fn an_nvidia_gpu_with_the_pool_off_is_pool_disabled_and_not_in_use() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let (_, sync) = host.run(&["sync"]);
    insta::assert_json_snapshot!("pool_off_sync", redacted(&sync));
}

#[test]
fn with_the_pool_on_gpus_are_read_or_not_checked_by_design() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    host.sysfs.nvidia("0000:3c:00.0", Some("vfio-pci")).unwrap();
    host.sysfs
        .function(
            "0000:3d:00.0",
            "0x1002",
            "0x73bf",
            "0x030000",
            Some("amdgpu"),
        )
        .unwrap();
    host.sysfs
        .virtual_function("0000:3b:00.4", "0000:3b:00.0", Some("nvidia"))
        .unwrap();
    let helper = host.nvml_helper(&["0000:3b:00.0"]);
    let (_, sync) = host.sync_enabled(&helper);
    insta::assert_json_snapshot!("pool_on_sync", redacted(&sync));
    let (_, status) = host.run(&["status"]);
    insta::assert_json_snapshot!("pool_on_status", redacted(&status));
}

#[test]
fn with_the_helper_absent_the_host_is_helper_unavailable() {
    let host = Host::new();
    four_nvidia_gpus(&host);
    let (_, sync) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        "/nonexistent/helper",
    ]);
    insta::assert_json_snapshot!("helper_absent_sync", redacted(&sync));
}

#[test]
fn a_helper_hanging_on_one_card_of_four_costs_that_card_only() {
    let host = Host::new();
    four_nvidia_gpus(&host);
    let helper = host.helper(|h| h.on("0000:03:00.0", Act::Hang));
    // The hung card times out on its own deadline while the others read: the snapshot holds
    // the three cards read and the one `timeout` (no bound on the wall time: a slow machine
    // only makes it longer).
    let (_, sync) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--deadline",
        "0.5",
        "--helper",
        helper.to_str().unwrap(),
    ]);
    insta::assert_json_snapshot!("one_hung_card_sync", redacted(&sync));
}

#[test]
fn the_text_output_follows_the_xe_habits() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let output = host
        .mxctl_configured(std::path::Path::new("/dev/null"))
        .arg("sync")
        .output()
        .unwrap();
    insta::assert_snapshot!("pool_off_text", String::from_utf8(output.stdout).unwrap());
}

#[test]
fn status_before_any_sync_is_not_reported() {
    let host = Host::new();
    let (code, status) = host.run(&["status"]);
    assert_eq!(code, 0);
    assert_eq!(
        status,
        serde_json::json!({"status": "not_reported", "reason": "", "message": null, "synced_at": null, "gpus": [], "layout": null, "declared": null, "lost": null})
    );
}

#[test]
fn only_the_first_sync_of_a_boot_is_after_boot() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let after_boot = |host: &Host| host.run(&["sync"]).1["after_boot"].clone();
    assert_eq!(after_boot(&host), true);
    assert_eq!(after_boot(&host), false);
    host.reboot();
    assert_eq!(after_boot(&host), true);
}

#[test]
fn turning_the_pool_off_over_a_divided_gpu_is_leaving_and_survives_a_reboot() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let helper = host.nvml_helper(&["0000:3b:00.0"]);
    host.sync_enabled(&helper);
    let (_, off) = host.run(&["sync", "--pool", "disabled"]);
    assert_eq!(
        (off["status"].as_str(), off["reason"].as_str()),
        (Some("leaving"), Some("gpus_still_divided"))
    );
    host.reboot();
    let (_, rebooted) = host.run(&["sync", "--pool", "disabled"]);
    assert_eq!(rebooted["gpus"][0]["partition_mode"], "enabled");
}

#[test]
fn a_failed_read_over_a_divided_gpu_is_possibly_enabled() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let good = host.nvml_helper(&["0000:3b:00.0"]);
    host.sync_enabled(&good);
    let busy = host.helper(|h| h.every_read(Act::Exit(75)));
    let (_, sync) = host.sync_enabled(&busy);
    assert_eq!(sync["gpus"][0]["partition_mode"], "possibly_enabled");
    assert_eq!(sync["gpus"][0]["reason"], "busy");
}

#[test]
fn a_corrupt_state_file_is_kept_aside_and_every_sync_and_status_after_says_the_state_was_lost() {
    let host = Host::new();
    std::fs::create_dir_all(host.path("state")).unwrap();
    let torn = "{\"schema\": 2, \"status\": \"inactive\", \"rea";
    std::fs::write(host.path("state/state.json"), torn).unwrap();
    let (code, first) = host.run(&["sync"]);
    assert_eq!(code, 0, "{first}");
    assert_eq!(
        (first["status"].as_str(), first["reason"].as_str()),
        (Some("inactive"), Some("state_lost"))
    );
    let message = first["message"].as_str().unwrap();
    assert!(message.contains("kept aside as"), "{message}");
    let warnings = first["warnings"].to_string();
    assert!(warnings.contains("did not read"), "{warnings}");
    let kept: Vec<_> = std::fs::read_dir(host.path("state"))
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("state.json.corrupt-")
        })
        .collect();
    assert_eq!(kept.len(), 1);
    assert!(
        message.contains(&kept[0].path().display().to_string()),
        "{message}"
    );
    assert_eq!(std::fs::read_to_string(kept[0].path()).unwrap(), torn);
    // Not only the first: every later sync, and the status, still say it.
    let (_, second) = host.run(&["sync"]);
    assert_eq!(second["reason"], "state_lost", "{second}");
    let (_, status) = host.run(&["status"]);
    assert_eq!(status["reason"], "state_lost", "{status}");
    assert!(status["lost"]["kept"].as_str().is_some(), "{status}");
}

#[test]
fn status_reports_a_corrupt_state_file_and_leaves_it_where_it_is() {
    let host = Host::new();
    std::fs::create_dir_all(host.path("state")).unwrap();
    std::fs::write(host.path("state/state.json"), "{\"schema\": 1,").unwrap();
    let (code, document) = host.run(&["status"]);
    assert_eq!(
        (code, document["error"]["kind"].as_str()),
        (1, Some("state"))
    );
    assert!(
        document["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not read")
    );
    assert_eq!(
        std::fs::read_to_string(host.path("state/state.json")).unwrap(),
        "{\"schema\": 1,"
    );
    assert_eq!(std::fs::read_dir(host.path("state")).unwrap().count(), 1);
}

#[test]
fn a_state_file_of_a_later_schema_is_refused_naming_both_schemas_and_left_byte_for_byte() {
    let host = Host::new();
    std::fs::create_dir_all(host.path("state")).unwrap();
    let (this, next) = (host_sync::SCHEMA, host_sync::SCHEMA + 1);
    let later =
        format!(r#"{{"schema": {next}, "status": "merged", "declared": {{"label": "x"}}}}"#);
    std::fs::write(host.path("state/state.json"), &later).unwrap();
    for command in [&["status"][..], &["sync"][..]] {
        let (code, document) = host.run(command);
        assert_eq!(code, 1, "{command:?}");
        let message = document["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("schema {next}"))
                && message.contains(&format!("schema {this}")),
            "{message}"
        );
        assert_eq!(
            std::fs::read_to_string(host.path("state/state.json")).unwrap(),
            later
        );
    }
    assert_eq!(
        std::fs::read_dir(host.path("state"))
            .unwrap()
            .filter(|e| e
                .as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("state")))
            .count(),
        1
    );
}

#[test]
fn two_syncs_at_once_never_interleave_their_reads_and_writes() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let log = host.path("log");
    let helper = host.helper(|h| {
        h.every_read(Act::Shell(format!(
            "echo begin >> {log}; sleep 0.3; echo end >> {log}",
            log = log.display()
        )))
    });
    let spawn = || {
        host.command(&[
            "sync",
            "--pool",
            "enabled",
            "--helper",
            helper.to_str().unwrap(),
        ])
        .spawn()
        .unwrap()
    };
    let (mut first, mut second) = (spawn(), spawn());
    assert!(first.wait().unwrap().success());
    assert!(second.wait().unwrap().success());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "begin\nend\nbegin\nend\n"
    );
}

#[test]
fn a_sync_with_a_shorter_lock_wait_says_busy_after_it() {
    let host = Host::new();
    let _held = host.hold_lock();
    let started = Instant::now();
    let (code, document) = host.run(&["sync", "--lock-wait", "0.5"]);
    assert_eq!(code, 1);
    assert_eq!(document["error"]["kind"], "lock_busy");
    assert!(started.elapsed() >= Duration::from_millis(500));
}

#[test]
fn a_sync_with_a_lock_wait_runs_once_the_holder_lets_go() {
    let host = Host::new();
    let held = host.hold_lock();
    // Held for a while, as a warm reset's window holds it (that `--lock-wait` replaces the
    // default bound is the rule `mxctl::commands::sync` tests without waiting for it).
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(held);
    });
    let started = Instant::now();
    let (code, document) = host.run(&["sync", "--lock-wait", "3600"]);
    holder.join().unwrap();
    assert_eq!(code, 0, "{document:#}");
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_eq!(document["status"], "inactive");
}

#[test]
fn probe_without_devices_reads_every_nvidia_gpu_bound_to_nvidia() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    host.sysfs.nvidia("0000:3c:00.0", Some("vfio-pci")).unwrap();
    let helper = host.nvml_helper(&["0000:3b:00.0"]);
    let (_, probe) = host.run(&["probe", "--helper", helper.to_str().unwrap()]);
    let devices = common::field_of_each(&probe["gpus"], "device");
    assert_eq!(devices, ["0000:3b:00.0"]);
}

/// Whether the real sysfs of this machine has an NVIDIA display-class function, read here
/// without the code under test.
fn real_host_has_nvidia_gpu() -> bool {
    std::fs::read_dir("/sys/bus/pci/devices")
        .map(|entries| {
            entries.filter_map(Result::ok).any(|entry| {
                let read = |name: &str| {
                    std::fs::read_to_string(entry.path().join(name)).unwrap_or_default()
                };
                read("vendor").trim() == "0x10de" && read("class").trim().starts_with("0x03")
            })
        })
        .unwrap_or(false)
}

#[test]
fn sync_and_status_on_this_machines_real_sysfs_tell_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
            .args(["--config", "/dev/null", "--json", "--state-dir"])
            .arg(dir.path())
            // The test's own directory of locks, named as the machine's: nothing is left among
            // the machine's own, and this sync (the pool off) writes to no card.
            .arg("--machine-lock-dir")
            .arg(dir.path().join("locks"))
            .args(args)
            .output()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };
    let expected = if real_host_has_nvidia_gpu() {
        "pool_disabled"
    } else {
        "no_partitionable_gpu"
    };
    let sync = run(&["sync"]);
    assert_eq!(
        (sync["status"].as_str(), sync["reason"].as_str()),
        (Some("inactive"), Some(expected))
    );
    let status = run(&["status"]);
    assert_eq!(
        (status["status"].as_str(), status["reason"].as_str()),
        (Some("inactive"), Some(expected))
    );
}

/// A server with Intel VMD: an NVMe drive in domain `10000`, a GPU (and its HDMI audio function)
/// in domain `0001`, and a virtual function that vanished while the host was scanned.
fn vmd_server(host: &Host) {
    host.sysfs
        .function(
            "10000:e1:00.0",
            "0x8086",
            "0x0a54",
            "0x010802",
            Some("nvme"),
        )
        .unwrap();
    host.sysfs.nvidia("0001:81:00.0", Some("nvidia")).unwrap();
    host.sysfs
        .function(
            "0001:81:00.1",
            "0x10de",
            "0x22ba",
            "0x040300",
            Some("snd_hda_intel"),
        )
        .unwrap();
    host.sysfs.vanished("0001:81:00.4").unwrap();
}

#[test]
fn gpus_on_a_vmd_server_lists_the_gpu_and_names_the_vanished_entry_in_a_warning() {
    let host = Host::new();
    vmd_server(&host);
    let output = common::succeeded(&mut host.command(&["gpus"]));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let devices = common::field_of_each(&document["gpus"], "device");
    assert_eq!(devices, ["0001:81:00.0"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("0001:81:00.4"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("WARN") && warnings[0].contains("skipped"),
        "{stderr}"
    );
}

#[test]
fn sync_on_a_vmd_server_keeps_the_gpu_by_its_address() {
    let host = Host::new();
    vmd_server(&host);
    host.sysfs
        .function(
            "10000:e0:00.0",
            "0x1b36",
            "0x000d",
            "0x030000",
            Some("bochs-drm"),
        )
        .unwrap();
    let helper = host.helper(|h| h);
    let sync = host.synced(&helper);
    let gpus = common::fields_of_each(&sync["gpus"], ["device", "partition_mode"]);
    assert_eq!(
        gpus,
        [
            ["0001:81:00.0", "enabled"],
            ["10000:e0:00.0", "not_checked"]
        ]
    );
    let state = std::fs::read_to_string(host.path("state/state.json")).unwrap();
    assert!(state.contains("\"10000:e0:00.0\""), "{state}");
    let (_, status) = host.run(&["status"]);
    assert_eq!(status["gpus"][1]["device"], "10000:e0:00.0");
}

#[test]
fn sync_with_the_pool_on_reads_each_card_through_the_real_helper_and_nvml() {
    let host = Host::new();
    for bdf in [
        "0000:3b:00.0",
        "0000:3c:00.0",
        "0000:3d:00.0",
        "0000:3e:00.0",
    ] {
        host.sysfs.nvidia(bdf, Some("nvidia")).unwrap();
    }
    host.sysfs.nvidia("0000:3f:00.0", Some("vfio-pci")).unwrap();
    let helper = host.nvml_helper_of(&[
        ("00000000:3B:00.0", CARVED),
        ("0000:3c:00.0", NONE_CARVED),
        ("00000000:3D:00.0", ON_PENDING),
        ("0000:3e:00.0", NO_MIG),
    ]);
    let sync = host.synced(&helper);
    let modes = common::fields_of_each(&sync["gpus"], ["device", "partition_mode", "reason"]);
    assert_eq!(
        modes,
        [
            ["0000:3b:00.0", "enabled", ""],
            ["0000:3c:00.0", "enabled", ""],
            ["0000:3d:00.0", "enable_on_reboot", ""],
            ["0000:3e:00.0", "not_supported", ""],
            ["0000:3f:00.0", "not_checked", "driver_vfio_pci"],
        ]
    );
    // One card waits for its reboot: the host is on its way in.
    assert_eq!(
        (sync["status"].as_str(), sync["reason"].as_str()),
        (Some("entering"), Some("gpus_pending"))
    );
}

/// A document whose messages name a test's temporary files, made stable for a snapshot (and
/// the time of the last sync, when it has one, replaced by its presence).
fn redacted(document: &serde_json::Value) -> serde_json::Value {
    let text = gpu_host_probe::test_util::redact_temp_dirs(&document.to_string());
    let mut document: serde_json::Value = serde_json::from_str(&text).unwrap();
    if let Some(at) = document.get_mut("synced_at").filter(|at| at.is_u64()) {
        *at = serde_json::json!("[unix time]");
    }
    document
}
