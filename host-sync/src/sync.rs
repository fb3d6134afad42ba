//! The sync: under the host lock, gather the facts, apply the mode rules, classify, write.

use crate::boot::{Boot, is_after_boot};
use crate::classify::{Facts, HelperState, classify};
use crate::gpu::GpuRecord;
use crate::modes;
use crate::pci::{ScanError, scan, warn_skipped};
use crate::state::HostState;
use crate::status::{HostReason, HostStatus};
use crate::store::{StateStore, StoreError};
use gpu_host_probe::helper::Helper;
use gpu_host_probe::lock::{HostLock, LockError};
use gpu_partition_types::{Bdf, Outcome};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Where the host's facts are.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HostPaths {
    /// The state directory (the host lock lives there).
    pub state_dir: PathBuf,
    /// The root of sysfs (`/sys`).
    pub sysfs_root: PathBuf,
}

impl HostPaths {
    /// The host whose state is in `state_dir` and whose sysfs is at `sysfs_root`.
    pub fn new(state_dir: impl Into<PathBuf>, sysfs_root: impl Into<PathBuf>) -> Self {
        Self {
            state_dir: state_dir.into(),
            sysfs_root: sysfs_root.into(),
        }
    }
}

/// Whether a sync is the first start after a boot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AfterBoot {
    /// The caller knows it is.
    Yes,
    /// The caller knows it is not.
    No,
    /// Decided under the host lock by comparing the boot now with the stored one
    /// ([`crate::boot::is_after_boot`]: the boot id, else the boot time), so only one caller per
    /// boot sees `true`.
    Auto,
}

/// How long a sync waits for another GPU operation to let go of the host lock.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// What the caller decides for one sync.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SyncOptions {
    /// The pool switch.
    pub pool_enabled: bool,
    /// Whether this is the first start after a boot.
    pub after_boot: AfterBoot,
    /// The boot now (see [`Boot::read`]), stored for the next sync.
    pub boot: Boot,
    /// How long to wait for the host lock (default 10 s).
    pub lock_wait: Duration,
}

impl SyncOptions {
    /// A sync with this pool switch and after-boot rule.
    pub fn new(pool_enabled: bool, after_boot: AfterBoot) -> Self {
        Self {
            pool_enabled,
            after_boot,
            boot: Boot::default(),
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

    /// Sets the boot now.
    pub fn boot(mut self, boot: Boot) -> Self {
        self.boot = boot;
        self
    }

    /// Sets the bound on the wait for the host lock.
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }
}

/// What a sync wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncReport {
    /// The host's status.
    pub status: HostStatus,
    /// Its reason.
    pub reason: HostReason,
    /// Whether the sync ran as the first after a boot.
    pub after_boot: bool,
    /// Each GPU's record.
    pub gpus: BTreeMap<Bdf, GpuRecord>,
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
    /// sysfs could not be read.
    #[error("cannot scan the PCI devices")]
    Scan(#[from] ScanError),
}

/// Runs one sync (host-sync.md, "Rules of a sync"): takes the host lock (waiting up to
/// `options.lock_wait`; a second sync asked for while one runs waits its turn there); gathers
/// the facts; applies the mode rules (with the pool on, each card to read is written `unknown`
/// first, then read through `helper`, then written with its answer; with no card to read, no
/// helper runs at all, not even `--version`); classifies the host over the facts as they now
/// stand and writes status and reason together.
pub fn sync(
    host: &HostPaths,
    helper: &Helper,
    store: &mut dyn StateStore,
    options: &SyncOptions,
) -> Result<SyncReport, SyncError> {
    let _lock = HostLock::acquire(&host.state_dir, options.lock_wait)?;
    let previous = store.load()?.unwrap_or_default();
    let after_boot = match options.after_boot {
        AfterBoot::Yes => true,
        AfterBoot::No => false,
        AfterBoot::Auto => {
            let stored = previous.boot.is_known().then_some(&previous.boot);
            let decision = is_after_boot(stored, &options.boot);
            if let Some(warning) = &decision.warning {
                tracing::warn!("{warning}");
            }
            decision.after_boot
        }
    };
    let found = scan(&host.sysfs_root)?;
    warn_skipped(&found.skipped);
    let unread: Vec<Bdf> = found.skipped.iter().filter_map(|entry| entry.bdf).collect();
    let gpus = found.gpus;
    let mut state = HostState {
        gpus: modes::carry_over(&gpus, &previous.gpus, &unread),
        boot: options.boot.clone().or(&previous.boot),
        ..previous
    };
    let takes_part = options.pool_enabled && gpus.iter().any(|gpu| gpu.is_nvidia());
    let mut helper_state = HelperState::NotChecked;
    if takes_part {
        let to_read = modes::mark_not_checked(&gpus, &mut state.gpus);
        if !to_read.is_empty() {
            helper_state = read_cards(helper, &to_read, &mut state, store)?;
        }
    } else {
        modes::not_taking_part(&mut state.gpus, after_boot);
    }
    let (status, reason) = classify(&Facts {
        gpus: &gpus,
        pool_enabled: options.pool_enabled,
        modes: &state.gpus,
        helper: helper_state,
    });
    state.status = status;
    state.reason = reason.into();
    state.synced_at = Some(unix_now());
    store.save(&state)?;
    tracing::debug!("sync_gpu_partitioning: {status} ({reason}), after boot: {after_boot}");
    Ok(SyncReport {
        status,
        reason,
        after_boot,
        gpus: state.gpus,
    })
}

/// Reads the cards `to_read` (at least one): `--version` once; then each card written
/// `unknown` (one write), read, and written with its answer by the caller. A host-wide failure
/// is given to every card without forking per card. Answers what was found of the helper.
fn read_cards(
    helper: &Helper,
    to_read: &[Bdf],
    state: &mut HostState,
    store: &mut dyn StateStore,
) -> Result<HelperState, SyncError> {
    let format = match helper.negotiate() {
        (Ok(format), _) => format,
        (Err(reason), _) => {
            tracing::debug!("helper: {reason}, found once for the host");
            for bdf in to_read {
                if let Some(record) = state.gpus.get_mut(bdf) {
                    modes::read_failed(record, &reason);
                }
            }
            return Ok(if reason.is_host_wide() {
                HelperState::Unavailable
            } else {
                HelperState::Available
            });
        }
    };
    for bdf in to_read {
        if let Some(record) = state.gpus.get_mut(bdf) {
            modes::about_to_read(record);
        }
    }
    store.save(state)?;
    for read in helper.read_all(to_read, format) {
        let Some(record) = state.gpus.get_mut(&read.device) else {
            continue;
        };
        for lost in &read.lost {
            tracing::debug!("{}: lost {lost}", read.device);
        }
        match &read.outcome {
            Outcome::Unreadable(reason) => modes::read_failed(record, reason),
            outcome => modes::read_answered(record, outcome.partition_mode()),
        }
    }
    Ok(HelperState::Available)
}

/// Seconds since the Unix epoch now (0 on a clock set before it).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or_default()
}
