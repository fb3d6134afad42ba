//! Leaving AMD partitioning (`leave_amd`): every AMD GPU that partitions made one undivided GPU,
//! SPX with NPS1, by the executor `apply_amd` uses — one reload for a memory change, declared
//! `leave` — and nothing written when the GPUs are undivided already.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::amd_bed::*;
use crate::common::assert_outcome;
use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M, read_partitions};
use host_sync::StateStore;
use host_sync::fake_amdgpu::MI300X;
use layout_model::DeclaredGpu;
use layout_model::amd::AmdWant;
use mig_layout::amd::leave_amd;
use mig_layout::{ApplyOutcome, ApplyReason, ApplyReport};

impl Bed {
    fn leave(&mut self) -> ApplyReport {
        self.run(|run, options| leave_amd(run, options).unwrap())
    }
}

#[test]
fn leave_after_cpx_nps4_makes_every_gpu_spx_nps1_with_one_reload_and_declares_it() {
    let mut bed = Bed::new(MI300X);
    assert_eq!(bed.apply("cpx-nps4").outcome, ApplyOutcome::Done);
    let left = bed.leave();
    assert_outcome(&left, ApplyOutcome::Done);
    assert_eq!(left.label, "leave");
    assert_eq!(bed.reloads(), 2, "the apply's and the leave's");
    for index in 0..8 {
        let read = read_partitions(bed.host.sysfs_root(), at(index))
            .unwrap()
            .unwrap();
        assert_eq!(
            (read.compute, read.memory),
            (C::Spx, Some(M::Nps1)),
            "GPU {index}"
        );
    }
    let declared = bed.store.load().unwrap().unwrap().declared.unwrap();
    assert_eq!(declared.label, "leave");
    assert_eq!(declared.gpus.len(), 8);
    for gpu in declared.gpus.values() {
        match gpu {
            DeclaredGpu::Amd(amd) => assert_eq!(amd.want, AmdWant::UNDIVIDED),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn leave_on_undivided_gpus_writes_nothing_and_reloads_nothing() {
    let mut bed = Bed::new(MI300X);
    let left = bed.leave();
    assert_outcome(&left, ApplyOutcome::Done);
    assert_eq!(left.writes(), 0);
    assert_eq!(bed.log(), Vec::<String>::new());
}

#[test]
fn leave_is_blocked_before_any_write_by_a_process_holding_a_gpu() {
    let mut bed = Bed::new(MI300X);
    assert_eq!(bed.apply("qpx-nps1").outcome, ApplyOutcome::Done);
    let before = bed.log();
    bed.holder(4242, "rocm-bench", "/dev/dri/renderD131");
    let left = bed.leave();
    assert_outcome(&left, ApplyOutcome::Blocked(ApplyReason::GpuBusy));
    assert_eq!(bed.log(), before, "no write");
}

#[test]
fn leave_is_blocked_by_a_client_service_its_declaration_kept_though_the_caller_names_none() {
    let mut bed = Bed::new(MI300X);
    assert_eq!(bed.apply("qpx-nps1").outcome, ApplyOutcome::Done);
    let before = bed.log();
    // The leave reads no Device Config Manager file, and the caller names no service.
    bed.services.clear();
    bed.exporter_running(Some(5151));
    let left = bed.leave();
    assert_ends(
        &left,
        ApplyOutcome::Blocked(ApplyReason::GpuBusy),
        "amd-metrics-exporter.service is running (pid 5151)",
    );
    assert_eq!(bed.log(), before, "no write");
    // Stopped, the leave runs, and its declaration keeps the service.
    bed.exporter_running(None);
    assert_eq!(bed.leave().outcome, ApplyOutcome::Done);
    let declared = bed.store.load().unwrap().unwrap().declared.unwrap();
    for gpu in declared.gpus.values() {
        match gpu {
            DeclaredGpu::Amd(amd) => {
                assert_eq!(amd.client_services, ["amd-metrics-exporter"]);
            }
            other => panic!("{other:?}"),
        }
    }
}
