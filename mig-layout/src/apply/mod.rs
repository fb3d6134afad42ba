//! The executor: a layout applied under the host lock, GPU by GPU, by diff.
//!
//! 1. Under the host lock (not waited for by default: held by another GPU operation, the apply
//!    is blocked `lock_busy`), the layout is resolved against the host's GPUs and every GPU it
//!    names is read and planned. Before anything is written, a plan is refused — for the whole
//!    apply — when it cannot be made (`layout_impossible`, naming the GPU and profile), when
//!    the card has processes or a vGPU sits on an instance to destroy (`gpu_busy`, naming
//!    them), or when a card does not read (`gpu_unreadable`).
//! 2. The host is written `entering` (or `leaving`) with `layout_applying`, and the apply is
//!    recorded as running.
//! 3. Each GPU's destroys and mode change run as one batch of the helper's `apply`.
//! 4. A mode change the card holds pending is completed by a warm reset of that GPU (and its
//!    NVLink peers) through `warm-reset`.
//! 5. Each GPU is planned again from what it now says (only creates may remain); its GPU
//!    instances are created at the plan's placements, then their compute instances.
//! 6. The read-back must equal the layout (GPU instances, compute instances, placements);
//!    anything else is `failed` with the difference.
//! 7. The apply is recorded as it ended and a sync classifies the host under the same lock:
//!    `active (ready)` when the layout holds with the pool on; `entering (layout_failed)` with
//!    the message while a failure is unhealed.
//!
//! Every helper run has a deadline (the helper's, and for a batch one more per step). Since
//! every plan is a diff of what the card says now, a crash at any point leaves a host a second
//! run brings to the layout.

mod busy;
mod phases;
mod preflight;
mod record;
mod reset;

pub use phases::STEP_DEADLINE;
pub use reset::ResetWith;

use crate::document::{Devices, Spec};
use crate::report::{ApplyOutcome, ApplyReason, ApplyReport, HostAfter};
use crate::select::{Wanted, host_gpus, select};
use gpu_host_probe::helper::Helper;
use gpu_host_probe::{Host, HostLock, LockError};
use gpu_partition_types::Bdf;
use host_sync::{AfterBoot, Direction, StateStore, SyncOptions, sync_under};
use phases::Ctx;
use preflight::Preflight;
use std::time::{Duration, Instant};

/// What the caller decides for one apply.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApplyOptions {
    /// The layout's label, for the record and the report.
    pub label: String,
    /// Only these GPUs of the layout (none: every GPU it names).
    pub devices: Vec<Bdf>,
    /// Plan and show; write nothing.
    pub dry_run: bool,
    /// The pool switch: the sync that ends the apply classifies with it, and a layout that
    /// turns MIG on is refused with it off.
    pub pool_enabled: bool,
    /// How long to wait for the host lock (default zero: held, the apply is blocked).
    pub lock_wait: Duration,
}

impl ApplyOptions {
    /// An apply of the layout `label` with this pool switch.
    pub fn new(label: impl Into<String>, pool_enabled: bool) -> Self {
        Self {
            label: label.into(),
            devices: Vec::new(),
            dry_run: false,
            pool_enabled,
            lock_wait: Duration::ZERO,
        }
    }

    /// Only these GPUs of the layout.
    pub fn devices(mut self, devices: Vec<Bdf>) -> Self {
        self.devices = devices;
        self
    }

    /// Plan and show only.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }
}

/// One step of progress, for people.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// The GPU.
    pub device: Bdf,
    /// What happens.
    pub what: String,
}

/// What sees every step as it runs.
pub type Observer<'a> = &'a mut dyn FnMut(&Progress);

/// One apply: on which host, through which helper, into which store, resetting how.
pub struct ApplyRun<'a> {
    host: &'a Host,
    helper: &'a Helper,
    store: &'a mut dyn StateStore,
    reset: ResetWith<'a>,
    observe: Option<Observer<'a>>,
}

impl std::fmt::Debug for ApplyRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApplyRun")
            .field("host", self.host)
            .field("reset", &self.reset)
            .finish_non_exhaustive()
    }
}

impl<'a> ApplyRun<'a> {
    /// An apply on `host` through `helper`, recorded in `store`, completing pending mode
    /// changes through `reset` (the nvidia method's backend).
    pub fn new(
        host: &'a Host,
        helper: &'a Helper,
        store: &'a mut dyn StateStore,
        reset: ResetWith<'a>,
    ) -> Self {
        Self {
            host,
            helper,
            store,
            reset,
            observe: None,
        }
    }

    /// Shows each step as it runs.
    pub fn observe(mut self, observe: Observer<'a>) -> Self {
        self.observe = Some(observe);
        self
    }
}

/// An apply that could not run; what was written before stays consistent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The host lock's file could not be used.
    #[error("the host lock failed")]
    Lock(#[source] LockError),
    /// sysfs could not be scanned.
    #[error("cannot find the host's GPUs")]
    Scan(#[from] host_sync::ScanError),
    /// The layout names a GPU twice.
    #[error("the layout does not select")]
    Select(#[from] crate::select::SelectError),
    /// A GPU asked for (`--device`) is not one the layout names.
    #[error("{device} is not a GPU the layout {label:?} names on this host")]
    NotNamed {
        /// The GPU.
        device: Bdf,
        /// The layout.
        label: String,
    },
    /// The state store failed.
    #[error("cannot use the state store")]
    Store(#[from] host_sync::StoreError),
    /// The sync that ends the apply failed (the apply's own record was written).
    #[error("the sync after the apply failed")]
    Sync(#[from] host_sync::SyncError),
    /// The warm reset could not run (its journal, its machine).
    #[error("the warm reset could not run")]
    Reset(#[from] warm_reset::ExecuteError),
}

/// Applies the layout `specs` (one label of a document) as `options` say.
pub fn apply(
    run: ApplyRun<'_>,
    specs: &[Spec],
    options: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    let started = Instant::now();
    let mut report = ApplyReport {
        label: options.label.clone(),
        outcome: ApplyOutcome::Done,
        detail: String::new(),
        gpus: Vec::new(),
        resets: Vec::new(),
        host: None,
        warnings: Vec::new(),
        elapsed: Duration::ZERO,
    };
    let ApplyRun {
        host,
        helper,
        store,
        mut reset,
        mut observe,
    } = run;
    let lock = match host.lock(options.lock_wait) {
        Ok(lock) => lock,
        Err(busy @ LockError::Busy { .. }) => {
            report.outcome = ApplyOutcome::Blocked(ApplyReason::LockBusy);
            report.detail = busy.to_string();
            report.elapsed = started.elapsed();
            return Ok(report);
        }
        Err(error) => return Err(ApplyError::Lock(error)),
    };
    let wanted = resolve(host, specs, options, &mut report)?;
    let direction = if wanted.iter().any(|w| w.want.enabled) {
        Direction::Entering
    } else {
        Direction::Leaving
    };
    let mut progress = |device: Bdf, what: String| {
        tracing::debug!("{device}: {what}");
        if let Some(observe) = observe.as_mut() {
            observe(&Progress { device, what });
        }
    };
    if direction == Direction::Entering && !options.pool_enabled {
        report.outcome = ApplyOutcome::Blocked(ApplyReason::PoolDisabled);
        report.detail =
            "the pool switch is off, and the layout turns MIG on: switch the pool on first"
                .to_owned();
    } else if wanted.is_empty() {
        report
            .warnings
            .push("the layout names no GPU of this host; nothing to do".to_owned());
    } else {
        match helper.negotiate_apply() {
            Err(failure) => {
                report.outcome = ApplyOutcome::Blocked(ApplyReason::HelperUnavailable);
                report.detail = failure.to_string();
            }
            Ok(format) => {
                let mut ctx = Ctx {
                    lock: &lock,
                    helper,
                    format,
                    progress: &mut progress,
                };
                go(
                    &mut ctx,
                    store,
                    &mut reset,
                    wanted,
                    direction,
                    options,
                    &mut report,
                )?;
            }
        }
    }
    if matches!(report.outcome, ApplyOutcome::Blocked(_)) && report.host.is_none() {
        // A blocked apply is recorded too (for monitoring), and the host classified.
        let record = record::started(store, &options.label, direction)?;
        record::end(store, record, report.outcome, &report.detail, &[])?;
        report.host = Some(classify(&lock, helper, store, options)?);
    }
    drop(lock);
    report.elapsed = started.elapsed();
    Ok(report)
}

/// The GPUs the layout names on this host (only those of `options.devices` when given).
fn resolve(
    host: &Host,
    specs: &[Spec],
    options: &ApplyOptions,
    report: &mut ApplyReport,
) -> Result<Vec<Wanted>, ApplyError> {
    let gpus = host_gpus(host.sysfs_root())?;
    let selection = select(specs, &gpus)?;
    report.warnings.extend(selection.absent.iter().cloned());
    let mut wanted = selection.wanted;
    if !options.devices.is_empty() {
        for device in &options.devices {
            if !wanted.iter().any(|w| w.gpu.bdf == *device) {
                return Err(ApplyError::NotNamed {
                    device: *device,
                    label: options.label.clone(),
                });
            }
        }
        wanted.retain(|w| options.devices.contains(&w.gpu.bdf));
    }
    Ok(wanted)
}

/// The sync that ends an apply, under its lock.
fn classify(
    lock: &HostLock,
    helper: &Helper,
    store: &mut dyn StateStore,
    options: &ApplyOptions,
) -> Result<HostAfter, ApplyError> {
    let after = sync_under(
        lock,
        helper,
        store,
        &SyncOptions::new(options.pool_enabled, AfterBoot::No),
    )?;
    Ok(HostAfter {
        status: after.status,
        reason: after.reason,
        message: after.message,
    })
}

/// The preflight, then (unless it refused, or this is a dry run) the writes, recorded.
fn go(
    ctx: &mut Ctx<'_, '_>,
    store: &mut dyn StateStore,
    reset: &mut ResetWith<'_>,
    wanted: Vec<Wanted>,
    direction: Direction,
    options: &ApplyOptions,
    report: &mut ApplyReport,
) -> Result<(), ApplyError> {
    let mut cards = match preflight::preflight(ctx.lock, ctx.helper, ctx.format, wanted) {
        Preflight::Refused {
            reason,
            detail,
            gpus,
        } => {
            report.outcome = ApplyOutcome::Blocked(reason);
            report.detail = detail;
            report.gpus = gpus;
            return Ok(());
        }
        Preflight::Go(cards) => cards,
    };
    for gpu in &cards {
        for line in &gpu.report.plan {
            ctx.say(gpu.report.device, format!("plan: {line}"));
        }
    }
    if options.dry_run {
        report.outcome = ApplyOutcome::DryRun;
        report.gpus = cards.into_iter().map(|gpu| gpu.report).collect();
        return Ok(());
    }
    // From here on the host is between layouts until the record says how the apply ended.
    let record = record::started(store, &options.label, direction)?;
    record::begin(store, &record)?;
    if let Err(stop) = phases::run(ctx, reset, &mut cards, report) {
        report.outcome = stop.outcome;
        report.detail = stop.detail;
    }
    let read: Vec<_> = cards
        .iter()
        .map(|gpu| (gpu.wanted.gpu.clone(), gpu.reply.outcome().partition_mode()))
        .collect();
    report.gpus = cards.into_iter().map(|gpu| gpu.report).collect();
    record::end(store, record, report.outcome, &report.detail, &read)?;
    report.host = Some(classify(ctx.lock, ctx.helper, store, options)?);
    Ok(())
}

/// The layout that leaves partitioning: MIG off on every NVIDIA GPU bound to `nvidia`.
pub fn leave() -> Vec<Spec> {
    vec![Spec::new(Devices::All, false, Vec::new())]
}
