//! The partition-mode rules of a sync, as pure functions over records.

use crate::gpu::GpuRecord;
use crate::pci::PciFunction;
use crate::reason::GpuReason;
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
/// Answers the GPUs to read (NVIDIA bound to `nvidia`), in address order.
pub fn mark_not_checked(gpus: &[PciFunction], records: &mut BTreeMap<Bdf, GpuRecord>) -> Vec<Bdf> {
    let mut to_read = Vec::new();
    for gpu in gpus {
        match (gpu.not_read_reason(), records.get_mut(&gpu.bdf)) {
            (Some(reason), Some(record)) => {
                record.set(PartitionMode::NotChecked, Some(GpuReason::NotRead(reason)));
            }
            (None, Some(_)) => to_read.push(gpu.bdf),
            (_, None) => {}
        }
    }
    to_read
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
