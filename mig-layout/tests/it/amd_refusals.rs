//! AMD Instinct partitions refused through the executor: before any write where the kernel, the
//! part, a holder, a client service or a request still waiting says no (no write, no reload),
//! and typed per GPU where the driver refuses a write once writes began.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{assert_detail_says, assert_outcome};
use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use gpu_host_probe::run::RunResult;
use gpu_partition_types::PartitionMode;
use host_sync::StateStore;
use host_sync::fake_amdgpu::{MI300X, MI355X};
use mig_layout::amd::AmdWant;
use mig_layout::{ApplyOutcome, ApplyReason, Restore, WriteFailure};

use crate::common::amd_bed::*;

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
    bed.exporter_running(Some(5151));
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
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::StepRefused));
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
    assert_outcome(&healed, ApplyOutcome::Done);
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
                assert_eq!(*program, "modprobe", "{device}");
                assert!(!matches!(end, RunResult::Exited(0)), "{device}: {end:?}");
            }
            other => panic!("{device}: {other:?}"),
        }
        let detail = gpu.detail.as_deref().unwrap_or_default();
        assert!(detail.starts_with(&device), "{device}: {detail}");
    }
}

#[test]
fn a_memory_change_the_firmware_refuses_fails_did_not_converge_and_no_request_waits_after() {
    let mut bed = Bed::new(MI300X);
    for gpu in &mut bed.fake.lock().unwrap().gpus {
        gpu.nps_change_fails = true;
    }
    let report = bed.apply("cpx-nps4");
    assert_ends(
        &report,
        ApplyOutcome::Failed(ApplyReason::DidNotConverge),
        "the request did not take effect",
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
    assert_ends(
        &report,
        ApplyOutcome::Blocked(ApplyReason::MemoryRequestPending),
        "NPS4 was requested and waits for a driver reload",
    );
    assert_eq!(bed.log().len(), before, "nothing written");
}

#[test]
fn a_compute_write_the_kernel_refuses_stops_that_gpu_and_the_others_hold() {
    let mut bed = Bed::new(MI300X);
    // A ROCm process the holders' scan did not see: the kernel answers EBUSY.
    bed.fake.lock().unwrap().gpus[3].held = true;
    let report = bed.apply("qpx-nps1");
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::StepRefused));
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
    assert_outcome(
        &report,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible),
    );
    assert_detail_says(
        &report,
        "TPX is not offered once its memory partition is NPS4",
    );
    assert_eq!(bed.log(), Vec::<String>::new(), "no request, no reload");
    assert_eq!((report.reload_planned, report.reloads), (false, 0));
    let impossible = report.impossible.as_ref().unwrap();
    assert_eq!(
        (impossible.kind, impossible.profile.as_deref()),
        (mig_layout::ImpossibleKind::AmdNotOffered, Some("TPX"))
    );
}
