//! `mxctl amd` on an MI300X-like host of eight GPUs in one XGMI hive: the fake amdgpu kept in a
//! file (`--simulate`: it answers each write by the kernel's rules and shows its GPUs in the
//! host's sysfs tree), everything else real — the reads of sysfs, the lock, the state, the
//! sync. Device Config Manager profiles applied by diff, refused before any write where the
//! kernel, the part or a holder says no, kept across a reboot; and a host of both vendors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::machine::Machine;
use common::partition_host::{A100_OFF, PartitionHost};
use gpu_host_probe::amdgpu::MemoryPartition as M;
use host_sync::fake_amdgpu::{AmdPart, FakeAmdgpu, FakeAmdgpuFile, MI300X, MI355X};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const PROFILES: &str = r#"{
  "gpu-config-profiles": {
    "cpx-nps4": {"skippedGPUs": {"ids": []},
      "profiles": [{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]},
    "spx-nps4": {"profiles": [{"computePartition": "SPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]},
    "qpx-nps1": {"profiles": [{"computePartition": "QPX", "memoryPartition": "NPS1", "numGPUsAssigned": 8}]},
    "cpx-nps8": {"profiles": [{"computePartition": "CPX", "memoryPartition": "NPS8", "numGPUsAssigned": 8}]}
  },
  "gpuClientSystemdServices": {"names": ["amd-metrics-exporter", "gpuagent"]}
}"#;

fn bdf(index: usize) -> String {
    format!("0000:{:02x}:00.0", 0x05 + index * 0x10)
}

struct AmdPartitionHost {
    machine: Machine,
    /// The simulated amdgpu's file.
    fake: PathBuf,
    /// The Device Config Manager file.
    dcm: PathBuf,
}

impl std::ops::Deref for AmdPartitionHost {
    type Target = Machine;

    fn deref(&self) -> &Machine {
        &self.machine
    }
}

impl AmdPartitionHost {
    /// Eight GPUs of `part` in hive 42, in NPS1 (SPX: a driver load in NPS1 sets it).
    fn new(part: AmdPart) -> AmdPartitionHost {
        Self::on(Machine::new(), part)
    }

    /// The same GPUs added to `machine`'s sysfs.
    fn on(machine: Machine, part: AmdPart) -> AmdPartitionHost {
        let mut fake = FakeAmdgpu::new(machine.sysfs.clone());
        for index in 0..8 {
            fake.gpu(&bdf(index), part, M::Nps1, Some(42)).unwrap();
        }
        let file = machine.path("amdgpu.json");
        FakeAmdgpuFile::new(&file, machine.sysfs.root())
            .save(&fake)
            .unwrap();
        let dcm = machine.path("dcm.json");
        std::fs::write(&dcm, PROFILES).unwrap();
        AmdPartitionHost {
            machine,
            fake: file,
            dcm,
        }
    }

    fn file(&self) -> FakeAmdgpuFile {
        FakeAmdgpuFile::new(&self.fake, self.sysfs.root())
    }

    /// The writes the fake answered.
    fn log(&self) -> Vec<String> {
        self.file().load().unwrap().log
    }

    /// `mxctl --json amd SUB … --pool enabled --simulate FILE`.
    fn amd(&self, args: &[&str]) -> Command {
        let mut command = self.mxctl(&["amd"]);
        command.args(args);
        if matches!(args.first(), Some(&("apply" | "leave" | "restore"))) {
            command
                .args(["--pool", "enabled", "--simulate"])
                .arg(&self.fake);
        }
        command
    }

    fn apply(&self, profile: &str) -> (i32, Value) {
        let dcm = self.dcm.to_str().unwrap().to_owned();
        common::run_json(self.amd(&["apply", "--dcm-config", &dcm, "--profile", profile]))
    }

    fn assert(&self, profile: &str) -> (i32, Value) {
        let dcm = self.dcm.to_str().unwrap().to_owned();
        common::run_json(self.amd(&["assert", "--dcm-config", &dcm, "--profile", profile]))
    }

    /// `mxctl --json ARGS…` (the pool on for a sync).
    fn json(&self, args: &[&str]) -> Value {
        let mut command = self.mxctl(args);
        if args.first() == Some(&"sync") {
            command.args(["--pool", "enabled"]);
        }
        common::run_json(command).1
    }

    /// `mxctl ARGS…` for people.
    fn text(&self, args: &[&str]) -> String {
        let mut command = self.mxctl_configured(std::path::Path::new("/dev/null"));
        command.args(args);
        if args.first() == Some(&"sync") {
            command.args(["--pool", "enabled"]);
        }
        let output = command.output().unwrap();
        String::from_utf8(output.stdout).unwrap()
    }
}

fn count(log: &[String], prefix: &str) -> usize {
    log.iter().filter(|line| line.starts_with(prefix)).count()
}

/// The string at `pointer` in `report` (`/detail`, `/error/message`) holds each of `parts`,
/// and nothing was written to the host's GPUs.
#[track_caller]
fn assert_says_and_wrote_nothing(
    host: &AmdPartitionHost,
    report: &Value,
    pointer: &str,
    parts: &[&str],
) {
    let said = report.pointer(pointer).and_then(Value::as_str).unwrap();
    for part in parts {
        assert!(said.contains(part), "{said}");
    }
    assert_eq!(host.log(), Vec::<String>::new());
}

#[test]
fn a_cpx_nps4_profile_applies_with_one_reload_for_the_hive_then_writes_nothing_and_asserts() {
    let host = AmdPartitionHost::new(MI300X);
    let (code, report) = host.apply("cpx-nps4");
    assert_eq!(
        (code, &report["outcome"]),
        (0, &Value::from("done")),
        "{report}"
    );
    let log = host.log();
    assert_eq!(count(&log, "current_memory_partition"), 8, "{log:?}");
    assert_eq!(count(&log, "modprobe amdgpu"), 1, "{log:?}");
    assert_eq!(report["driver_reloads"], 1);
    assert_eq!(report["conclusion"], "holds");
    for gpu in report["gpus"].as_array().unwrap() {
        assert_eq!(gpu["outcome"], "done");
        assert_eq!(gpu["amd_done"][0]["step"], "request_memory");
    }
    let (code, again) = host.apply("cpx-nps4");
    assert_eq!(code, 0);
    assert_eq!(again["driver_reloads"], 0);
    assert_eq!(host.log(), log, "the second apply wrote");
    let (code, asserted) = host.assert("cpx-nps4");
    assert_eq!(
        (code, &asserted["applied"]),
        (0, &Value::from(true)),
        "{asserted}"
    );
}

#[test]
fn amd_leave_makes_every_gpu_spx_nps1_with_one_reload_and_a_second_leave_writes_nothing() {
    let host = AmdPartitionHost::new(MI300X);
    assert_eq!(host.apply("cpx-nps4").0, 0);
    let before = host.log();
    let (code, report) = common::run_json(host.amd(&["leave"]));
    assert_eq!(
        (code, &report["outcome"]),
        (0, &Value::from("done")),
        "{report}"
    );
    assert_eq!(report["label"], "leave");
    assert_eq!(report["driver_reloads"], 1);
    let log = host.log();
    assert_eq!(
        count(&log[before.len()..], "current_memory_partition"),
        8,
        "{log:?}"
    );
    let gpus = host.json(&["gpus"]);
    for gpu in gpus["gpus"].as_array().unwrap() {
        let read = &gpu["amd_partitions"];
        assert_eq!(
            common::strings(read, ["compute", "memory", "partition_mode"]),
            ["SPX", "NPS1", "disabled"],
            "{gpu}"
        );
    }
    let (code, again) = common::run_json(host.amd(&["leave"]));
    assert_eq!(
        (code, &again["driver_reloads"]),
        (0, &Value::from(0)),
        "{again}"
    );
    assert_eq!(host.log(), log, "the second leave wrote");
}

#[test]
fn gpus_sync_and_status_show_each_gpus_compute_and_memory_partition_and_its_mode() {
    let host = AmdPartitionHost::new(MI300X);
    host.apply("cpx-nps4");
    let gpus = host.json(&["gpus"]);
    let first = &gpus["gpus"][0]["amd_partitions"];
    assert_eq!(
        common::strings(first, ["compute", "memory", "partition_mode"]),
        ["CPX", "NPS4", "enabled"]
    );
    let text = host.text(&["gpus"]);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 8, "{text}");
    assert!(
        rows.iter().all(|line| line.ends_with("CPX NPS4   enabled")),
        "{text}"
    );
    let sync = host.json(&["sync"]);
    assert_eq!(
        common::strings(&sync, ["status", "reason"]),
        ["active", "ready"]
    );
    for gpu in sync["gpus"].as_array().unwrap() {
        assert_eq!(gpu["partition_mode"], "enabled");
        assert_eq!(
            common::strings(&gpu["amd"], ["compute", "memory"]),
            ["CPX", "NPS4"]
        );
    }
    let status = host.json(&["status"]);
    assert_eq!(status["declared"]["holds"], "holds");
    assert_eq!(status["gpus"][7]["amd"]["compute"], "CPX");
    let text = host.text(&["status"]);
    assert!(
        text.contains("partition-mode: enabled")
            && text.contains("  partitions: CPX NPS4 (read at"),
        "{text}"
    );
}

#[test]
fn spx_nps4_on_mi300x_is_refused_before_any_write_citing_the_kernels_rule() {
    let host = AmdPartitionHost::new(MI300X);
    let report = common::blocked(host.apply("spx-nps4"), "layout_impossible");
    assert_says_and_wrote_nothing(
        &host,
        &report,
        "/detail",
        &["SPX with NPS4 is refused by the kernel", "aqua_vanjaram.c"],
    );
}

#[test]
fn cpx_nps4_on_an_mi355_like_part_is_refused_before_any_write_naming_what_it_offers() {
    let host = AmdPartitionHost::new(MI355X);
    let report = common::blocked(host.apply("cpx-nps4"), "layout_impossible");
    assert_says_and_wrote_nothing(
        &host,
        &report,
        "/detail",
        &["NPS4 is not offered: the GPU offers NPS1, NPS2 (available_memory_partition)"],
    );
}

#[test]
fn a_profile_dcm_would_refuse_is_refused_when_selected_and_the_files_others_still_apply() {
    // The file reads whole (the other tests apply its valid profiles); DCM takes no NPS8.
    let host = AmdPartitionHost::new(MI300X);
    let (code, report) = host.apply("cpx-nps8");
    assert_eq!(
        (code, &report["error"]["kind"]),
        (1, &Value::from("apply")),
        "{report}"
    );
    assert_says_and_wrote_nothing(
        &host,
        &report,
        "/error/message",
        &[
            "the profile \"cpx-nps8\" (line 7): entry 0: the memory partition \"NPS8\" is none \
             of DCM's ValidMemoryPartitions (NPS1, NPS2, NPS4)",
        ],
    );
}

#[test]
fn a_process_holding_one_gpu_blocks_the_apply_before_any_write_naming_it() {
    let host = AmdPartitionHost::new(MI300X);
    host.holder(4242, "rocm-bench", "/dev/dri/renderD133", 5);
    let report = common::blocked(host.apply("cpx-nps4"), "gpu_busy");
    assert_says_and_wrote_nothing(
        &host,
        &report,
        "/detail",
        &[&format!("{} is in use: pid 4242 (rocm-bench)", bdf(5))],
    );
}

#[test]
fn a_reload_the_driver_refuses_leaves_the_request_pending_on_every_surface() {
    let host = AmdPartitionHost::new(MI300X);
    host.file().change(|fake| fake.gpus[4].held = true).unwrap();
    let (code, report) = host.apply("cpx-nps4");
    assert_eq!(
        (code, &report["outcome"]),
        (1, &Value::from("failed")),
        "{report}"
    );
    let gpus = host.json(&["gpus"]);
    let first = &gpus["gpus"][0]["amd_partitions"];
    assert_eq!(
        common::strings(first, ["memory", "requested_memory", "partition_mode"]),
        ["NPS1", "NPS4", "enable_on_reboot"]
    );
    let text = host.text(&["status"]);
    assert!(
        text.contains("partition-mode: enable_on_reboot")
            && text.contains("requested: NPS4 at")
            && text.contains("waiting for a driver reload"),
        "{text}"
    );
}

#[test]
fn a_reboot_loses_the_compute_partition_the_boot_sync_says_drifted_and_restore_brings_it_back() {
    let host = AmdPartitionHost::new(MI300X);
    let (code, _) = host.apply("qpx-nps1");
    assert_eq!(code, 0);
    // The compute partition never survives a reboot: the driver's load sets it anew (AUTO:
    // SPX in NPS1); the memory partition is the firmware's and this fake keeps it.
    host.file().change(|fake| fake.reboot().unwrap()).unwrap();
    host.boot("99999999-2222-3333-4444-555555555555");
    let mut boot_sync = host.mxctl(&["sync", "--after-boot", "auto", "--pool", "enabled"]);
    boot_sync.args(["--helper", "/nonexistent"]);
    let (_, after_boot) = common::run_json(boot_sync);
    assert_eq!(after_boot["after_boot"], true);
    assert_eq!(
        common::strings(&after_boot, ["status", "reason"]),
        ["entering", "layout_drifted"],
        "{after_boot}"
    );
    let drift = after_boot["drift"].as_array().unwrap();
    assert_eq!(drift.len(), 8);
    assert!(
        drift.iter().all(|d| d["kind"] == "compute_partition"
            && d["found"] == "SPX"
            && d["wanted"] == "QPX")
    );
    let (code, restored) = common::run_json(host.amd(&["restore", "--at-boot"]));
    assert_eq!(
        (code, &restored["outcome"]),
        (0, &Value::from("done")),
        "{restored}"
    );
    assert_eq!(restored["conclusion"], "holds");
    assert_eq!(host.json(&["status"])["declared"]["holds"], "holds");
}

#[test]
fn a_host_of_nvidia_and_amd_gpus_has_one_status_over_both() {
    let nvidia = PartitionHost::new(&[("0000:3b:00.0", A100_OFF, "0x20b0")]);
    let helper = nvidia.helper.clone();
    let host = AmdPartitionHost::on(
        // The AMD GPUs join the NVIDIA host's machine.
        std::mem::replace(&mut { nvidia }.machine, Machine::new()),
        MI300X,
    );
    let sync = |host: &AmdPartitionHost| {
        let mut command = host.mxctl(&["sync", "--after-boot", "no", "--pool", "enabled"]);
        command.arg("--helper").arg(&helper);
        common::run_json(command).1
    };
    let before = sync(&host);
    assert_eq!(
        common::strings(&before, ["status", "reason"]),
        ["active", "ready"],
        "{before}"
    );
    let modes = common::fields_of_each(&before["gpus"], ["vendor", "partition_mode"]);
    assert!(
        modes.contains(&["10de", "disabled"]) && modes.contains(&["1002", "disabled"]),
        "{modes:?}"
    );
    let (code, _) = host.apply("cpx-nps4");
    assert_eq!(code, 0);
    // Something outside mxctl sets one AMD GPU's compute partition back: the one host status
    // says so, over a host whose NVIDIA GPU holds what it should.
    host.file()
        .change(|fake| fake.write_compute(&bdf(2), "QPX\n").unwrap())
        .unwrap();
    let after = sync(&host);
    assert_eq!(
        common::strings(&after, ["status", "reason"]),
        ["entering", "layout_drifted"],
        "{after}"
    );
    assert_eq!(after["drift"][0]["device"], bdf(2));
}

#[test]
fn a_profile_whose_memory_request_would_reach_a_gpu_not_ours_is_blocked_before_any_write() {
    let host = AmdPartitionHost::new(MI300X);
    let (code, said) =
        common::run_json(host.mxctl(&["partition", "own", "--device", &bdf(7), "--as", "dynamic"]));
    assert_eq!(code, 0, "{said}");
    let before = host.log();
    // The memory request takes the hive whole, GPU 7 with it: refused before any write (by
    // the hive's rule here; a GPU not ours outside the hive is refused by the reload's).
    let (code, report) = host.apply("cpx-nps4");
    assert_eq!(
        (code, &report["outcome"]),
        (3, &Value::from("blocked")),
        "{report}"
    );
    assert!(
        report["detail"].as_str().unwrap().contains(&bdf(7)),
        "{report}"
    );
    assert_eq!(host.log(), before, "nothing was written");
}
