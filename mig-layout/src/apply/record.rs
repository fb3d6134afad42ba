//! The apply's record in the host state: `applying` with the host `entering`/`leaving`
//! (`layout_applying`) when writes begin, then how it ended.

use crate::report::{ApplyOutcome, ApplyReason};
use crate::select::HostGpu;
use gpu_partition_types::{PartitionMode, Token};
use host_sync::{
    Direction, GpuRecord, HostReason, LayoutOutcome, LayoutRecord, StateStore, StoreError,
    StoredReason,
};

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or_default()
}

fn token(text: &str) -> StoredReason {
    StoredReason::new(text).unwrap_or_default()
}

/// The record of an apply of `label` going `direction` that starts now, over the stored one
/// (an interrupted apply before it settled as failed, its failure kept).
pub(super) fn started(
    store: &mut dyn StateStore,
    label: &str,
    direction: Direction,
) -> Result<LayoutRecord, StoreError> {
    let state = store.load()?.unwrap_or_default();
    let previous = state.layout.map(|record| record.settled(unix_now()));
    Ok(LayoutRecord::applying(
        label,
        direction,
        unix_now(),
        previous.as_ref(),
    ))
}

/// Writes the host `direction` with `layout_applying`, and `record` as running.
pub(super) fn begin(store: &mut dyn StateStore, record: &LayoutRecord) -> Result<(), StoreError> {
    let mut state = store.load()?.unwrap_or_default();
    state.status = record.direction.status();
    state.reason = HostReason::LayoutApplying.into();
    state.message = Some(format!("applying the layout {:?}", record.label));
    state.layout = Some(record.clone());
    store.save(&state)
}

/// Writes how the apply ended. After writes began the host is `direction` with
/// `layout_failed` (and the message) while a failure is unhealed, else with `gpus_pending`
/// until the sync that follows classifies it; a blocked apply leaves the host fields as they
/// are. Each GPU's mode becomes the one its last read gave (`read`): the sync that follows reads
/// no card with the pool off, and must know what the apply left.
pub(super) fn end(
    store: &mut dyn StateStore,
    record: LayoutRecord,
    outcome: ApplyOutcome,
    detail: &str,
    read: &[(HostGpu, PartitionMode)],
) -> Result<(), StoreError> {
    let wrote = !read.is_empty();
    let reason = |reason: ApplyReason| token(reason.as_str());
    let (ended, why) = match outcome {
        ApplyOutcome::Done | ApplyOutcome::DryRun => (LayoutOutcome::Done, StoredReason::none()),
        ApplyOutcome::Blocked(why) => (LayoutOutcome::Blocked, reason(why)),
        ApplyOutcome::Failed(why) => (LayoutOutcome::Failed, reason(why)),
        ApplyOutcome::ColdRebootRequired(why) => {
            (LayoutOutcome::ColdRebootRequired, token(why.as_str()))
        }
    };
    let message = (!detail.is_empty()).then(|| detail.to_owned());
    let finished = record.finish(ended, why, message, unix_now());
    let mut state = store.load()?.unwrap_or_default();
    if wrote {
        let failure = finished.failure();
        state.status = finished.direction.status();
        state.reason = if failure.is_some() {
            HostReason::LayoutFailed.into()
        } else {
            HostReason::GpusPending.into()
        };
        state.message = failure.map(|failure| failure.message);
    }
    for (gpu, mode) in read {
        let record = state.gpus.entry(gpu.bdf).or_insert_with(|| {
            GpuRecord::new(
                format!("{:04x}", gpu.id.vendor),
                format!("{:04x}", gpu.id.device),
                Some("nvidia".to_owned()),
                *mode,
            )
        });
        host_sync::modes::read_answered(record, *mode);
    }
    state.layout = Some(finished);
    store.save(&state)
}
