//! `mxctl sync` and `mxctl status` end to end: built sysfs trees, fake helpers, a state
//! directory of the test's own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::support;
use host_sync::fake_sysfs::FakeSysfs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// NVML scenarios of the helper's tests (A100-SXM4-40GB, the real profile table).
const CARVED: &str =
    include_str!("../../gpu-partition-helper/tests/nvml-scenarios/a100-mig-on-carved.json");
const NONE_CARVED: &str =
    include_str!("../../gpu-partition-helper/tests/nvml-scenarios/a100-mig-on-none-carved.json");
const ON_PENDING: &str =
    include_str!("../../gpu-partition-helper/tests/nvml-scenarios/a100-mig-off-on-pending.json");
const NO_MIG: &str =
    include_str!("../../gpu-partition-helper/tests/nvml-scenarios/l40s-no-mig.json");

struct Host {
    dir: tempfile::TempDir,
    sysfs: FakeSysfs,
}

impl Host {
    fn new() -> Host {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
        let proc_dir = dir.path().join("proc/sys/kernel/random");
        std::fs::create_dir_all(&proc_dir).unwrap();
        std::fs::write(
            proc_dir.join("boot_id"),
            "11111111-2222-3333-4444-555555555555\n",
        )
        .unwrap();
        Host { dir, sysfs }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn reboot(&self) {
        std::fs::write(
            self.path("proc/sys/kernel/random/boot_id"),
            "99999999-2222-3333-4444-555555555555\n",
        )
        .unwrap();
    }

    /// A fake helper: `$3` is the device; MIG on with one instance, except as `cases` says
    /// (shell `case` arms).
    fn helper(&self, cases: &str) -> PathBuf {
        let path = self.path("helper");
        let body = format!(
            r#"#!/bin/sh
if [ "$1" = --version ]; then echo '{{"commands": [{{"name": "read", "formats": ["1.0"]}}]}}'; exit 0; fi
case "$3" in
{cases}
esac
printf '{{"format": "1.0", "device": "%s", "mode": {{"capable": true, "current": "enabled", "pending": null}}, "case": "partitions", "gpu_instances": [{{"id": 1, "profile_id": 9, "uuid": null}}]}}\n' "$3"
"#
        );
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The real helper reading the cards through the fake NVML, each a carved A100 (MIG on,
    /// two GPU instances), as the sync's default helper script answers.
    fn nvml_helper(&self, cards: &[&str]) -> PathBuf {
        self.nvml_helper_of(&cards.iter().map(|bdf| (*bdf, CARVED)).collect::<Vec<_>>())
    }

    /// The real helper reading each card as its scenario file says.
    fn nvml_helper_of(&self, cards: &[(&str, &str)]) -> PathBuf {
        let scenario = support::scenario_of(cards).unwrap();
        let dir = self.path("nvml");
        std::fs::create_dir_all(&dir).unwrap();
        support::helper_wrapper(&dir, &scenario, support::Build::Current, None).unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mxctl"));
        command
            .args(["--config", "/dev/null", "--json"])
            .arg("--sysfs-root")
            .arg(self.sysfs.root())
            .arg("--proc-root")
            .arg(self.path("proc"))
            .arg("--state-dir")
            .arg(self.path("state"))
            .args(args);
        command
    }

    fn run(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let output = self.command(args).output().unwrap();
        let document = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&output.stderr)));
        (output.status.code().unwrap(), document)
    }
}

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
    insta::assert_json_snapshot!("no_gpu_sync", sync);
    let (_, status) = host.run(&["status"]);
    insta::assert_json_snapshot!("no_gpu_status", status);
}

#[test]
fn an_nvidia_gpu_with_the_pool_off_is_pool_disabled_and_not_in_use() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let (_, sync) = host.run(&["sync"]);
    insta::assert_json_snapshot!("pool_off_sync", sync);
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
    let (_, sync) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        helper.to_str().unwrap(),
    ]);
    insta::assert_json_snapshot!("pool_on_sync", sync);
    let (_, status) = host.run(&["status"]);
    insta::assert_json_snapshot!("pool_on_status", status);
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
    insta::assert_json_snapshot!("helper_absent_sync", sync);
}

#[test]
fn a_helper_hanging_on_one_card_of_four_costs_that_card_only() {
    let host = Host::new();
    four_nvidia_gpus(&host);
    let helper = host.helper("0000:03:00.0) exec sleep 60 ;;");
    let started = Instant::now();
    let (_, sync) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--deadline",
        "0.5",
        "--helper",
        helper.to_str().unwrap(),
    ]);
    assert!(
        started.elapsed() < Duration::from_millis(500 + 500 + 1000),
        "{:?}",
        started.elapsed()
    );
    insta::assert_json_snapshot!("one_hung_card_sync", sync);
}

#[test]
fn the_text_output_follows_the_xe_habits() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(["--config", "/dev/null", "sync"])
        .arg("--sysfs-root")
        .arg(host.sysfs.root())
        .arg("--proc-root")
        .arg(host.path("proc"))
        .arg("--state-dir")
        .arg(host.path("state"))
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
        serde_json::json!({"status": "not_reported", "reason": "", "gpus": []})
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
    host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        helper.to_str().unwrap(),
    ]);
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
    host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        good.to_str().unwrap(),
    ]);
    let busy = host.helper("*) exit 75 ;;");
    let (_, sync) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        busy.to_str().unwrap(),
    ]);
    assert_eq!(sync["gpus"][0]["partition_mode"], "possibly_enabled");
    assert_eq!(sync["gpus"][0]["reason"], "busy");
}

#[test]
fn a_corrupt_state_file_is_a_clear_error_and_is_kept_aside() {
    let host = Host::new();
    std::fs::create_dir_all(host.path("state")).unwrap();
    std::fs::write(
        host.path("state/state.json"),
        "{\"schema\": 1, \"status\": \"inactive\", \"rea",
    )
    .unwrap();
    let output = host.command(&["sync"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["kind"], "state");
    let message = document["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("state.json does not read; kept aside as"),
        "{message}"
    );
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
    assert_eq!(
        std::fs::read_to_string(kept[0].path()).unwrap(),
        "{\"schema\": 1, \"status\": \"inactive\", \"rea"
    );
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
fn a_state_file_of_a_later_schema_is_refused_and_left_alone() {
    let host = Host::new();
    std::fs::create_dir_all(host.path("state")).unwrap();
    std::fs::write(
        host.path("state/state.json"),
        r#"{"schema": 2, "status": "merged"}"#,
    )
    .unwrap();
    let (code, document) = host.run(&["status"]);
    assert_eq!(code, 1);
    assert!(
        document["error"]["message"]
            .as_str()
            .unwrap()
            .contains("schema 2")
    );
    assert!(host.path("state/state.json").exists());
}

#[test]
fn two_syncs_at_once_never_interleave_their_reads_and_writes() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let log = host.path("log");
    let helper = host.helper(&format!(
        "*) echo begin >> {log}; sleep 0.3; echo end >> {log} ;;",
        log = log.display()
    ));
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
fn a_sync_waits_a_bounded_time_for_the_lock_then_says_busy() {
    let host = Host::new();
    let _held = gpu_probe::lock::HostLock::try_acquire(&host.path("state")).unwrap();
    let started = Instant::now();
    let (code, document) = host.run(&["sync"]);
    assert_eq!(code, 1);
    assert_eq!(document["error"]["kind"], "lock_busy");
    assert!(started.elapsed() >= Duration::from_secs(10));
    assert!(started.elapsed() < Duration::from_secs(12));
}

#[test]
fn probe_without_devices_reads_every_nvidia_gpu_bound_to_nvidia() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    host.sysfs.nvidia("0000:3c:00.0", Some("vfio-pci")).unwrap();
    let helper = host.nvml_helper(&["0000:3b:00.0"]);
    let (_, probe) = host.run(&["probe", "--helper", helper.to_str().unwrap()]);
    let devices: Vec<&str> = probe["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["device"].as_str().unwrap())
        .collect();
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
    let output = host.command(&["gpus"]).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let devices: Vec<&str> = document["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| gpu["device"].as_str().unwrap())
        .collect();
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
    let helper = host.helper("");
    let (code, sync) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        helper.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{sync}");
    let gpus: Vec<(&str, &str)> = sync["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| {
            (
                gpu["device"].as_str().unwrap(),
                gpu["partition_mode"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        gpus,
        [
            ("0001:81:00.0", "enabled"),
            ("10000:e0:00.0", "not_checked")
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
    let (code, sync) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        helper.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{sync}");
    let modes: Vec<(&str, &str, &str)> = sync["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| {
            (
                gpu["device"].as_str().unwrap(),
                gpu["partition_mode"].as_str().unwrap(),
                gpu["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        modes,
        [
            ("0000:3b:00.0", "enabled", ""),
            ("0000:3c:00.0", "enabled", ""),
            ("0000:3d:00.0", "enable_on_reboot", ""),
            ("0000:3e:00.0", "not_supported", ""),
            ("0000:3f:00.0", "not_checked", "driver_vfio_pci"),
        ]
    );
    // One card waits for its reboot: the host is on its way in.
    assert_eq!(
        (sync["status"].as_str(), sync["reason"].as_str()),
        (Some("entering"), Some("gpus_pending"))
    );
}
