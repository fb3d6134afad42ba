//! AMD Instinct partitions through the executor: Device Config Manager's profiles applied to a
//! fake amdgpu (the kernel's rules, in one process) by diff — memory requested, one driver
//! reload for the hive, compute set, read back —, refused before any write where the kernel,
//! the part or a holder says no, declared, compared by the sync and restored after a reboot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::run::RunResult;
use gpu_partition_types::{Bdf, PartitionMode};
use host_sync::fake_amdgpu::{AmdPart, FakeAmdgpu, MI300X, MI355X, SharedAmdgpu};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{AfterBoot, Host, HostReason, HostStatus, MemoryStore, Pool, StateStore};
use layout_model::{DifferenceKind, HoldingState};
use mig_layout::amd::{AmdStep, AmdWant, AmdWith, DcmDocument, apply_amd, assert_amd};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyReason, ApplyReport, ApplyRun, Method, ResetWith, Restore,
    WriteFailure, restore,
};

use warm_reset::SysfsBackend;

const PROFILES: &str = r#"{
  "gpu-config-profiles": {
    "cpx-nps4": {"profiles": [{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]},
    "spx-nps4": {"profiles": [{"computePartition": "SPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]},
    "qpx-nps1": {"profiles": [{"computePartition": "QPX", "memoryPartition": "NPS1", "numGPUsAssigned": 8}]},
    "spx-nps1": {"profiles": [{"computePartition": "SPX", "memoryPartition": "NPS1", "numGPUsAssigned": 8}]}
  },
  "gpuClientSystemdServices": {"names": ["amd-metrics-exporter"]}
}"#;

fn bdf(index: usize) -> String {
    format!("0000:{:02x}:00.0", 0x05 + index * 0x10)
}

fn at(index: usize) -> Bdf {
    bdf(index).parse().unwrap()
}

struct Bed {
    dir: tempfile::TempDir,
    host: Host,
    fake: SharedAmdgpu,
    store: MemoryStore,
    helper: Helper,
    services: Vec<String>,
    hooks: mig_layout::Hooks,
}

impl Bed {
    /// A host of eight GPUs of `part` in one XGMI hive, in NPS1 (SPX, as a load in NPS1 sets).
    fn new(part: AmdPart) -> Bed {
        Self::hives(part, |_| 42)
    }

    /// Eight GPUs of `part`, each in the hive `hive` gives its index.
    fn hives(part: AmdPart, hive: fn(usize) -> u64) -> Bed {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
        let mut fake = FakeAmdgpu::new(sysfs.clone());
        for index in 0..8 {
            fake.gpu(&bdf(index), part, M::Nps1, Some(hive(index)))
                .unwrap();
        }
        let boot = dir.path().join("proc/sys/kernel/random");
        std::fs::create_dir_all(&boot).unwrap();
        std::fs::write(boot.join("boot_id"), "boot-1\n").unwrap();
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_proc_root(dir.path().join("proc"))
            .with_lock_dir(dir.path().join("locks"));
        // No helper on this host: an AMD apply never runs it.
        let helper = Helper::new(HelperConfig::new(dir.path().join("no-helper")));
        Bed {
            dir,
            host,
            fake: SharedAmdgpu::new(fake),
            store: MemoryStore::default(),
            helper,
            services: vec!["amd-metrics-exporter".to_owned()],
            hooks: mig_layout::Hooks::none(),
        }
    }

    fn options(&self) -> ApplyOptions {
        ApplyOptions::new(Pool::Enabled).hooks(self.hooks.clone())
    }

    fn run<R>(&mut self, go: impl FnOnce(ApplyRun<'_>, &ApplyOptions) -> R) -> R {
        let options = self.options();
        let mut backend = SysfsBackend::new(
            self.host.sysfs_root(),
            self.host.proc_root(),
            "/nonexistent/kmsg",
        );
        let reset = ResetWith::new(Method::Pci, &mut backend);
        let with = AmdWith {
            writes: Some(&self.fake),
            client_services: self.services.clone(),
            ..AmdWith::default()
        };
        let run = ApplyRun::new(&self.host, &self.helper, &mut self.store, reset).amd(with);
        go(run, &options)
    }

    fn apply(&mut self, profile: &str) -> ApplyReport {
        self.apply_from(PROFILES, profile)
    }

    fn apply_from(&mut self, profiles: &str, profile: &str) -> ApplyReport {
        let document = DcmDocument::from_text(profiles).unwrap();
        let profile_of = document.profile(profile).unwrap().clone();
        self.run(|run, options| apply_amd(run, profile, &profile_of, options).unwrap())
    }

    fn restore(&mut self) -> Restore {
        self.run(|run, options| restore(run, options).unwrap())
    }

    fn sync(&mut self, after_boot: AfterBoot) -> host_sync::SyncReport {
        host_sync::sync(
            &self.host,
            &self.helper,
            &mut self.store,
            &host_sync::SyncOptions::new(Pool::Enabled, after_boot),
        )
        .unwrap()
    }

    fn log(&self) -> Vec<String> {
        self.fake.lock().unwrap().log.clone()
    }

    fn reloads(&self) -> usize {
        self.fake.lock().unwrap().reloads()
    }

    /// A process (`pid`, named `name`) holding `file` open.
    fn holder(&self, pid: u32, name: &str, file: &str) {
        let fd = self.dir.path().join(format!("proc/{pid}/fd"));
        std::fs::create_dir_all(&fd).unwrap();
        std::os::unix::fs::symlink(file, fd.join("3")).unwrap();
        std::fs::write(
            self.dir.path().join(format!("proc/{pid}/comm")),
            format!("{name}\n"),
        )
        .unwrap();
    }

    /// A new boot of the machine: the fake's reboot and a new boot ID.
    fn reboot(&self) {
        self.fake.lock().unwrap().reboot().unwrap();
        std::fs::write(
            self.dir.path().join("proc/sys/kernel/random/boot_id"),
            "boot-2\n",
        )
        .unwrap();
    }
}

fn reason(report: &ApplyReport) -> Option<&str> {
    report.outcome.reason()
}

#[test]
fn cpx_nps4_on_a_hive_of_eight_requests_memory_reloads_once_holds_and_is_declared() {
    let mut bed = Bed::new(MI300X);
    let report = bed.apply("cpx-nps4");
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    let requests = bed
        .log()
        .iter()
        .filter(|line| line.starts_with("current_memory_partition"))
        .count();
    assert_eq!(requests, 8);
    assert_eq!(bed.reloads(), 1);
    assert_eq!((report.reload_planned, report.reloads), (true, 1));
    // The reload's AUTO rule set CPX for NPS4 on a discrete GPU: no compute write was needed.
    assert!(
        !bed.log()
            .iter()
            .any(|line| line.starts_with("current_compute_partition")),
        "{:?}",
        bed.log()
    );
    for gpu in &report.gpus {
        assert_eq!(gpu.outcome, Some(ApplyOutcome::Done));
        let done = &gpu.amd_work().unwrap().done;
        assert_eq!(done.len(), 1, "{done:?}");
    }
    let host = report.host.unwrap();
    assert_eq!(
        (host.status, host.reason, host.declared),
        (
            HostStatus::Active,
            HostReason::Ready,
            Some(HoldingState::Holds)
        )
    );
    let state = bed.store.load().unwrap().unwrap();
    let record = &state.gpus[&at(5)];
    assert_eq!(record.partition_mode, PartitionMode::Enabled);
    assert_eq!(record.requested_memory(), None);
    assert_eq!(state.declared.unwrap().gpus.len(), 8);
}

#[test]
fn a_second_apply_of_a_profile_that_holds_writes_nothing_and_the_assert_says_applied() {
    let mut bed = Bed::new(MI300X);
    bed.apply("cpx-nps4");
    let before = bed.log().len();
    let again = bed.apply("cpx-nps4");
    assert_eq!(again.outcome, ApplyOutcome::Done);
    assert_eq!(again.writes(), 0);
    assert_eq!(bed.log().len(), before);
    let document = DcmDocument::from_text(PROFILES).unwrap();
    let options = bed.options();
    let asserted = assert_amd(
        &bed.host,
        &mut bed.store,
        "cpx-nps4",
        document.profile("cpx-nps4").unwrap(),
        &options,
    )
    .unwrap();
    assert!(asserted.applied, "{:?}", asserted.gpus);
}

#[test]
fn a_compute_change_alone_is_written_at_once_without_a_reload() {
    let mut bed = Bed::new(MI300X);
    let report = bed.apply("qpx-nps1");
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    assert_eq!(bed.reloads(), 0);
    assert!(!report.reload_planned);
    let writes = bed
        .log()
        .iter()
        .filter(|line| line.starts_with("current_compute_partition"))
        .count();
    assert_eq!(writes, 8);
    assert_eq!(
        report.gpus[0].amd_work().unwrap().done,
        [AmdStep::SetCompute {
            device: at(0),
            mode: C::Qpx
        }]
    );
}

#[test]
fn spx_with_nps4_on_mi300x_is_refused_before_any_write_citing_the_kernels_rule() {
    let mut bed = Bed::new(MI300X);
    let report = bed.apply("spx-nps4");
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible)
    );
    let detail = report.detail.unwrap();
    assert!(
        detail.contains("SPX with NPS4 is refused by the kernel")
            && detail.contains("aqua_vanjaram.c"),
        "{detail}"
    );
    assert_eq!(bed.log(), Vec::<String>::new());
}

#[test]
fn cpx_nps4_on_an_mi355_like_part_is_refused_before_any_write_naming_what_it_offers() {
    let mut bed = Bed::new(MI355X);
    let report = bed.apply("cpx-nps4");
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible)
    );
    let impossible = report.impossible.as_ref().unwrap();
    assert_eq!(
        (impossible.kind, impossible.profile.as_deref()),
        (mig_layout::ImpossibleKind::AmdNotOffered, Some("NPS4"))
    );
    let detail = report.detail.unwrap();
    assert!(
        detail.contains("NPS4 is not offered")
            && detail.contains("NPS1, NPS2")
            && detail.contains("available_memory_partition"),
        "{detail}"
    );
    assert_eq!(bed.log(), Vec::<String>::new());
}

#[test]
fn a_process_holding_one_gpu_blocks_the_apply_before_any_write_naming_it() {
    let mut bed = Bed::new(MI300X);
    // GPU 3's render node (the fake numbers them from 128).
    bed.holder(4242, "rocm-smi-app", "/dev/dri/renderD131");
    let report = bed.apply("cpx-nps4");
    assert_eq!(report.outcome, ApplyOutcome::Blocked(ApplyReason::GpuBusy));
    let detail = report.detail.unwrap();
    assert!(
        detail.contains(&bdf(3)) && detail.contains("4242") && detail.contains("rocm-smi-app"),
        "{detail}"
    );
    assert_eq!(bed.log(), Vec::<String>::new());
}

#[test]
fn a_client_service_running_blocks_the_apply_before_any_write_naming_it() {
    let mut bed = Bed::new(MI300X);
    let cgroup = bed
        .host
        .sysfs_root()
        .join("fs/cgroup/system.slice/amd-metrics-exporter.service");
    std::fs::create_dir_all(&cgroup).unwrap();
    std::fs::write(cgroup.join("cgroup.procs"), "5151\n").unwrap();
    let report = bed.apply("cpx-nps4");
    assert_eq!(report.outcome, ApplyOutcome::Blocked(ApplyReason::GpuBusy));
    let detail = report.detail.unwrap();
    assert!(
        detail.contains("amd-metrics-exporter.service is running (pid 5151)"),
        "{detail}"
    );
    assert_eq!(bed.log(), Vec::<String>::new());
}

#[test]
fn a_reload_the_driver_refuses_fails_the_apply_and_the_requests_stay_pending() {
    let mut bed = Bed::new(MI300X);
    // A ROCm process the holders' scan did not see (it opened the GPU after the preflight).
    bed.fake.lock().unwrap().gpus[6].held = true;
    let report = bed.apply("cpx-nps4");
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::StepRefused),
        "{:?}",
        report.detail
    );
    assert!(
        report.detail.as_deref().unwrap().contains("in use"),
        "{:?}",
        report.detail
    );
    let state = bed.store.load().unwrap().unwrap();
    let record = &state.gpus[&at(2)];
    assert_eq!(record.partition_mode, PartitionMode::EnableOnReboot);
    assert_eq!(record.requested_memory(), Some(M::Nps4));
    assert_eq!(state.reason.as_str(), "layout_failed");
    // Once the holder is gone, the same apply completes by diff.
    bed.fake.lock().unwrap().gpus[6].held = false;
    let healed = bed.apply("cpx-nps4");
    assert_eq!(healed.outcome, ApplyOutcome::Done, "{:?}", healed.detail);
}

#[test]
fn a_reload_the_driver_refuses_is_typed_on_every_gpu_it_stopped_each_naming_its_own_gpu() {
    let mut bed = Bed::new(MI300X);
    bed.fake.lock().unwrap().gpus[6].held = true;
    let report = bed.apply("cpx-nps4");
    assert_eq!(report.gpus.len(), 8);
    for gpu in &report.gpus {
        let device = gpu.device.to_string();
        match &gpu.failure {
            Some(WriteFailure::Program { program, end, .. }) => {
                assert_eq!(program, "modprobe", "{device}");
                assert!(!matches!(end, RunResult::Exited(0)), "{device}: {end:?}");
            }
            other => panic!("{device}: {other:?}"),
        }
        let detail = gpu.detail.as_deref().unwrap_or_default();
        assert!(detail.starts_with(&device), "{device}: {detail}");
    }
}

#[test]
fn a_reboot_loses_the_compute_partition_the_sync_says_drifted_and_a_restore_brings_it_back() {
    let mut bed = Bed::new(MI300X);
    assert_eq!(bed.apply("qpx-nps1").outcome, ApplyOutcome::Done);
    bed.reboot();
    let after_boot = bed.sync(AfterBoot::Auto);
    assert_eq!(after_boot.reason, HostReason::LayoutDrifted);
    assert!(
        after_boot
            .drift
            .iter()
            .all(|difference| difference.kind() == DifferenceKind::ComputePartition),
        "{:?}",
        after_boot.drift
    );
    assert_eq!(after_boot.drift.len(), 8);
    let Restore::Ran(report) = bed.restore() else {
        panic!("nothing restored");
    };
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    assert_eq!(bed.reloads(), 0);
    assert_eq!(report.host.unwrap().declared, Some(HoldingState::Holds));
}

#[test]
fn a_boot_that_loses_the_memory_partition_too_is_restored_with_one_reload() {
    let mut bed = Bed::new(MI300X);
    assert_eq!(bed.apply("cpx-nps4").outcome, ApplyOutcome::Done);
    for gpu in &mut bed.fake.lock().unwrap().gpus {
        gpu.memory_at_boot = Some(M::Nps1);
    }
    bed.reboot();
    let after_boot = bed.sync(AfterBoot::Auto);
    assert_eq!(after_boot.reason, HostReason::LayoutDrifted);
    let Restore::Ran(report) = bed.restore() else {
        panic!("nothing restored");
    };
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    assert_eq!(bed.reloads(), 2, "the apply's and the restore's");
}

#[test]
fn a_dry_run_shows_the_plan_and_writes_nothing() {
    let mut bed = Bed::new(MI300X);
    let document = DcmDocument::from_text(PROFILES).unwrap();
    let profile = document.profile("cpx-nps4").unwrap().clone();
    let report = bed.run(|run, options| {
        apply_amd(run, "cpx-nps4", &profile, &options.clone().dry_run(true)).unwrap()
    });
    assert_eq!(report.outcome, ApplyOutcome::DryRun);
    assert!(report.reload_planned);
    assert_eq!(
        report.gpus[0].amd_work().unwrap().plan,
        [
            AmdStep::RequestMemory {
                device: at(0),
                mode: M::Nps4
            },
            AmdStep::SetCompute {
                device: at(0),
                mode: C::Cpx
            }
        ]
    );
    assert_eq!(bed.log(), Vec::<String>::new());
}

#[test]
fn undivided_with_the_pool_off_is_allowed_and_divided_is_refused() {
    let mut bed = Bed::new(MI300X);
    let document = DcmDocument::from_text(PROFILES).unwrap();
    let mut off = |name: &'static str| {
        let profile = document.profile(name).unwrap().clone();
        bed.run(|run, _| {
            apply_amd(run, name, &profile, &ApplyOptions::new(Pool::Disabled)).unwrap()
        })
    };
    let divided = off("cpx-nps4");
    assert_eq!(reason(&divided), Some("pool_disabled"));
    let undivided = off("spx-nps1");
    assert_eq!(
        undivided.outcome,
        ApplyOutcome::Done,
        "{:?}",
        undivided.detail
    );
}

#[test]
fn hooks_that_stop_the_exporter_before_and_start_it_after_let_the_apply_run_as_dcm_does() {
    use gpu_host_probe::run::CommandLine;
    use mig_layout::HookPoint;
    let mut bed = Bed::new(MI300X);
    let cgroup = bed
        .host
        .sysfs_root()
        .join("fs/cgroup/system.slice/amd-metrics-exporter.service");
    std::fs::create_dir_all(&cgroup).unwrap();
    let procs = cgroup.join("cgroup.procs");
    std::fs::write(&procs, "5151\n").unwrap();
    // `systemctl stop` and `systemctl start` of the documented example, as the cgroup shows them.
    let sh = |script: String| CommandLine::new("/bin/sh", ["-c".to_owned(), script]);
    bed.hooks = mig_layout::Hooks::none()
        .with(
            HookPoint::ApplyStart,
            sh(format!(": > {}", procs.display())),
        )
        .with(
            HookPoint::ApplyExit,
            sh(format!("echo 5151 > {}", procs.display())),
        );
    let report = bed.apply("cpx-nps4");
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    assert_eq!(bed.reloads(), 1);
    assert_eq!(report.hooks.len(), 2);
    assert_eq!(std::fs::read_to_string(&procs).unwrap(), "5151\n");
}

#[test]
fn a_memory_change_the_firmware_refuses_fails_did_not_converge_and_no_request_waits_after() {
    let mut bed = Bed::new(MI300X);
    for gpu in &mut bed.fake.lock().unwrap().gpus {
        gpu.nps_change_fails = true;
    }
    let report = bed.apply("cpx-nps4");
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::DidNotConverge),
        "{:?}",
        report.detail
    );
    assert!(
        report
            .detail
            .as_deref()
            .unwrap()
            .contains("the request did not take effect"),
        "{:?}",
        report.detail
    );
    assert_eq!(bed.reloads(), 1);
    // The reload sent the requests: none waits, and no GPU says it will change at a reload.
    let state = bed.store.load().unwrap().unwrap();
    for index in 0..8 {
        let record = &state.gpus[&at(index)];
        assert_eq!(record.requested_memory(), None, "GPU {index}");
        assert_eq!(
            record.partition_mode,
            PartitionMode::Disabled,
            "GPU {index}"
        );
    }
    for gpu in &report.gpus {
        assert_eq!(
            gpu.outcome,
            Some(ApplyOutcome::Failed(ApplyReason::DidNotConverge))
        );
    }
}

#[test]
fn a_gpu_outside_the_profile_that_the_reload_resets_is_set_back_with_a_warning() {
    // Two hives of four; the profile skips the second, which is QPX.
    let mut bed = Bed::hives(MI300X, |index| if index < 4 { 1 } else { 2 });
    assert_eq!(bed.apply("qpx-nps1").outcome, ApplyOutcome::Done);
    let first_hive = r#"{"gpu-config-profiles": {"cpx-nps4-first": {
        "skippedGPUs": {"ids": [4, 5, 6, 7]},
        "profiles": [{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 4}]}}}"#;
    let report = bed.apply_from(first_hive, "cpx-nps4-first");
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    assert_eq!(bed.reloads(), 1);
    let fake = bed.fake.lock().unwrap();
    for index in 4..8 {
        assert_eq!(fake.gpus[index].compute, Some(C::Qpx), "GPU {index}");
        assert_eq!(fake.gpus[index].memory, M::Nps1, "GPU {index}");
    }
    let restored: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(restored.len(), 4, "{restored:?}");
    assert!(
        restored[0].contains(&bdf(4)) && restored[0].contains("set back to QPX"),
        "{restored:?}"
    );
}

#[test]
fn a_request_for_another_mode_still_waiting_blocks_an_apply_the_gpus_hold_now() {
    let mut bed = Bed::new(MI300X);
    bed.fake.lock().unwrap().gpus[6].held = true;
    assert_eq!(
        bed.apply("cpx-nps4").outcome,
        ApplyOutcome::Failed(ApplyReason::StepRefused)
    );
    bed.fake.lock().unwrap().gpus[6].held = false;
    let before = bed.log().len();
    let report = bed.apply("spx-nps1");
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::MemoryRequestPending),
        "{:?}",
        report.detail
    );
    assert!(
        report
            .detail
            .as_deref()
            .unwrap()
            .contains("NPS4 was requested and waits for a driver reload"),
        "{:?}",
        report.detail
    );
    assert_eq!(bed.log().len(), before, "nothing written");
}

#[test]
fn a_compute_write_the_kernel_refuses_stops_that_gpu_and_the_others_hold() {
    let mut bed = Bed::new(MI300X);
    // A ROCm process the holders' scan did not see: the kernel answers EBUSY.
    bed.fake.lock().unwrap().gpus[3].held = true;
    let report = bed.apply("qpx-nps1");
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::StepRefused),
        "{:?}",
        report.detail
    );
    let refused = &report.gpus[3];
    assert_eq!(
        refused.outcome,
        Some(ApplyOutcome::Failed(ApplyReason::StepRefused))
    );
    assert!(
        refused
            .detail
            .as_deref()
            .unwrap()
            .contains("Device or resource busy"),
        "{:?}",
        refused.detail
    );
    match &refused.failure {
        Some(WriteFailure::Kernel { file, errno, .. }) => {
            assert_eq!(*errno, Some(16), "EBUSY");
            assert!(
                file.ends_with(format!("{}/current_compute_partition", bdf(3))),
                "{file:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let held = report
        .gpus
        .iter()
        .filter(|gpu| gpu.outcome == Some(ApplyOutcome::Done))
        .count();
    assert_eq!(held, 7);
}

#[test]
fn a_compute_partition_not_offered_with_the_memory_change_is_blocked_before_any_write_and_no_reload()
 {
    // A declaration of TPX+NPS4 on an MI300X hive (a pair the kernel's table takes, and a mode
    // the part does not offer in NPS4: only QPX and CPX), restored from NPS1.
    let mut bed = Bed::new(MI300X);
    let want = AmdWant::new(C::Tpx, M::Nps4);
    let gpus = (0..8)
        .map(|index| {
            let declared = layout_model::amd::AmdDeclared::new(want, Vec::new());
            (at(index), layout_model::DeclaredGpu::Amd(declared))
        })
        .collect();
    let mut state = host_sync::HostState::default();
    state.declared = Some(layout_model::Declaration::new("tpx", 1, None, gpus));
    bed.store.save(&state).unwrap();
    let Restore::Ran(report) = bed.restore() else {
        panic!("the restore did not run");
    };
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible),
        "{:?}",
        report.detail
    );
    assert!(
        report
            .detail
            .as_deref()
            .unwrap_or_default()
            .contains("TPX is not offered once its memory partition is NPS4"),
        "{:?}",
        report.detail
    );
    assert_eq!(bed.log(), Vec::<String>::new(), "no request, no reload");
    assert_eq!((report.reload_planned, report.reloads), (false, 0));
    let impossible = report.impossible.as_ref().unwrap();
    assert_eq!(
        (impossible.kind, impossible.profile.as_deref()),
        (mig_layout::ImpossibleKind::AmdNotOffered, Some("TPX"))
    );
}
