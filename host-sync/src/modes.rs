//! The partition-mode rules of a sync, as pure functions over records.

// The rule of a request's end is the request's own (`gpu`); it is one of a sync's rules too.
pub use crate::gpu::still_waits;
use crate::gpu::{AmdRecord, GpuRecord};
use crate::pci::{PciFunction, ReadBy};
use crate::reason::GpuReason;
use gpu_host_probe::Boot;
use gpu_host_probe::amdgpu::{AmdError, AmdPartitions};
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_host_probe::helper::ReadFailure;
use gpu_partition_types::{Bdf, PartitionMode};
use std::collections::BTreeMap;

/// The records of the GPUs found now, carried over from `stored` (ids and driver refreshed) or
/// new (`not_in_use`). GPUs no longer on the host are dropped; a stored GPU whose sysfs entry the
/// scan could not read (`unread`) keeps its record untouched, so a flaky read never loses what
/// was known of it (a division above all).
pub fn carry_over(
    gpus: &[PciFunction],
    stored: &BTreeMap<Bdf, GpuRecord>,
    unread: &[Bdf],
) -> BTreeMap<Bdf, GpuRecord> {
    let kept = unread
        .iter()
        .filter_map(|bdf| stored.get(bdf).map(|record| (*bdf, record.clone())));
    gpus.iter()
        .map(|gpu| {
            let record = match stored.get(&gpu.bdf) {
                Some(record) => {
                    let mut record = record.clone();
                    record.refresh(gpu);
                    record
                }
                None => GpuRecord::first_seen(gpu),
            };
            (gpu.bdf, record)
        })
        .chain(kept)
        .collect()
}

/// The host does not take part (pool switch off, or no NVIDIA GPU): on the first start after a
/// boot every GPU becomes `not_in_use` unless it is last known divided (its mode, or the last
/// mode read from it, divided or possibly divided): those stay, and one left `unknown` by an
/// interrupted read becomes `possibly_enabled` (`read_interrupted`). A later start in the same
/// boot changes no GPU (new GPUs are `not_in_use` either way).
///
/// Stricter than looking at the mode alone: a run killed between the `unknown` written before a
/// read and its answer leaves a divided GPU `unknown`, and the boot reset must not clear it.
pub fn not_taking_part(records: &mut BTreeMap<Bdf, GpuRecord>, after_boot: bool) {
    if !after_boot {
        return;
    }
    for record in records.values_mut() {
        if !record.last_known_divided() {
            record.set(PartitionMode::NotInUse, None);
        } else if record.partition_mode == PartitionMode::Unknown {
            record.set(
                PartitionMode::PossiblyEnabled,
                Some(GpuReason::ReadInterrupted),
            );
            record.message = Some(
                "a read of this GPU never finished (the run that made it was stopped before \
                 its answer), and it was last known divided: it may still be"
                    .to_owned(),
            );
        }
    }
}

/// The host takes part: GPUs not read by design become `not_checked` with their reason.
/// Answers the GPUs to read `by` this way (NVIDIA bound to `nvidia` by the helper, AMD bound
/// to `amdgpu` from sysfs), in address order.
pub fn mark_not_checked(
    gpus: &[PciFunction],
    records: &mut BTreeMap<Bdf, GpuRecord>,
    by: ReadBy,
) -> Vec<Bdf> {
    let mut to_read = Vec::new();
    for gpu in gpus {
        match (gpu.read_by(), records.get_mut(&gpu.bdf)) {
            (Err(reason), Some(record)) => {
                record.set(PartitionMode::NotChecked, Some(GpuReason::NotRead(reason)));
            }
            (Ok(reader), Some(_)) if reader == by => to_read.push(gpu.bdf),
            (Ok(_), Some(_)) | (_, None) => {}
        }
    }
    to_read
}

/// An AMD GPU's partition mode from what amdgpu shows and a memory request of ours waiting for
/// a driver reload: divided (`enabled`) with more than one compute or memory partition; with a
/// request, `enable_on_reboot` or `disable_on_reboot` when the reload changes that (it sets the
/// memory partition requested, and the compute partition by the driver's AUTO rule, whose NPS1
/// is SPX: NPS1 is undivided after it, any other mode divided).
pub fn amd_mode(held: &AmdPartitions, requested: Option<MemoryPartition>) -> PartitionMode {
    let now = held.compute != ComputePartition::Spx
        || held
            .memory
            .is_some_and(|memory| memory != MemoryPartition::Nps1);
    let after = requested.map(|memory| memory != MemoryPartition::Nps1);
    match (now, after) {
        (false, Some(true)) => PartitionMode::EnableOnReboot,
        (true, Some(false)) => PartitionMode::DisableOnReboot,
        (true, _) => PartitionMode::Enabled,
        (false, _) => PartitionMode::Disabled,
    }
}

/// An AMD GPU read from sysfs at `now`, in `boot`: its mode ([`amd_mode`]) and partitions
/// recorded, or why they did not read (`unknown`, or `possibly_enabled` over a GPU last known
/// divided, with the reader's message); a GPU that shows no partition files is
/// `not_supported`. A memory request of ours ends once the GPU shows the mode (the reload came)
/// or in another boot (the driver that held it is gone); a failed read leaves it as it was.
pub fn amd_read(
    record: &mut GpuRecord,
    read: &Result<Option<AmdPartitions>, AmdError>,
    now: u64,
    boot: &Boot,
) {
    match read {
        Ok(None) => {
            read_answered(record, PartitionMode::NotSupported);
            // No partition files now (the driver mid-load, say): a request of ours is kept.
            let requested = record.amd.take().and_then(|amd| amd.requested);
            record.amd = requested.map(|request| AmdRecord {
                requested: Some(request),
                ..AmdRecord::default()
            });
        }
        Ok(Some(held)) => {
            let requested = record
                .amd
                .take()
                .and_then(|amd| amd.requested)
                .filter(|request| still_waits(request, held, boot));
            read_answered(
                record,
                amd_mode(held, requested.as_ref().map(|request| request.mode)),
            );
            let mut amd = AmdRecord::read(Some(held.compute), held.memory, now);
            amd.requested = requested;
            record.amd = Some(amd);
        }
        Err(error) => {
            let mode = if record.last_known_divided() {
                PartitionMode::PossiblyEnabled
            } else {
                PartitionMode::Unknown
            };
            record.set(
                mode,
                Some(GpuReason::Amdgpu(crate::reason::AmdUnread::of(error))),
            );
            record.message = Some(gpu_host_probe::chain::Chain(error).to_string());
            let requested = record.amd.take().and_then(|amd| amd.requested);
            record.amd = Some(AmdRecord {
                requested,
                ..AmdRecord::default()
            });
        }
    }
}

/// A GPU about to be read: `unknown`, so a crash during the read never leaves a stale answer.
pub fn about_to_read(record: &mut GpuRecord) {
    record.set(PartitionMode::Unknown, None);
}

/// A read that failed (or was never made, after a host-wide failure): `unknown` with the
/// reason and its message, or `possibly_enabled` over a GPU last known divided.
pub fn read_failed(record: &mut GpuRecord, failure: &ReadFailure) {
    let mode = if record.last_known_divided() {
        PartitionMode::PossiblyEnabled
    } else {
        PartitionMode::Unknown
    };
    record.set(mode, Some(GpuReason::Read(failure.reason.clone())));
    record.message = Some(failure.message.clone());
}

/// A read that answered: the mode the outcome maps to, remembered as the last one read.
pub fn read_answered(record: &mut GpuRecord, mode: PartitionMode) {
    record.set(mode, None);
    record.last_read = Some(mode);
}
