//! The vGPU layer through the executor: an A100-PCIE-40GB and an H100 80GB of the fake, each
//! with SR-IOV, the real helper over the fake NVML, the fake's `sriov-manage` (a real process)
//! and its driver's side of each VF type write, the fake's reset backend on a virtual clock.
//! The fake's call log is where the order shows: the helper's NVML calls, `sriov-manage`, the
//! type writes, one log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{assert_detail_says, assert_outcome};
use fake_nvml::MigMode;
use gpu_host_probe::run::RunResult;
use host_sync::sriov::read_sriov;
use host_sync::{AfterBoot, HostReason};
use layout_model::{DifferenceKind, Fact, Holding};
use mig_layout::vgpu::{VgpuStep, apply_vgpu};
use mig_layout::{ApplyOutcome, ApplyReason, ApplyReport, Restore, WriteFailure};

use crate::common::vgpu_bed::{A100, Bed, H100, first, last};

#[test]
fn a_mig_backed_config_applies_in_the_drivers_order_and_again_writes_nothing() {
    let mut bed = Bed::new();
    let report = bed.run(Some("A100-1-5C"));
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    let writes = bed.writes();
    // MIG on (completed by the reset), then the VFs, then the instances, then the types.
    assert!(first(&writes, "nvmlDeviceSetMigMode 1") < first(&writes, "sriov-manage -e"));
    assert!(first(&writes, "sriov-manage -e") < first(&writes, "nvmlDeviceCreateGpuInstance"));
    assert!(last(&writes, "nvmlDeviceCreateGpuInstance") < first(&writes, "current_vgpu_type"));
    assert_eq!(bed.types_on(A100), vec![474; 7]);
    let card = bed.card(A100);
    assert_eq!(
        card.mig_mode,
        MigMode::Mode {
            current: 1,
            pending: 1
        }
    );
    assert_eq!(card.gpu_instances.len(), 7);
    assert!(card.gpu_instances.iter().all(|gi| gi.profile_id == 19));

    let again = bed.run(Some("A100-1-5C"));
    assert_eq!(again.outcome, ApplyOutcome::Done, "{again:#?}");
    assert_eq!(again.writes(), 0);
    assert_eq!(bed.writes(), writes, "a second apply wrote");
}

#[test]
fn a_mixed_config_on_an_h100_sizes_its_instances_from_the_catalogue() {
    let mut bed = Bed::new();
    let report = bed.run(Some("H100-mixed"));
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    let mut types = bed.types_on(H100);
    types.sort_unstable();
    assert_eq!(types, vec![900001, 900001, 900004, 900005]);
    let card = bed.card(H100);
    let mut profiles: Vec<u32> = card.gpu_instances.iter().map(|gi| gi.profile_id).collect();
    profiles.sort_unstable();
    // One GPU instance per vGPU: 1g.10gb (19) twice, 2g.20gb (14), 3g.40gb (9).
    assert_eq!(profiles, vec![9, 14, 19, 19]);
    let writes = bed.writes();
    assert!(first(&writes, "sriov-manage -e") < first(&writes, "nvmlDeviceCreateGpuInstance"));
    // The A100, which the config does not name, is left alone.
    assert!(bed.types_on(A100).is_empty());
}

#[test]
fn a_config_that_drops_a_mig_backed_vgpu_clears_its_type_before_its_gpu_instance_is_destroyed() {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("H100-mixed")).outcome, ApplyOutcome::Done);
    let before = bed.writes().len();
    let report = bed.run(Some("H100-without-3-40C"));
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    let mut types = bed.types_on(H100);
    types.sort_unstable();
    assert_eq!(types, vec![900001, 900001, 900004]);
    let writes = bed.writes().split_off(before);
    // The 3-40C's type cleared (a 0 written), then its GPU instance destroyed: the driver keeps
    // a GPU instance a vGPU sits on.
    assert!(
        first(&writes, "current_vgpu_type") < first(&writes, "nvmlGpuInstanceDestroy"),
        "{writes:#?}"
    );
}

#[test]
fn a_time_sliced_config_leaves_mig_off_and_fills_the_vfs_in_order() {
    let mut bed = Bed::new();
    let report = bed.run(Some("A100-10C"));
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    assert_eq!(bed.types_on(A100), vec![471; 4]);
    assert!(
        !bed.writes()
            .iter()
            .any(|line| line.starts_with("nvmlDeviceSetMigMode"))
    );
    let plan = &report.gpus[0].nvidia_work().unwrap().vgpu_plan;
    assert_eq!(plan[0], VgpuStep::EnableVfs);
    assert!(matches!(
        plan[1],
        VgpuStep::WriteType { index: 0, id, .. } if id.get() == 471
    ));
}

#[test]
fn more_vgpus_than_the_card_holds_are_refused_before_any_write() {
    let mut bed = Bed::new();
    let report = bed.run(Some("A100-too-many"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible),
        "{report:#?}"
    );
    let impossible = report.impossible.as_ref().unwrap();
    assert_eq!(impossible.kind, mig_layout::ImpossibleKind::VgpuTooMany);
    assert_eq!(impossible.device.to_string(), A100);
    assert!(bed.writes().is_empty(), "{:#?}", bed.writes());
}

#[test]
fn a_config_whose_mig_layout_cannot_hold_its_types_is_refused_before_any_write_with_the_reason() {
    let mut bed = Bed::new();
    let report = bed.run(Some("A100-does-not-fit"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible),
        "{report:#?}"
    );
    let detail = report.detail.clone().unwrap_or_default();
    assert!(
        detail.contains("4g.20gb") || detail.contains("3g.20gb"),
        "{detail}"
    );
    assert!(bed.writes().is_empty(), "{:#?}", bed.writes());
}

/// Asserts that `report` was blocked by the VM [`Bed::vm_on_vf0`] puts on VF 0, naming the VF
/// and the VM's process.
#[track_caller]
fn blocked_by_the_vm_on_vf0(report: &ApplyReport) {
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::GpuBusy),
        "{report:#?}"
    );
    let detail = report.detail.clone().unwrap_or_default();
    assert!(
        detail.contains("0000:3b:00.4 (virtual function 0 of 0000:3b:00.0)"),
        "{detail}"
    );
    assert!(detail.contains("pid 4242 (qemu-kvm)"), "{detail}");
}

#[test]
fn a_vm_on_a_vf_blocks_a_change_of_its_vfs_before_any_write_naming_the_vf_and_the_pid() {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("A100-10C")).outcome, ApplyOutcome::Done);
    // A VM holds VF 0's VFIO group open.
    bed.vm_on_vf0();
    let before = bed.writes();
    for config in [Some("A100-1-5C"), None] {
        let report = bed.run(config);
        blocked_by_the_vm_on_vf0(&report);
        assert_eq!(bed.writes(), before);
    }
}

#[test]
fn leave_disables_the_vfs_first_then_turns_mig_off() {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("A100-1-5C")).outcome, ApplyOutcome::Done);
    let applied = bed.writes().len();
    let report = bed.run(None);
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    let writes = bed.writes()[applied..].to_vec();
    assert!(first(&writes, "sriov-manage -d") < first(&writes, "nvmlDeviceSetMigMode 0"));
    // sriov-manage -d took the instances with the VFs: none is left to destroy.
    assert!(
        !writes
            .iter()
            .any(|line| line.starts_with("nvmlGpuInstanceDestroy")),
        "{writes:#?}"
    );
    assert!(
        read_sriov(bed.host.sysfs_root(), A100.parse().unwrap())
            .unwrap()
            .unwrap()
            .vfs
            .is_empty()
    );
    assert_eq!(
        bed.card(A100).mig_mode,
        MigMode::Mode {
            current: 0,
            pending: 0
        }
    );
}

#[test]
fn the_vgpus_applied_are_declared_and_hold_until_a_type_is_taken_off_a_vf() {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("A100-10C")).outcome, ApplyOutcome::Done);
    assert_eq!(bed.holding(), Holding::Holds);
    // Another hand clears VF 2's type: the next sync finds one A100-10C fewer.
    gpu_host_probe::vf::VgpuTypes::write(
        &bed.fake.types,
        bed.host.sysfs_root(),
        mig_layout::vgpu::VfTypeFile {
            gpu: A100.parse().unwrap(),
            index: 2,
        },
        None,
    )
    .unwrap();
    let sync = bed.sync(AfterBoot::No);
    assert_eq!(sync.reason, HostReason::LayoutDrifted, "{sync:#?}");
    let facts: Vec<&Fact> = sync.drift.iter().map(|d| &d.fact).collect();
    assert!(
        matches!(
            facts[..],
            [Fact::VfType {
                index: 2,
                found: None,
                wanted: Some(_),
            }]
        ),
        "{:#?}",
        sync.drift
    );
}

#[test]
fn two_vfs_that_swap_types_drift_naming_both_and_a_restore_puts_each_type_back_on_its_vf() {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("H100-mixed")).outcome, ApplyOutcome::Done);
    let gpu: gpu_partition_types::Bdf = H100.parse().unwrap();
    let types_now = |bed: &Bed| -> Vec<(u32, Option<u32>)> {
        match host_sync::sriov::read_vf_types(bed.host.sysfs_root(), gpu) {
            layout_model::VfsRead::Read(vfs) => vfs
                .iter()
                .map(|vf| (vf.index, vf.type_id.map(|id| id.get())))
                .filter(|(_, type_id)| type_id.is_some())
                .collect(),
            unread => panic!("{unread:?}"),
        }
    };
    let before = types_now(&bed);
    // VF 1 holds a 1-10C and VF 2 the 2-20C (the free VFs filled in index order); another hand
    // swaps them.
    let (one, two) = (before[1], before[2]);
    assert_ne!(one.1, two.1, "{before:?}");
    let write = |index: u32, id: u32| {
        gpu_host_probe::vf::VgpuTypes::write(
            &bed.fake.types,
            bed.host.sysfs_root(),
            mig_layout::vgpu::VfTypeFile { gpu, index },
            gpu_partition_types::VgpuTypeId::new(id),
        )
        .unwrap();
    };
    write(one.0, 0);
    write(two.0, 0);
    write(one.0, two.1.unwrap());
    write(two.0, one.1.unwrap());
    let sync = bed.sync(AfterBoot::No);
    assert_eq!(sync.reason, HostReason::LayoutDrifted, "{sync:#?}");
    let named: Vec<u32> = sync
        .drift
        .iter()
        .filter_map(|d| match &d.fact {
            Fact::VfType { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(named, [one.0, two.0], "{:#?}", sync.drift);
    let Restore::Ran(report) = bed.restore() else {
        panic!("the restore did not run");
    };
    assert_outcome(&report, ApplyOutcome::Done);
    assert_eq!(types_now(&bed), before, "each type back on its VF");
    assert_eq!(bed.holding(), Holding::Holds);
}

#[test]
fn after_a_reboot_the_sync_names_the_vfs_gone_and_a_restore_brings_each_vf_and_type_back() {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("A100-1-5C")).outcome, ApplyOutcome::Done);
    bed.reboot();
    assert!(bed.types_on(A100).is_empty());
    let sync = bed.sync(AfterBoot::Yes);
    assert_eq!(sync.reason, HostReason::LayoutDrifted, "{sync:#?}");
    assert!(
        sync.drift
            .iter()
            .any(|d| d.kind() == DifferenceKind::VfsGone && d.device == A100.parse().unwrap()),
        "{:#?}",
        sync.drift
    );
    assert!(
        sync.message
            .as_deref()
            .unwrap_or_default()
            .contains("no virtual function is enabled; 7 vGPU(s)"),
        "{:?}",
        sync.message
    );
    assert_ne!(bed.holding(), Holding::Holds);
    let Restore::Ran(report) = bed.restore() else {
        panic!("nothing restored");
    };
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    assert_eq!(bed.types_on(A100), vec![474; 7]);
    let writes = bed.writes();
    let after = writes
        .iter()
        .rposition(|line| line.starts_with("sriov-manage -e"))
        .unwrap();
    assert!(
        writes[after..]
            .iter()
            .any(|line| line.starts_with("nvmlDeviceCreateGpuInstance"))
    );
    assert_eq!(bed.holding(), Holding::Holds);
    let sync = bed.sync(AfterBoot::No);
    assert_eq!(sync.reason, HostReason::Ready, "{sync:#?}");
}

#[test]
fn a_vm_on_a_vf_a_restore_would_write_blocks_it_before_any_write_naming_the_vf_and_the_pid() {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("A100-10C")).outcome, ApplyOutcome::Done);
    // VF 0's type taken off by another hand, and a VM holding VF 0's VFIO group: the restore
    // would write VF 0.
    gpu_host_probe::vf::VgpuTypes::write(
        &bed.fake.types,
        bed.host.sysfs_root(),
        mig_layout::vgpu::VfTypeFile {
            gpu: A100.parse().unwrap(),
            index: 0,
        },
        None,
    )
    .unwrap();
    bed.vm_on_vf0();
    let before = bed.writes();
    let Restore::Ran(report) = bed.restore() else {
        panic!("nothing restored");
    };
    blocked_by_the_vm_on_vf0(&report);
    assert_eq!(bed.writes(), before);
    assert_eq!(bed.types_on(A100), vec![471; 3]);
}

#[test]
fn heterogeneous_mode_is_set_after_sriov_manage_enables_the_vfs_and_again_by_a_restore_after_a_reboot()
 {
    // The A100 part does not publish what NVML answers for the mode: this bed's card has it,
    // off. A config of no type yet: the fake does not model the placements a card in
    // heterogeneous mode creates by.
    let mut bed = Bed::with(|scenario| {
        scenario["devices"][0]["vgpu_heterogeneous_mode"] = false.into();
    });
    let spec = mig_layout::vgpu::VgpuSpec::new(
        mig_layout::Devices::Listed(vec![mig_layout::DeviceRef::Index(0)]),
        Vec::new(),
    )
    .with_heterogeneous(true);
    let apply = |bed: &mut Bed| {
        bed.with_run(|run, options| {
            apply_vgpu(run, "heterogeneous", std::slice::from_ref(&spec), options).unwrap()
        })
    };
    let report = apply(&mut bed);
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    let writes = bed.writes();
    assert!(
        first(&writes, "sriov-manage -e") < first(&writes, "nvmlDeviceSetVgpuHeterogeneousMode 1"),
        "{writes:#?}"
    );
    assert_eq!(bed.card(A100).vgpu_heterogeneous_mode, Some(true));
    assert_eq!(
        report.gpus[0].nvidia_work().unwrap().vgpu_done,
        [VgpuStep::EnableVfs, VgpuStep::Heterogeneous]
    );
    let again = apply(&mut bed);
    assert_eq!(again.outcome, ApplyOutcome::Done, "{again:#?}");
    assert_eq!(bed.writes(), writes, "a second apply wrote");

    bed.reboot();
    assert_eq!(bed.card(A100).vgpu_heterogeneous_mode, Some(false));
    let Restore::Ran(restored) = bed.restore() else {
        panic!("nothing restored");
    };
    assert_eq!(restored.outcome, ApplyOutcome::Done, "{restored:#?}");
    assert_eq!(bed.card(A100).vgpu_heterogeneous_mode, Some(true));
    let writes = bed.writes();
    assert!(
        last(&writes, "sriov-manage -e") < last(&writes, "nvmlDeviceSetVgpuHeterogeneousMode 1"),
        "{writes:#?}"
    );
}

#[test]
fn two_time_sliced_types_without_heterogeneous_mode_are_blocked_before_any_write_the_vgpus_left_running()
 {
    let mut bed = Bed::new();
    assert_eq!(bed.run(Some("A100-10C")).outcome, ApplyOutcome::Done);
    let before = bed.writes();
    let report = bed.run(Some("A100-two-time-sliced"));
    assert_outcome(
        &report,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible),
    );
    let impossible = report.impossible.as_ref().unwrap();
    assert_eq!(
        impossible.kind,
        mig_layout::ImpossibleKind::VgpuTypesTogether
    );
    assert_detail_says(&report, "A100-10C, A100-20C");
    assert_eq!(
        bed.writes(),
        before,
        "no write: the running vGPUs are untouched"
    );
    assert_eq!(bed.holding(), Holding::Holds);
}

#[test]
fn a_sriov_manage_that_keeps_failing_is_typed_in_its_gpus_report_with_its_end_and_what_it_said() {
    // `-e` fails every time, as a card's firmware can at boot (the fake's `enable_failures`);
    // the pauses between tries are the run's virtual clock's.
    let mut bed = Bed::with(|scenario| {
        scenario["devices"][0]["sriov"]["enable_failures"] = 99.into();
    });
    let report = bed.run(Some("A100-10C"));
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::StepRefused));
    let gpu = report
        .gpus
        .iter()
        .find(|gpu| gpu.device.to_string() == A100)
        .unwrap();
    match &gpu.failure {
        Some(WriteFailure::Program {
            program,
            command,
            end,
            ..
        }) => {
            assert_eq!(*program, "sriov-manage");
            assert!(command.contains(A100), "{command}");
            assert_eq!(*end, RunResult::Exited(1), "{end:?}");
        }
        other => panic!("{other:?}"),
    }
    let detail = gpu.detail.as_deref().unwrap_or_default();
    assert!(detail.contains(A100), "{detail}");
}
