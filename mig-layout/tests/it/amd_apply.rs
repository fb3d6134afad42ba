//! AMD Instinct partitions through the executor: Device Config Manager's profiles applied to a
//! fake amdgpu (the kernel's rules, in one process) by diff — memory requested, one driver
//! reload for the hive, compute set, read back —, refused before any write where the kernel,
//! the part or a holder says no, declared, compared by the sync and restored after a reboot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::assert_outcome;
use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use gpu_partition_types::PartitionMode;
use host_sync::fake_amdgpu::MI300X;
use host_sync::{AfterBoot, HostReason, HostStatus, Pool, StateStore};
use layout_model::{DifferenceKind, HoldingState};
use mig_layout::amd::{AmdStep, DcmDocument, apply_amd, assert_amd};
use mig_layout::{ApplyOptions, ApplyOutcome, AssertRun, Restore};

use crate::common::amd_bed::*;

#[test]
fn cpx_nps4_on_a_hive_of_eight_requests_memory_reloads_once_holds_and_is_declared() {
    let mut bed = Bed::new(MI300X);
    let report = bed.apply("cpx-nps4");
    assert_outcome(&report, ApplyOutcome::Done);
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
        AssertRun::new(&bed.host, &bed.helper, &mut bed.store),
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
    assert_outcome(&report, ApplyOutcome::Done);
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
    assert_outcome(&report, ApplyOutcome::Done);
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
    assert_outcome(&report, ApplyOutcome::Done);
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
    assert_outcome(&undivided, ApplyOutcome::Done);
}

#[test]
fn hooks_that_stop_the_exporter_before_and_start_it_after_let_the_apply_run_as_dcm_does() {
    use gpu_host_probe::run::CommandLine;
    use mig_layout::HookPoint;
    let mut bed = Bed::new(MI300X);
    let procs = bed.exporter_running(Some(5151));
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
    assert_outcome(&report, ApplyOutcome::Done);
    assert_eq!(bed.reloads(), 1);
    assert_eq!(report.hooks.len(), 2);
    assert_eq!(std::fs::read_to_string(&procs).unwrap(), "5151\n");
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
    assert_outcome(&report, ApplyOutcome::Done);
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
