//! The host state an apply writes, under the host lock: [`start_apply`], [`begin_apply`] and
//! [`end_apply`], the one writer of the host state beside the sync. The layout executor
//! (crate `mig-layout`) calls them: `applying` when writes start (with the host `entering` or
//! `leaving`, reason `layout_applying`), then how it ended, with what the host is declared to
//! be.

use crate::pci::ScanError;
use crate::record::{Direction, LayoutOutcome, LayoutRecord};
use crate::state::BootRestore;
use crate::status::HostReason;
use crate::store::{StateStore, StoreError, save_checked};
use gpu_host_probe::Clock;
use gpu_host_probe::{Boot, BootMatch, HostLock};
use gpu_partition_types::{Bdf, PartitionMode};
use layout_model::{Declaration, DeclaredGpu};
use std::collections::BTreeMap;

/// How an apply ended, as [`end_apply`] records it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplyEnd {
    /// How it ended (`done`, `blocked`, `failed`, `cold_reboot_required`), with its reason.
    pub outcome: LayoutOutcome,
    /// What happened, for people.
    pub message: Option<String>,
    /// Whether it wrote to any card (a blocked apply did not: the host fields stay as they are).
    pub wrote: bool,
    /// What it read last of each GPU: the sync that follows reads no card with the pool off,
    /// and must know what the apply left.
    pub read: Vec<(Bdf, GpuRead)>,
    /// What the host is declared to be from now on: the GPUs it named, each as applied (an
    /// apply that wrote declares; a blocked one, a dry run, or one that ended before its first
    /// write does not, and the declaration before it stands).
    pub declared: Option<BTreeMap<Bdf, DeclaredGpu>>,
}

impl ApplyEnd {
    /// An apply that ended with `outcome` (`message` for people), having written or not; no
    /// mode read, nothing declared (set them as fields).
    pub fn new(outcome: LayoutOutcome, message: Option<String>, wrote: bool) -> Self {
        Self {
            outcome,
            message,
            wrote,
            read: Vec::new(),
            declared: None,
        }
    }
}

/// What an apply read last of a GPU, by its vendor's side, for [`end_apply`] to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuRead {
    /// An NVIDIA GPU: the mode the helper's last reply gave.
    Nvidia(PartitionMode),
    /// An AMD GPU: [`end_apply`] reads its partitions again from sysfs (amdgpu's files cost
    /// nothing to read).
    Amd,
}

/// The record of an apply of `label` going `direction` that starts now, under `lock`, over the
/// stored one (an interrupted apply before it settled as failed, its failure kept). Nothing is
/// written: [`begin_apply`] writes it once the apply is to write.
pub fn start_apply(
    _lock: &HostLock,
    store: &mut dyn StateStore,
    clock: &dyn Clock,
    label: &str,
    direction: Direction,
) -> Result<LayoutRecord, StoreError> {
    let state = store.load()?.unwrap_or_default();
    let now = clock.unix_s();
    let previous = state.layout.map(|record| record.settled(now));
    Ok(LayoutRecord::applying(
        label,
        direction,
        now,
        previous.as_ref(),
    ))
}

/// Writes, under `lock`, the host `direction` with `layout_applying` and `record` as running:
/// from here on the host is between layouts until [`end_apply`] says how the apply ended.
pub fn begin_apply(
    _lock: &HostLock,
    store: &mut dyn StateStore,
    record: &LayoutRecord,
) -> Result<(), StoreError> {
    let mut state = store.load()?.unwrap_or_default();
    state.status = record.direction.status();
    state.reason = HostReason::LayoutApplying.into();
    state.message = Some(format!("applying the layout {:?}", record.label));
    state.layout = Some(record.clone());
    store.save(&state)
}

/// Writes, under `lock`, how the apply of `record` ended. After writes began the host is
/// `direction` with `layout_failed` (and the message) while a failure is unhealed, else with
/// `gpus_pending` until the sync that follows classifies it; a blocked apply leaves the host
/// fields as they are. Each GPU read gets the mode it gave (its record made first, from the
/// host's sysfs, where the state has none), and what the apply declares replaces the
/// declaration of those GPUs (the others' stay), unchecked until the next sync reads them, one
/// generation on; a state that was lost is then no longer (the host is declared anew). The state
/// is read back once saved: a store that did not keep a member is
/// [`StoreError::NotKept`], naming it.
pub fn end_apply(
    lock: &HostLock,
    store: &mut dyn StateStore,
    clock: &dyn Clock,
    record: LayoutRecord,
    end: ApplyEnd,
) -> Result<(), ApplyStateError> {
    let now = clock.unix_s();
    let finished = record.finish(end.outcome, end.message, now);
    let mut state = store.load()?.unwrap_or_default();
    if end.wrote {
        let failure = finished.failure();
        state.status = finished.direction.status();
        state.reason = if failure.is_some() {
            HostReason::LayoutFailed.into()
        } else {
            HostReason::GpusPending.into()
        };
        state.message = failure.map(|failure| failure.message);
    }
    with_records(lock, &mut state, end.read.iter().map(|(bdf, _)| bdf))?;
    let boot = lock.host().boot().or(&state.boot);
    let mut amd = Vec::new();
    for (bdf, read) in &end.read {
        match read {
            GpuRead::Nvidia(mode) => {
                if let Some(gpu) = state.gpus.get_mut(bdf) {
                    crate::modes::read_answered(gpu, *mode);
                }
            }
            GpuRead::Amd => amd.push(*bdf),
        }
    }
    if !amd.is_empty() {
        // Only the GPUs amdgpu drives now (a failed load leaves them unbound: not read).
        let found = crate::pci::scan(lock.host().sysfs_root())?;
        let on_amdgpu = |bdf: &Bdf| {
            found
                .gpus
                .iter()
                .any(|gpu| gpu.bdf == *bdf && gpu.is_read_by(crate::pci::ReadBy::Amdgpu))
        };
        for bdf in amd.iter().filter(|bdf| on_amdgpu(bdf)) {
            if let Some(gpu) = state.gpus.get_mut(bdf) {
                let read = gpu_host_probe::amdgpu::read_partitions(lock.host().sysfs_root(), *bdf);
                crate::modes::amd_read(gpu, &read, now, &boot);
            }
        }
    }
    if let Some(gpus) = end.declared {
        state.declared = Some(Declaration::new(
            &finished.label,
            now,
            state.declared.as_ref(),
            gpus,
        ));
        state.lost = None;
    }
    state.layout = Some(finished);
    save_checked(store, &state)?;
    Ok(())
}

/// Gives each GPU of `devices` the state has no record of one (from the host's sysfs).
fn with_records<'d>(
    lock: &HostLock,
    state: &mut crate::state::HostState,
    mut devices: impl Iterator<Item = &'d Bdf>,
) -> Result<(), ScanError> {
    if devices.any(|bdf| !state.gpus.contains_key(bdf)) {
        let found = crate::pci::scan(lock.host().sysfs_root())?;
        let unread: Vec<Bdf> = found.skipped.iter().filter_map(|entry| entry.bdf).collect();
        state.gpus = crate::modes::carry_over(&found.gpus, &state.gpus, &unread);
    }
    Ok(())
}

/// Records, under `lock`, that `mode` was requested of the AMD GPUs `devices` (every GPU of
/// the XGMI hive a request reaches), in the boot now: the kernel shows no pending request, so
/// this record is what says one waits for a driver reload (each GPU's mode `enable_on_reboot`
/// or `disable_on_reboot` where the reload changes whether it is divided). A read that shows
/// the mode, or a read in another boot, ends it ([`crate::modes::amd_read`]). Written before
/// the reload, so a crash between the two leaves it said.
pub fn request_memory(
    lock: &HostLock,
    store: &mut dyn StateStore,
    clock: &dyn Clock,
    devices: &[Bdf],
    mode: gpu_host_probe::amdgpu::MemoryPartition,
) -> Result<(), ApplyStateError> {
    let mut state = store.load()?.unwrap_or_default();
    with_records(lock, &mut state, devices.iter())?;
    let boot = lock.host().boot().or(&state.boot);
    let now = clock.unix_s();
    for bdf in devices {
        let Some(gpu) = state.gpus.get_mut(bdf) else {
            continue;
        };
        let amd = gpu.amd.get_or_insert_with(crate::gpu::AmdRecord::default);
        amd.requested = Some(crate::gpu::MemoryRequest::new(mode, now, boot.clone()));
        if let (Some(compute), memory) = (amd.compute, amd.memory) {
            let held = gpu_host_probe::amdgpu::AmdPartitions::new(
                (compute, Vec::new()),
                memory,
                Vec::new(),
                None,
            );
            let pending = crate::modes::amd_mode(&held, Some(mode));
            crate::modes::read_answered(gpu, pending);
        }
    }
    save_checked(store, &state)?;
    Ok(())
}

/// Records, under `lock`, that no memory request waits on the AMD GPUs `devices` any more: the
/// driver was reloaded by us (every request went to the firmware at the unload, whether the
/// mode took or not: what the GPUs show says which), or the request's write was refused (the
/// kernel cached nothing).
pub fn requests_ended(
    _lock: &HostLock,
    store: &mut dyn StateStore,
    devices: &[Bdf],
) -> Result<(), ApplyStateError> {
    let mut state = store.load()?.unwrap_or_default();
    let mut changed = false;
    for bdf in devices {
        if let Some(amd) = state.gpus.get_mut(bdf).and_then(|gpu| gpu.amd.as_mut()) {
            changed |= amd.requested.take().is_some();
        }
    }
    if changed {
        save_checked(store, &state)?;
    }
    Ok(())
}

/// Whether a boot restore is to run ([`begin_boot_restore`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BootRestoreStart {
    /// None ran in this boot: this one is recorded as the boot's, and runs.
    Run,
    /// One already ran in this boot: nothing is to be done.
    AlreadyRan(BootRestore),
}

/// Decides, under `lock`, whether a boot restore runs in the boot `boot`: once per boot — one
/// recorded in the same boot ([`gpu_host_probe::Boot::compare`]) means this one does nothing;
/// else this one is recorded (before it writes anything, so a second in the same boot never
/// repeats it, even after a crash) and runs. A boot that cannot be told apart from the
/// recorded one runs (a restore applies the declaration by diff: it changes nothing that holds,
/// and no warm reset repeats one that left a card needing a cold reboot).
pub fn begin_boot_restore(
    _lock: &HostLock,
    store: &mut dyn StateStore,
    clock: &dyn Clock,
    boot: &Boot,
) -> Result<BootRestoreStart, StoreError> {
    let mut state = store.load()?.unwrap_or_default();
    if let Some(earlier) = &state.restored_at_boot {
        if earlier.boot.compare(boot) == BootMatch::Same {
            return Ok(BootRestoreStart::AlreadyRan(earlier.clone()));
        }
    }
    state.restored_at_boot = Some(BootRestore::new(boot.clone(), clock.unix_s()));
    save_checked(store, &state)?;
    Ok(BootRestoreStart::Run)
}

/// An apply's record could not be written; what was written before stays consistent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyStateError {
    /// The state store failed, or did not keep what was saved.
    #[error("cannot record the apply in the state store")]
    Store(#[from] StoreError),
    /// sysfs could not be scanned (for the record of a GPU the state had none of).
    #[error("cannot scan the PCI devices")]
    Scan(#[from] ScanError),
}
