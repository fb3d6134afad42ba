//! The sync: under the host lock, gather the facts, apply the mode rules, classify, write.

use crate::after_boot::is_after_boot;
use crate::classify::{Facts, HelperState, classify};
use crate::gpu::GpuRecord;
use crate::modes;
use crate::pci::{PciFunction, ReadBy, ScanError, scan, warn_skipped};
use crate::record::LayoutRecord;
use crate::state::HostState;
use crate::status::{HostReason, HostStatus, Pool};
use crate::store::{StateStore, StoreError, save_checked};
use crate::warning::SyncWarning;
use gpu_host_probe::amdgpu::{AmdError, AmdPartitions};
use gpu_host_probe::helper::{Helper, ReadFailure};
use gpu_host_probe::{Boot, Cancel, DEFAULT_LOCK_WAIT, Host, WriteMark};
use gpu_host_probe::{Clock, SystemClock};
use gpu_host_probe::{HostLock, LockError};
use gpu_partition_types::{Bdf, Outcome, Reply};
use layout_model::{
    Declaration, DeclaredGpu, Difference, Fact, Lapse, LapseReason, LayoutCheck, Seen,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Whether a sync is the first start after a boot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AfterBoot {
    /// The caller knows it is.
    Yes,
    /// The caller knows it is not.
    No,
    /// Decided under the host lock by comparing the boot now (read from the host's procfs, or
    /// the one [`SyncOptions::boot`] gives) with the stored one
    /// ([`crate::after_boot::is_after_boot`]: the boot id, else the boot time), so only one
    /// caller per boot sees `true`.
    Auto,
}

/// What the caller decides for one sync.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SyncOptions {
    /// The pool switch.
    pub pool: Pool,
    /// Whether this is the first start after a boot.
    pub after_boot: AfterBoot,
    /// The boot now, for a caller that knows it another way; `None` (the default): read from
    /// the host's procfs ([`Host::boot`]) by the sync itself. Stored for the next sync.
    pub boot: Option<Boot>,
    /// How long to wait for the host lock (default 10 s, [`DEFAULT_LOCK_WAIT`]).
    pub lock_wait: Duration,
    /// Ends the sync early when triggered from another thread (none by default): the wait for
    /// the lock gives up, a helper run in progress is ended as its deadline would end it, a
    /// card not read yet is not read; what was found is written, each card not read as
    /// `unknown (cancelled)`, and the sync answers [`SyncError::Cancelled`].
    pub cancel: Option<Cancel>,
    /// The clock the records of this sync are stamped with (the real one by default; a
    /// toolstack's own, or a virtual one in tests).
    pub clock: Arc<dyn Clock>,
}

impl SyncOptions {
    /// A sync with this pool switch and after-boot rule; the boot is read from the host.
    pub fn new(pool: Pool, after_boot: AfterBoot) -> Self {
        Self {
            pool,
            after_boot,
            boot: None,
            lock_wait: DEFAULT_LOCK_WAIT,
            cancel: None,
            clock: Arc::new(SystemClock::new()),
        }
    }

    /// Stamps the records of this sync with `clock`'s wall-clock time.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Ends the sync early when `cancel` is triggered.
    pub fn cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Gives the boot now instead of reading it from the host's procfs.
    pub fn boot(mut self, boot: Boot) -> Self {
        self.boot = Some(boot);
        self
    }

    /// Sets the bound on the wait for the host lock.
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }
}

/// What a sync wrote, and what a person should know of it.
///
/// It serializes to the document of `mxctl --json sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncReport {
    /// The host's status.
    pub status: HostStatus,
    /// Its reason.
    pub reason: HostReason,
    /// Why the host has its reason, for people; `None` when there is nothing to explain.
    pub message: Option<String>,
    /// Whether the sync ran as the first after a boot.
    pub after_boot: bool,
    /// Each GPU's record (each failed read with its reason and message).
    pub gpus: BTreeMap<Bdf, GpuRecord>,
    /// Who owns each GPU that is not ours ([`crate::set_ownership`]).
    pub ownership: BTreeMap<Bdf, gpu_host_probe::Ownership>,
    /// How the declared GPUs this sync read differ from what the host is declared to be
    /// ([`HostState::declared`]), by GPU in address order; empty when they hold it, when nothing
    /// is declared, or when no card was read (with the pool off no helper runs).
    pub drift: Vec<Difference>,
    /// When this sync read the declared GPUs (Unix seconds): its check of the declaration;
    /// `None` when nothing is declared or it did not read them (the pool off).
    pub checked_at: Option<u64>,
    /// What did not change the course but a person should know.
    pub warnings: Vec<SyncWarning>,
}

/// A sync that could not finish; what was written before stays consistent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// The host lock is held by another GPU operation past the bounded wait.
    #[error("cannot take the host GPU lock")]
    Lock(#[from] LockError),
    /// The state store failed.
    #[error("cannot use the state store")]
    Store(#[from] StoreError),
    /// sysfs could not be scanned.
    #[error("cannot scan the PCI devices")]
    Scan(#[from] ScanError),
    /// The sync was cancelled ([`SyncOptions::cancel`]).
    #[error("the sync was cancelled")]
    Cancelled {
        /// What the sync wrote before it ended (each card it did not read `unknown
        /// (cancelled)`); `None` when it was cancelled waiting for the lock, before it wrote
        /// anything.
        written: Option<Box<SyncReport>>,
    },
}

/// Runs one sync (the rules are in the project's `docs/sync.md`): takes the host lock of
/// `host` (waiting up to `options.lock_wait`; a second sync asked for while one runs waits its
/// turn there); gathers the facts (the PCI devices of the host's sysfs, the boot of its procfs);
/// applies the mode rules (with the pool on, each card to read is written `unknown` first,
/// then read through `helper`, then written with its answer; with no card to read, no helper
/// runs at all, not even `--version`); classifies the host over the facts as they now stand and
/// writes status and reason together. When the host's GPUs changed while it ran (a GPU bound,
/// unbound, added or removed), it runs again under the same lock, up to [`SETTLE_ROUNDS`]
/// times, so the state stored last is the one after the change (with a
/// [`SyncWarning::GpusChanged`]).
///
/// It blocks at worst for `options.lock_wait`, then the helper's `--version` deadline, then
/// one read deadline per [`HelperConfig::concurrency`](gpu_host_probe::helper::HelperConfig)
/// cards (each run's kill grace added when one overruns), times up to [`SETTLE_ROUNDS`] + 1
/// rounds when the GPUs keep changing under it; [`SyncOptions::cancel`] ends it within the
/// runner's check interval (10 ms) and the helper's kill grace.
pub fn sync(
    host: &Host,
    helper: &Helper,
    store: &mut dyn StateStore,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    let lock = host
        .lock_unless(options.lock_wait, options.cancel.as_ref())
        .map_err(|error| match error {
            LockError::Cancelled { .. } => SyncError::Cancelled { written: None },
            error => SyncError::Lock(error),
        })?;
    let mut before = drivers(&scan(host.sysfs_root())?.gpus);
    let mut report = sync_under(&lock, helper, store, &*options.clock, options)?;
    // A GPU bound, unbound, added or removed while the sync ran (the udev events of a rebind
    // start a sync, and one started while this runs is merged into it): sync again, so the
    // state stored last is the one after the change.
    let mut changed = Vec::new();
    for _ in 0..SETTLE_ROUNDS {
        if options.cancel.as_ref().is_some_and(Cancel::is_cancelled) {
            break;
        }
        let after = drivers(&scan(host.sysfs_root())?.gpus);
        let differ: Vec<Bdf> = after
            .iter()
            .filter(|(bdf, driver)| before.get(bdf) != Some(driver))
            .map(|(bdf, _)| *bdf)
            .chain(
                before
                    .keys()
                    .filter(|bdf| !after.contains_key(bdf))
                    .copied(),
            )
            .collect();
        if differ.is_empty() {
            break;
        }
        tracing::debug!("the GPUs changed during the sync ({differ:?}): syncing again");
        changed.extend(differ);
        before = after;
        let warnings = std::mem::take(&mut report.warnings);
        report = sync_under(&lock, helper, store, &*options.clock, options)?;
        report.warnings = warnings.into_iter().chain(report.warnings).collect();
    }
    if !changed.is_empty() {
        changed.sort();
        changed.dedup();
        report
            .warnings
            .push(SyncWarning::GpusChanged { gpus: changed });
    }
    drop(lock);
    Ok(report)
}

/// How many times a sync runs again when the GPUs changed while it ran.
pub const SETTLE_ROUNDS: usize = 3;

/// Each display function's driver, by address.
fn drivers(gpus: &[PciFunction]) -> BTreeMap<Bdf, Option<String>> {
    gpus.iter()
        .map(|gpu| (gpu.bdf, gpu.driver.clone()))
        .collect()
}

/// Runs one sync as [`sync()`] does, under the host lock the caller already holds, on the
/// lock's host, its records stamped by `clock`, the clock of the caller's run
/// (`options.lock_wait` and `options.clock` are not used): for an operation that ends with a
/// sync and must not let go of the lock before it (an apply classifies the host it leaves).
pub fn sync_under(
    lock: &HostLock,
    helper: &Helper,
    store: &mut dyn StateStore,
    clock: &dyn Clock,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    let host = lock.host();
    let now = clock.unix_s();
    let helper = &helper.ending_on(options.cancel.as_ref());
    let mut previous = store.load()?.unwrap_or_default();
    let mut warnings: Vec<SyncWarning> = store
        .take_notes()
        .into_iter()
        .map(SyncWarning::Store)
        .collect();
    // Under the lock no apply runs: a record still `applying` is an interrupted one.
    previous.layout = previous.layout.map(|record| record.settled(now));
    let boot = options.boot.clone().unwrap_or_else(|| host.boot());
    let after_boot = match options.after_boot {
        AfterBoot::Yes => true,
        AfterBoot::No => false,
        AfterBoot::Auto => {
            let stored = previous.boot.is_known().then_some(&previous.boot);
            let decision = is_after_boot(stored, &boot);
            if let Some(warning) = decision.warning {
                tracing::warn!("{warning}");
                warnings.push(SyncWarning::BootUndecided(warning));
            }
            decision.after_boot
        }
    };
    let found = scan(host.sysfs_root())?;
    warn_skipped(&found.skipped);
    warnings.extend(found.skipped.iter().map(SyncWarning::skipped));
    let unread: Vec<Bdf> = found.skipped.iter().filter_map(|entry| entry.bdf).collect();
    let gpus = found.gpus;
    let mut state = HostState {
        gpus: modes::carry_over(&gpus, &previous.gpus, &unread),
        boot: boot.or(&previous.boot),
        message: None,
        ..previous
    };
    // Who owns each GPU not ours, read once: the reads, the check and the report take it.
    let not_ours = state.not_ours();
    let takes_part =
        options.pool.is_enabled() && gpus.iter().any(PciFunction::is_partitionable_vendor);
    let mut helper_state = HelperState::NotChecked;
    let mut host_wide = None;
    let mut replies = BTreeMap::new();
    let mut amd_reads = BTreeMap::new();
    // Each NVIDIA GPU read whole has its VFs read once, for its rows and for the check.
    let mut vfs = BTreeMap::new();
    // Where the record of writes stands before the cards are read (the lock is held, so no write
    // of ours comes between): a write recorded after it ends what this check says.
    let read_now = gpu_host_probe::Now::new(state.boot.clone(), host.now().writes);
    let mark = read_now.writes.mark();
    if takes_part {
        let to_read = modes::mark_not_checked(&gpus, &mut state.gpus, ReadBy::Helper);
        if !to_read.is_empty() {
            let read = read_cards(lock, helper, &to_read, &mut state, store)?;
            helper_state = read.helper;
            host_wide = read.host_wide;
            replies = read.replies;
            vfs = replies
                .keys()
                .map(|bdf| (*bdf, crate::sriov::read_vf_types(host.sysfs_root(), *bdf)))
                .collect();
        }
        // AMD GPUs from amdgpu's sysfs files: no program runs, nothing waits.
        for bdf in modes::mark_not_checked(&gpus, &mut state.gpus, ReadBy::Amdgpu) {
            let read = gpu_host_probe::amdgpu::read_partitions(host.sysfs_root(), bdf);
            if let Some(record) = state.gpus.get_mut(&bdf) {
                modes::amd_read(record, &read, now, &state.boot);
            }
            amd_reads.insert(bdf, read);
        }
        crate::partitions::record_divisions(
            &mut state.gpus,
            (state.declared.as_ref(), &not_ours),
            &crate::partitions::Reads {
                gpus: &gpus,
                replies: &replies,
                amd: &amd_reads,
                vfs: &vfs,
                now: &read_now,
                at: now,
            },
        );
    } else {
        modes::not_taking_part(&mut state.gpus, after_boot);
        let why = if options.pool.is_enabled() {
            "the host has no GPU that partitions"
        } else {
            "the pool is off: no card is read"
        };
        crate::partitions::none_read(&mut state.gpus, now, why);
    }
    // With the pool on every sync compares the cards with what the host is declared to be (a
    // declared GPU no longer on the host differs); with it off no card is read, and from then on
    // the last check says nothing.
    let mut checked_at = None;
    if let Some(declared) = state.declared.as_mut() {
        if options.pool.is_enabled() {
            let read = Read {
                gpus: &gpus,
                not_ours: &not_ours,
                records: &state.gpus,
                replies: &replies,
                amd: &amd_reads,
                vfs: &vfs,
            };
            declared.checked(check(declared, &read, now, &state.boot, mark));
            checked_at = Some(now);
        } else {
            declared.lapse(Lapse::new(now, LapseReason::PoolDisabled));
        }
    }
    // Only what this sync found: with the pool off no card was read, and nothing is drift.
    let drift: Vec<Difference> = match (&state.declared, checked_at) {
        (
            Some(Declaration {
                check: Some(check), ..
            }),
            Some(_),
        ) => check.differences.clone(),
        _ => Vec::new(),
    };
    let (status, reason) = classify(&Facts {
        gpus: &gpus,
        pool: options.pool,
        modes: &state.gpus,
        helper: helper_state,
        layout: state.layout.as_ref(),
        drift: &drift,
        lost: state.lost.is_some(),
    });
    state.status = status;
    state.reason = reason.into();
    state.message = match reason {
        HostReason::HelperUnavailable => host_wide.map(|failure| failure.to_string()),
        HostReason::LayoutFailed => state
            .layout
            .as_ref()
            .and_then(LayoutRecord::failure)
            .map(|failure| failure.message),
        HostReason::LayoutDrifted => Some(drift_message(&drift)),
        HostReason::StateLost => state.lost.as_ref().map(ToString::to_string),
        HostReason::NoPartitionableGpu
        | HostReason::LayoutApplying
        | HostReason::GpusStillDivided
        | HostReason::PoolDisabled
        | HostReason::GpusPending
        | HostReason::Ready => None,
    };
    state.synced_at = Some(now);
    save_checked(store, &state)?;
    tracing::debug!("sync_gpu_partitioning: {status} ({reason}), after boot: {after_boot}");
    let report = SyncReport {
        status,
        reason,
        message: state.message,
        after_boot,
        gpus: state.gpus,
        ownership: not_ours,
        drift,
        checked_at,
        warnings,
    };
    match &options.cancel {
        Some(cancel) if cancel.is_cancelled() => Err(SyncError::Cancelled {
            written: Some(Box::new(report)),
        }),
        _ => Ok(report),
    }
}

/// The message of a host whose cards differ from their declaration: every difference (what
/// brings each back is the caller's to say: [`Difference::remedy`]).
fn drift_message(drift: &[Difference]) -> String {
    let each: Vec<String> = drift.iter().map(ToString::to_string).collect();
    format!(
        "the cards differ from the declared layout ({}): {}",
        drift.len(),
        each.join("; ")
    )
}

/// What a sync read of the cards, for the check of the declaration.
struct Read<'a> {
    /// The GPUs found.
    gpus: &'a [PciFunction],
    /// Who owns each GPU not ours: its declaration is not compared (another agent divides it).
    not_ours: &'a BTreeMap<Bdf, gpu_host_probe::Ownership>,
    /// Their records, as the reads left them (an AMD GPU's memory request of ours).
    records: &'a BTreeMap<Bdf, GpuRecord>,
    /// The reply of each NVIDIA card read whole.
    replies: &'a BTreeMap<Bdf, Box<Reply>>,
    /// What each AMD GPU read showed.
    amd: &'a BTreeMap<Bdf, Result<Option<AmdPartitions>, AmdError>>,
    /// What the VFs of each NVIDIA card read whole hold.
    vfs: &'a BTreeMap<Bdf, layout_model::VfsRead>,
}

/// Compares each declared GPU with what this sync read of it: a GPU read is compared (an
/// NVIDIA GPU's board, then the rules of an assert, then its VFs; an AMD GPU's partitions);
/// one on the host that was not read (bound to another driver, or its read failed) is unread,
/// not drift — its own reason says why; one no longer on the host at all is gone. The check
/// keeps where the record of writes stood (`mark`).
fn check(
    declared: &Declaration,
    read: &Read<'_>,
    now: u64,
    boot: &Boot,
    mark: Option<WriteMark>,
) -> LayoutCheck {
    let mut differences = Vec::new();
    let mut unread = Vec::new();
    let mut adopted = Vec::new();
    for (bdf, gpu) in declared
        .gpus
        .iter()
        .filter(|(bdf, _)| !read.not_ours.contains_key(bdf))
    {
        let on_host = read.gpus.iter().any(|found| found.bdf == *bdf);
        let compared = match gpu {
            DeclaredGpu::Amd(_) => match read.amd.get(bdf) {
                // A GPU whose files did not read is unread, not drift: its reason says why.
                Some(Err(_)) => None,
                Some(found) => {
                    let requested = read.records.get(bdf).and_then(GpuRecord::requested_memory);
                    let seen = layout_model::amd::AmdRead::of(found, requested);
                    Some(gpu.compare(*bdf, Seen::Amd(&seen)))
                }
                None => None,
            },
            DeclaredGpu::Nvidia(nvidia) => read.replies.get(bdf).map(|reply| {
                // Its VFs are compared where vGPUs are declared on them.
                let vfs = nvidia.vgpu.as_ref().and_then(|_| read.vfs.get(bdf));
                gpu.compare(*bdf, Seen::Nvidia { reply, vfs })
            }),
        };
        match compared {
            Some(compared) => {
                differences.extend(compared.differences);
                adopted.extend(compared.adopted);
            }
            None if on_host => unread.push(*bdf),
            None => differences.push(Difference::new(*bdf, Fact::GpuGone)),
        }
    }
    LayoutCheck::new(now, boot.clone(), mark, differences, unread).adopted(adopted)
}

/// What reading the cards found.
struct Cards {
    helper: HelperState,
    /// The failure found once for the whole host, when there was one.
    host_wide: Option<ReadFailure>,
    /// The reply of each card read whole (its case not `unreadable`).
    replies: BTreeMap<Bdf, Box<Reply>>,
}

/// Reads the cards `to_read` (at least one) under `lock`: `--version` once; then each card
/// written `unknown` (one write), read, and written with its answer by the caller. A host-wide
/// failure is given to every card without forking per card.
fn read_cards(
    lock: &HostLock,
    helper: &Helper,
    to_read: &[Bdf],
    state: &mut HostState,
    store: &mut dyn StateStore,
) -> Result<Cards, SyncError> {
    let format = match helper.negotiate() {
        Ok(format) => format,
        Err(gpu_host_probe::helper::Unnegotiated { failure, .. }) => {
            tracing::debug!("helper: {failure}, found once for the host");
            for bdf in to_read {
                if let Some(record) = state.gpus.get_mut(bdf) {
                    modes::read_failed(record, &failure);
                }
            }
            let host_wide = failure.reason.is_host_wide();
            return Ok(Cards {
                helper: if host_wide {
                    HelperState::Unavailable
                } else {
                    HelperState::Available
                },
                host_wide: host_wide.then_some(failure),
                replies: BTreeMap::new(),
            });
        }
    };
    for bdf in to_read {
        if let Some(record) = state.gpus.get_mut(bdf) {
            modes::about_to_read(record);
        }
    }
    store.save(state)?;
    let mut replies = BTreeMap::new();
    for read in helper.read_all(lock, to_read, format) {
        let Some(record) = state.gpus.get_mut(&read.device) else {
            continue;
        };
        for lost in &read.lost {
            tracing::debug!("{}: lost {lost}", read.device);
        }
        match &read.outcome {
            Outcome::Unreadable(reason) => {
                let message = read
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("{} is unreadable", read.device));
                modes::read_failed(record, &ReadFailure::new(reason.clone(), message));
            }
            outcome => {
                modes::read_answered(record, outcome.partition_mode());
                // What the card said of itself: a reply that does not say it leaves it unknown,
                // never the last one's (another card may sit in the slot).
                record.architecture = read.reply.as_ref().and_then(|reply| reply.architecture());
                if let Some(reply) = read.reply {
                    replies.insert(read.device, reply);
                }
            }
        }
    }
    Ok(Cards {
        helper: HelperState::Available,
        host_wide: None,
        replies,
    })
}
