//! The conformance suite's fullest state ([`full_state`]): every field set, a GPU for each kind
//! of reason, and the divisions it keeps — an NVIDIA GPU's (a GPU instance with its compute
//! instance and owner, a MIG-backed vGPU on it) and an AMD GPU's.

use super::{bdf, reason};
use crate::gpu::{AmdRecord, GpuRecord, MemoryRequest};
use crate::reason::{AmdUnread, GpuReason, NotRead};
use crate::record::{Direction, LayoutOutcome, LayoutRecord};
use crate::state::HostState;
use crate::status::HostStatus;
use gpu_host_probe::Boot;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_partition_types::{Bdf, PartitionMode, UnreadableReason};

/// An NVIDIA GPU's division: a 3g.40gb GPU instance with its compute instance (recorded), a
/// MIG-backed vGPU on it (found), read in `boot` with a record of writes; `unread`: a read since
/// did not read it.
fn nvidia_division(
    boot: &Boot,
    unread: Option<layout_model::partition::Unread>,
) -> layout_model::partition::Division {
    use gpu_host_probe::{CardWrites, Ledger, Now};
    use gpu_partition_types::{Placement, VgpuTypeId};
    use layout_model::partition::{Division, Origin, Partition, PartitionProfile, Slot};
    let mut instance = Partition::new(
        Slot::GpuInstance { id: 2 },
        PartitionProfile::Mig {
            id: 9,
            name: Some("3g.40gb".to_owned()),
        },
        Origin::Recorded,
    );
    instance.placement = Some(Placement::new(4, 4));
    instance.compute = vec![0];
    instance.owner = layout_model::Owner::new("vm-5a3c9f0e").ok();
    let mut vgpu = Partition::new(
        Slot::Vf { index: 3 },
        PartitionProfile::Vgpu {
            type_id: VgpuTypeId::new(1061).unwrap_or(VgpuTypeId(std::num::NonZeroU32::MIN)),
            name: Some("NVIDIA H100-3-40C".to_owned()),
        },
        Origin::Inferred,
    );
    vgpu.on = Some(2);
    let ledger = Ledger::Read(CardWrites::new("18f2a-1234", 7, Default::default(), None));
    let now = Now::new(boot.clone(), ledger);
    let mut division = Division::after_read(
        None,
        bdf(0),
        layout_model::partition::ordered(vec![instance, vgpu]),
        1_767_229_190,
        &now,
    );
    if let Some(unread) = unread {
        division.not_read(unread);
    }
    division
}

/// AMD GPU `device`'s division: two DPX partitions, found, read in `boot` before any write.
fn amd_division(device: Bdf, boot: &Boot) -> layout_model::partition::Division {
    use gpu_host_probe::{Ledger, Now};
    use layout_model::partition::{Division, Origin, Partition, PartitionProfile, Slot};
    let partitions = (0..2)
        .map(|index| {
            Partition::new(
                Slot::AmdPartition { index },
                PartitionProfile::Amd {
                    compute: ComputePartition::Dpx,
                },
                Origin::Inferred,
            )
        })
        .collect();
    let now = Now::new(boot.clone(), Ledger::Empty);
    Division::after_read(
        None,
        device,
        layout_model::partition::ordered(partitions),
        1_767_229_150,
        &now,
    )
}

/// A state with every field set, and a GPU for each kind of reason.
pub(super) fn full_state() -> HostState {
    let mut state = HostState::new(HostStatus::Entering, reason("gpus_pending"));
    state.message = Some("a message for people: ünïcode, \"quotes\"\nand a newline".to_owned());
    state.boot = Boot::new(
        Some("5a3c9f0e-8a1b-4c2d-9e7f-0123456789ab".to_owned()),
        Some(1_767_225_600),
    );
    state.synced_at = Some(1_767_229_200);
    let failed = LayoutRecord::applying("all-1g.5gb", Direction::Entering, 1_767_229_000, None)
        .finish(
            LayoutOutcome::Failed(reason("step_refused")),
            Some("GPU 0000:3b:00.0: creating a GPU instance: insufficient resources".to_owned()),
            1_767_229_010,
        );
    state.layout = Some(
        LayoutRecord::applying(
            "all-balanced",
            Direction::Entering,
            1_767_229_100,
            Some(&failed),
        )
        .finish(
            LayoutOutcome::Blocked(reason("gpu_busy")),
            Some("pid 4242 (python3) holds 0000:3b:00.0".to_owned()),
            1_767_229_101,
        ),
    );
    let reasons: [(PartitionMode, Option<GpuReason>, Option<PartitionMode>); 7] = [
        (PartitionMode::Enabled, None, Some(PartitionMode::Enabled)),
        (
            PartitionMode::PossiblyEnabled,
            Some(GpuReason::Read(UnreadableReason::Timeout)),
            Some(PartitionMode::DisableOnReboot),
        ),
        (
            PartitionMode::Unknown,
            Some(GpuReason::Read(UnreadableReason::Helper(
                "driver_error".to_owned(),
            ))),
            None,
        ),
        (
            PartitionMode::PossiblyEnabled,
            Some(GpuReason::ReadInterrupted),
            Some(PartitionMode::EnableOnReboot),
        ),
        (
            PartitionMode::NotChecked,
            Some(GpuReason::NotRead(NotRead::NotNvidia)),
            None,
        ),
        (
            PartitionMode::NotChecked,
            Some(GpuReason::NotRead(NotRead::NoDriver)),
            None,
        ),
        (
            PartitionMode::NotChecked,
            Some(GpuReason::NotRead(NotRead::driver("vfio-pci"))),
            Some(PartitionMode::Disabled),
        ),
    ];
    for ((n, (mode, why, last_read)), device) in reasons.into_iter().enumerate().zip(0x2300..) {
        let driver = (n % 3 != 0).then(|| "nvidia".to_owned());
        let mut record = GpuRecord::new(0x10de, device, driver, mode);
        record.message = why.as_ref().map(|why| format!("why {why}"));
        record.reason = why;
        record.last_read = last_read;
        state.gpus.insert(bdf(n), record);
    }
    // The first GPU's partitions as last read (a GPU instance with its compute instance, a
    // MIG-backed vGPU on it), and the second's, which a read since did not read.
    if let Some(record) = state.gpus.get_mut(&bdf(0)) {
        let mut division = nvidia_division(&state.boot, None);
        // A declared 1g.10gb the card no longer admits at slice 0.
        division.unadmitted = vec![layout_model::Placed::new(
            19,
            gpu_partition_types::Placement::new(0, 1),
        )];
        record.division = Some(division);
        record.architecture = Some(gpu_partition_types::Architecture::Hopper.into());
    }
    if let Some(record) = state.gpus.get_mut(&bdf(1)) {
        record.division = Some(nvidia_division(
            &state.boot,
            Some(layout_model::partition::Unread::new(
                1_767_229_200,
                "the helper timed out",
            )),
        ));
    }
    // AMD Instinct GPUs: one read with a memory request of ours waiting for a driver reload,
    // one whose partitions did not read (its request kept).
    let first = state.gpus.len();
    let mut pending = GpuRecord::new(
        0x1002,
        0x74a1,
        Some("amdgpu".to_owned()),
        PartitionMode::EnableOnReboot,
    );
    pending.last_read = Some(PartitionMode::EnableOnReboot);
    let mut amd = AmdRecord::read(
        Some(ComputePartition::Spx),
        Some(MemoryPartition::Nps1),
        1_767_229_150,
    );
    amd.requested = Some(MemoryRequest::new(
        MemoryPartition::Nps4,
        1_767_229_140,
        state.boot.clone(),
    ));
    pending.amd = Some(amd.clone());
    pending.division = Some(amd_division(bdf(first), &state.boot));
    // Two GPUs that are not ours: an allocator's and another tool's.
    state
        .ownership
        .insert(bdf(1), gpu_host_probe::Ownership::Dynamic);
    state
        .ownership
        .insert(bdf(2), gpu_host_probe::Ownership::External);
    state.gpus.insert(bdf(first), pending);
    let mut in_reset = GpuRecord::new(
        0x1002,
        0x74a1,
        Some("amdgpu".to_owned()),
        PartitionMode::PossiblyEnabled,
    );
    in_reset.reason = Some(GpuReason::Amdgpu(AmdUnread::InReset));
    in_reset.message = Some("the GPU is in reset (EPERM)".to_owned());
    in_reset.amd = Some(AmdRecord {
        requested: amd.requested,
        ..AmdRecord::default()
    });
    state.gpus.insert(bdf(first + 1), in_reset);
    state
}
