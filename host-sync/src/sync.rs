//! The sync: under the host lock, gather the facts, apply the mode rules, classify, write.

use crate::boot::is_after_boot;
use crate::classify::{Facts, HelperState, classify};
use crate::gpu::GpuRecord;
use crate::modes;
use crate::pci::{ScanError, scan, warn_skipped};
use crate::state::HostState;
use crate::status::{HostStatus, Reason};
use crate::store::{StateStore, StoreError};
use gpu_partition_types::{Bdf, Outcome};
use gpu_probe::helper::Helper;
use gpu_probe::lock::{HostLock, LockError};
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
    /// Decided under the host lock by comparing the kernel's boot id now with the stored one
    /// ([`crate::boot::is_after_boot`]), so only one caller per boot sees `true`.
    Auto,
}

/// What the caller decides for one sync.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SyncOptions {
    /// The pool switch.
    pub pool_enabled: bool,
    /// Whether this is the first start after a boot.
    pub after_boot: AfterBoot,
    /// The kernel's boot id now (see [`crate::boot::read_boot_id`]), stored for the next sync.
    pub boot_id: Option<String>,
    /// How long to wait for the host lock (default 10 s).
    pub lock_wait: Duration,
}

impl SyncOptions {
    /// A sync with this pool switch and after-boot rule.
    pub fn new(pool_enabled: bool, after_boot: AfterBoot) -> Self {
        Self {
            pool_enabled,
            after_boot,
            boot_id: None,
            lock_wait: Duration::from_secs(10),
        }
    }

    /// Sets the boot id to store.
    pub fn boot_id(mut self, boot_id: Option<String>) -> Self {
        self.boot_id = boot_id;
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
    pub reason: Reason,
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

/// Runs one sync (host-sync.md, "Rules of a sync"): takes the host lock; gathers the facts;
/// applies the mode rules (with the pool on, each card to read is written `unknown` first, then
/// read through `helper`, then written with its answer); classifies the host over the facts as
/// they now stand and writes status and reason together.
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
        AfterBoot::Auto => is_after_boot(previous.boot_id.as_deref(), options.boot_id.as_deref()),
    };
    let found = scan(&host.sysfs_root)?;
    warn_skipped(&found.skipped);
    let unread: Vec<Bdf> = found.skipped.iter().filter_map(|entry| entry.bdf).collect();
    let gpus = found.gpus;
    let mut state = HostState {
        gpus: modes::carry_over(&gpus, &previous.gpus, &unread),
        boot_id: options.boot_id.clone().or(previous.boot_id.clone()),
        ..previous
    };
    let takes_part = options.pool_enabled && gpus.iter().any(|gpu| gpu.is_nvidia());
    let mut helper_state = HelperState::NotChecked;
    if takes_part {
        let to_read = modes::mark_not_checked(&gpus, &mut state.gpus);
        match helper.negotiate() {
            (Ok(format), _) => {
                helper_state = HelperState::Available;
                for bdf in &to_read {
                    if let Some(record) = state.gpus.get_mut(bdf) {
                        modes::about_to_read(record);
                    }
                }
                store.save(&state)?;
                for read in helper.read_all(&to_read, format) {
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
            }
            (Err(reason), _) => {
                tracing::debug!("helper: {reason}, found once for the host");
                if reason.is_host_wide() {
                    helper_state = HelperState::Unavailable;
                } else {
                    helper_state = HelperState::Available;
                }
                for bdf in &to_read {
                    if let Some(record) = state.gpus.get_mut(bdf) {
                        modes::read_failed(record, &reason);
                    }
                }
            }
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
    state.reason = reason.clone();
    store.save(&state)?;
    tracing::debug!("sync_gpu_partitioning: {status} ({reason}), after boot: {after_boot}");
    Ok(SyncReport {
        status,
        reason,
        after_boot,
        gpus: state.gpus,
    })
}
