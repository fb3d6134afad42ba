//! The executor: a layout applied under the host lock, GPU by GPU, by diff — and what the host
//! is declared to be, kept and restored.
//!
//! 1. Under the host lock (not waited for by default: held by another GPU operation, the apply
//!    is blocked `lock_busy`), the `apply-start` hooks run, the layout is resolved against the
//!    host's GPUs and every GPU it names is read and planned. Before anything is written, a
//!    plan is refused — for the whole apply — when it cannot be made (`layout_impossible`,
//!    naming the GPU and profile), when the card has processes or a vGPU sits on an instance
//!    to destroy (`gpu_busy`, naming them), when a card does not read (`gpu_unreadable`), or
//!    (a restore) when a declared slot holds a card of another model (`card_changed`).
//! 2. The `pre-apply-mode` hooks run when a mode changes, the `pre-apply-config` hooks when
//!    instances are destroyed or created; one that fails blocks the apply (`hook_failed`).
//! 3. The host is written `entering` (or `leaving`) with `layout_applying`, and the apply is
//!    recorded as running.
//! 4. Each GPU's destroys and mode change run as one batch of the helper's `apply`.
//! 5. A mode change the card holds pending is completed by a warm reset of that GPU (and its
//!    NVLink peers) through `warm-reset`.
//! 6. Each GPU is planned again from what it now says (only creates may remain); its GPU
//!    instances are created at the plan's placements, then their compute instances.
//! 7. The read-back must equal the layout (GPU instances, compute instances, placements);
//!    anything else is `failed` with the difference.
//! 8. The apply is recorded as it ended, with what the host is now declared to be (each GPU
//!    it named, its mode and its instances where the plan placed them, the board), and a sync
//!    classifies the host under the same lock: `active (ready)` when the layout holds with the
//!    pool on; `entering (layout_failed)` with the message while a failure is unhealed.
//! 9. The `apply-exit` hooks run, with the outcome.
//!
//! [`restore()`] runs the same executor on the declaration: zero steps when the cards hold it.
//!
//! Every helper run has a deadline (the helper's, and for a batch one more per step). Since
//! every plan is a diff of what the card says now, a crash at any point leaves a host a second
//! run brings to the layout.

mod busy;
mod ctx;
mod hooks;
mod phases;
mod preflight;
mod reset;

pub use hooks::{HOOK_DEADLINE, Hook, HookPoint, HookRun, Hooks};
pub use phases::STEP_DEADLINE;

use crate::document::{Devices, Spec};
use crate::plan::PlanLine;
use crate::report::{ApplyOutcome, ApplyReason, ApplyReport, ApplyWarning, HostAfter};
use crate::select::{HostGpu, Wanted, host_gpus, select};
use ctx::{Ctx, Shared};
use gpu_host_probe::helper::Helper;
use gpu_host_probe::{Cancel, Host, HostLock, LockError};
use gpu_partition_types::{Bdf, StepResult, Token};
use hooks::HookEnv;
use host_sync::{
    AfterBoot, ApplyEnd, ApplyStateError, BootRestore, BootRestoreStart, Direction, LayoutOutcome,
    Pool, StateLost, StateStore, StoreError, StoredReason, SyncOptions, sync_under,
};
use layout_model::{Board, Declaration, Unnamed};
use preflight::Preflight;
use std::collections::BTreeMap;
use std::time::Duration;
use warm_reset::{ResetOutcome, ResetWith};

/// What the caller decides for one apply.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApplyOptions {
    /// The layout's label, for the record and the report.
    pub label: String,
    /// Only these GPUs of the layout (none: every GPU it names).
    pub devices: Vec<Bdf>,
    /// Plan and show; write nothing (and run no hook).
    pub dry_run: bool,
    /// The pool switch: the sync that ends the apply classifies with it, and a layout that
    /// turns MIG on is refused with it off.
    pub pool: Pool,
    /// How long to wait for the host lock (default zero: held, the apply is blocked).
    pub lock_wait: Duration,
    /// The commands run around the writes.
    pub hooks: Hooks,
    /// Ends the apply early when triggered from another thread (none by default): checked
    /// while it waits for the lock, between GPUs and between batches of steps; a helper run in
    /// progress is ended as its deadline would end it; a warm reset in its window is never cut
    /// short. The apply then ends `blocked (cancelled)` when nothing was written yet, `failed
    /// (cancelled)` once writes began, recorded so, and the cards not read since are
    /// `unknown (cancelled)` until the next sync. A cancel that ended the apply before its
    /// first write leaves the declaration before it as it was.
    pub cancel: Option<Cancel>,
    /// What becomes of the cards' instances the layout does not name (default: destroyed, the
    /// card made to match); declared with the layout, so later syncs and restores treat them
    /// alike.
    pub unnamed: Unnamed,
}

impl ApplyOptions {
    /// An apply of the layout `label` with this pool switch.
    pub fn new(label: impl Into<String>, pool: Pool) -> Self {
        Self {
            label: label.into(),
            devices: Vec::new(),
            dry_run: false,
            pool,
            lock_wait: Duration::ZERO,
            hooks: Hooks::none(),
            cancel: None,
            unnamed: Unnamed::Match,
        }
    }

    /// Treats the cards' instances the layout does not name as `unnamed` says.
    pub fn unnamed(mut self, unnamed: Unnamed) -> Self {
        self.unnamed = unnamed;
        self
    }

    /// Ends the apply early when `cancel` is triggered.
    pub fn cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
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

    /// Waits up to `wait` for the host lock.
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Runs `hooks` around the writes.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }
}

/// What an apply does, as it does it (each displays as a line for people).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// A line of a GPU's plan, shown before any write.
    Plan {
        /// The GPU.
        device: Bdf,
        /// The line.
        line: PlanLine,
    },
    /// A step the helper ran, as it answered.
    Step {
        /// The GPU.
        device: Bdf,
        /// Its result.
        step: StepResult,
    },
    /// A warm reset begins, to complete the GPU's mode change.
    Resetting {
        /// The GPU.
        device: Bdf,
    },
    /// An earlier run's reset still in flight was waited out.
    WaitedForEarlierReset {
        /// The GPU.
        device: Bdf,
        /// For how long.
        waited: Duration,
    },
    /// That earlier reset had completed the mode change: no reset is issued.
    EarlierResetCompleted {
        /// The GPU.
        device: Bdf,
    },
    /// The warm reset ended.
    Reset {
        /// The GPU.
        device: Bdf,
        /// How.
        outcome: ResetOutcome,
    },
    /// The read-back: the GPU is as the layout wants.
    ReadBack {
        /// The GPU.
        device: Bdf,
    },
}

impl Progress {
    /// The GPU it is about.
    pub fn device(&self) -> Bdf {
        match self {
            Self::Plan { device, .. }
            | Self::Step { device, .. }
            | Self::Resetting { device }
            | Self::WaitedForEarlierReset { device, .. }
            | Self::EarlierResetCompleted { device }
            | Self::Reset { device, .. }
            | Self::ReadBack { device } => *device,
        }
    }
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Plan { line, .. } => write!(f, "plan: {line}"),
            Self::Step { step, .. } => write!(f, "{step}"),
            Self::Resetting { .. } => f.write_str("warm reset to complete the mode change"),
            Self::WaitedForEarlierReset { waited, .. } => write!(
                f,
                "waited {:.1} s for an earlier reset's window to end",
                waited.as_secs_f64()
            ),
            Self::EarlierResetCompleted { .. } => {
                f.write_str("the earlier reset completed the mode change")
            }
            Self::Reset { outcome, .. } => write!(f, "warm reset: {outcome}"),
            Self::ReadBack { .. } => f.write_str("read back: as the layout wants"),
        }
    }
}

/// What sees every step of an apply as it runs.
pub type ApplyObserver<'a> = &'a mut dyn FnMut(&Progress);

/// One apply: on which host, through which helper, into which store, resetting how.
pub struct ApplyRun<'a> {
    host: &'a Host,
    helper: &'a Helper,
    store: &'a mut dyn StateStore,
    reset: ResetWith<'a>,
    observe: Option<ApplyObserver<'a>>,
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
    pub fn observe(mut self, observe: ApplyObserver<'a>) -> Self {
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
    /// The apply's record could not be written.
    #[error("cannot record the apply")]
    Record(#[source] ApplyStateError),
    /// The store did not keep what the apply recorded (a store written before a member of the
    /// state existed drops it, the declaration above all): read back under the lock, the first
    /// member that differs is named. The cards are as the report says.
    #[error("the state store did not keep the apply's record: {difference}")]
    NotKept {
        /// The first member that differs, saved and loaded.
        difference: host_sync::FieldDifference,
        /// What the apply did.
        report: Box<ApplyReport>,
    },
}

impl From<ApplyStateError> for ApplyError {
    fn from(error: ApplyStateError) -> Self {
        match error {
            ApplyStateError::Store(store) => Self::Store(store),
            ApplyStateError::Scan(scan) => Self::Scan(scan),
            other => Self::Record(other),
        }
    }
}

/// Applies the layout `specs` (one label of a document) as `options` say.
///
/// It blocks at worst for: `options.lock_wait`; each hook's deadline
/// ([`Hooks::deadline`], [`HOOK_DEADLINE`] by default); the helper's `--version` deadline and
/// one read deadline per GPU (the preflight); per GPU two batches of steps, each the helper's
/// deadline plus [`STEP_DEADLINE`] per step; per GPU whose mode change waits for a reset, an
/// earlier reset's window still open (at most [`ResetWith::window`]) and its own reset's
/// window; a read of each GPU after its reset; and the closing sync (as
/// [`host_sync::sync_under`]). [`ApplyOptions::cancel`] ends it at the next check — while it
/// waits for the lock, between GPUs, between batches, within the runner's check interval
/// (10 ms) plus the helper's kill grace for a run in progress — but never inside a reset's
/// window.
pub fn apply(
    run: ApplyRun<'_>,
    specs: &[Spec],
    options: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    let clock = run.reset.clock_or_real();
    let started = clock.now();
    let mut report = ApplyReport::new(&options.label);
    let Some(lock) = take_lock(
        run.host,
        options.lock_wait,
        options.cancel.as_ref(),
        &mut report,
    )?
    else {
        report.elapsed = clock.now().saturating_sub(started);
        return Ok(report);
    };
    let wanted = resolve(run.host, specs, options, &mut report)?;
    run_locked(run, &lock, Job::new(wanted, None), options, &mut report)?;
    drop(lock);
    report.elapsed = clock.now().saturating_sub(started);
    Ok(report)
}

/// What the caller decides for one restore: [`ApplyOptions`] without a label (the label is
/// the declaration's).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RestoreOptions {
    /// Only these declared GPUs (none: every one).
    pub devices: Vec<Bdf>,
    /// Plan and show; write nothing (and run no hook).
    pub dry_run: bool,
    /// The pool switch.
    pub pool: Pool,
    /// How long to wait for the host lock.
    pub lock_wait: Duration,
    /// The commands run around the writes.
    pub hooks: Hooks,
    /// Ends the restore early when triggered, as [`ApplyOptions::cancel`] ends an apply.
    pub cancel: Option<Cancel>,
    /// What becomes of instances the declaration does not name; `None` (the default): what
    /// each declared GPU says (what its apply chose).
    pub unnamed: Option<Unnamed>,
    /// The boot's restore: once per boot by itself — one already run in this boot makes this
    /// one do nothing ([`Restore::AlreadyRanThisBoot`]); this one is recorded before it writes.
    pub once_per_boot: bool,
}

impl RestoreOptions {
    /// A restore with this pool switch, of every declared GPU, not waiting for the lock.
    pub fn new(pool: Pool) -> Self {
        Self {
            devices: Vec::new(),
            dry_run: false,
            pool,
            lock_wait: Duration::ZERO,
            hooks: Hooks::none(),
            cancel: None,
            unnamed: None,
            once_per_boot: false,
        }
    }

    /// Treats the cards' instances the declaration does not name as `unnamed` says, whatever
    /// each declared GPU says.
    pub fn unnamed(mut self, unnamed: Unnamed) -> Self {
        self.unnamed = Some(unnamed);
        self
    }

    /// Runs as the boot's restore: once per boot.
    pub fn once_per_boot(mut self, once: bool) -> Self {
        self.once_per_boot = once;
        self
    }

    /// Ends the restore early when `cancel` is triggered.
    pub fn cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Only these declared GPUs.
    pub fn devices(mut self, devices: Vec<Bdf>) -> Self {
        self.devices = devices;
        self
    }

    /// Plan and show only.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Waits up to `wait` for the host lock.
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Runs `hooks` around the writes.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }
}

/// How a restore went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// Nothing is declared on this host (no apply or leave has written): nothing was done.
    NothingDeclared,
    /// The stored state did not read and was kept aside: what the host was declared to be is not
    /// known, and nothing was done (a boot restore must fail so, not report that nothing was
    /// ever declared).
    StateLost(StateLost),
    /// A boot restore already ran in this boot ([`RestoreOptions::once_per_boot`]): nothing
    /// was done.
    AlreadyRanThisBoot(BootRestore),
    /// The declaration was applied by diff (zero steps when the cards hold it), recorded as an
    /// apply of its label.
    Ran(Box<ApplyReport>),
}

/// Brings the host back to what it is declared to be ([`layout_model::Declaration`]): the same
/// executor as [`apply()`], over each declared GPU at its declared placements; a card of
/// another model in a declared slot blocks before any write (`card_changed`), another board of
/// the same model is restored with a warning, and a declared GPU not on the host (or not bound
/// to `nvidia`) is left alone with a warning. What a toolstack runs at start, after its
/// database sync, on its own thread (the package's boot unit runs `mxctl partition restore
/// --at-boot`, [`RestoreOptions::once_per_boot`]). The state is read under the host lock only.
pub fn restore(run: ApplyRun<'_>, options: &RestoreOptions) -> Result<Restore, ApplyError> {
    let clock = run.reset.clock_or_real();
    let started = clock.now();
    // The declaration is read under the lock: held by another operation, the report says so
    // under the name of a restore.
    let mut report = ApplyReport::new("restore");
    let Some(lock) = take_lock(
        run.host,
        options.lock_wait,
        options.cancel.as_ref(),
        &mut report,
    )?
    else {
        report.elapsed = clock.now().saturating_sub(started);
        return Ok(Restore::Ran(Box::new(report)));
    };
    let state = run.store.load()?.unwrap_or_default();
    let Some(declared) = state.declared else {
        return Ok(match state.lost {
            Some(lost) => Restore::StateLost(lost),
            None => Restore::NothingDeclared,
        });
    };
    if options.once_per_boot && !options.dry_run {
        if let BootRestoreStart::AlreadyRan(earlier) =
            host_sync::begin_boot_restore(&lock, run.store, &run.host.boot())?
        {
            return Ok(Restore::AlreadyRanThisBoot(earlier));
        }
    }
    report.label.clone_from(&declared.label);
    let mut job = declared_job(run.host, &declared, &options.devices, &mut report)?;
    if let Some(unnamed) = options.unnamed {
        for wanted in &mut job.wanted {
            wanted.want = wanted.want.clone().unnamed(unnamed);
        }
    }
    let settings = ApplyOptions {
        label: declared.label.clone(),
        devices: options.devices.clone(),
        dry_run: options.dry_run,
        pool: options.pool,
        lock_wait: options.lock_wait,
        hooks: options.hooks.clone(),
        cancel: options.cancel.clone(),
        unnamed: options.unnamed.unwrap_or_default(),
    };
    run_locked(run, &lock, job, &settings, &mut report)?;
    drop(lock);
    report.elapsed = clock.now().saturating_sub(started);
    Ok(Restore::Ran(Box::new(report)))
}

/// The layout that leaves partitioning: MIG off on every NVIDIA GPU bound to `nvidia`.
pub fn leave() -> Vec<Spec> {
    vec![Spec::new(Devices::All, false, Vec::new())]
}

/// The GPUs an apply writes, and (a restore) the boards declared in their slots.
struct Job {
    wanted: Vec<Wanted>,
    boards: Option<BTreeMap<Bdf, Board>>,
}

impl Job {
    fn new(wanted: Vec<Wanted>, boards: Option<BTreeMap<Bdf, Board>>) -> Self {
        Self { wanted, boards }
    }
}

/// The host lock, or `None` with the report blocked `lock_busy` (nothing else is done then).
fn take_lock(
    host: &Host,
    wait: Duration,
    cancel: Option<&Cancel>,
    report: &mut ApplyReport,
) -> Result<Option<HostLock>, ApplyError> {
    let taken = match cancel {
        Some(cancel) => host.lock_unless(wait, cancel),
        None => host.lock(wait),
    };
    match taken {
        Ok(lock) => Ok(Some(lock)),
        Err(busy) if busy.is_busy() => {
            report.outcome = ApplyOutcome::Blocked(ApplyReason::LockBusy);
            report.detail = Some(busy.to_string());
            Ok(None)
        }
        Err(cancelled @ LockError::Cancelled { .. }) => {
            report.outcome = ApplyOutcome::Blocked(ApplyReason::Cancelled);
            report.detail = Some(format!("{cancelled}; nothing was changed"));
            Ok(None)
        }
        Err(error) => Err(ApplyError::Lock(error)),
    }
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
    report
        .warnings
        .extend(selection.absent.into_iter().map(ApplyWarning::Absent));
    let mut wanted = selection.wanted;
    for w in &mut wanted {
        w.want = w.want.clone().unnamed(options.unnamed);
    }
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

/// Each declared GPU (of `devices`, when given) that is an NVIDIA GPU bound to `nvidia` on the
/// host now, wanting what it is declared to be; the others are warned about and left alone.
fn declared_job(
    host: &Host,
    declared: &Declaration,
    devices: &[Bdf],
    report: &mut ApplyReport,
) -> Result<Job, ApplyError> {
    let gpus: Vec<HostGpu> = host_gpus(host.sysfs_root())?;
    for device in devices {
        if !declared.gpus.contains_key(device) {
            return Err(ApplyError::NotNamed {
                device: *device,
                label: declared.label.clone(),
            });
        }
    }
    let mut wanted = Vec::new();
    let mut boards = BTreeMap::new();
    for (bdf, gpu) in &declared.gpus {
        if !devices.is_empty() && !devices.contains(bdf) {
            continue;
        }
        match gpus.iter().find(|found| found.bdf == *bdf) {
            Some(found) => {
                wanted.push(Wanted {
                    gpu: found.clone(),
                    want: gpu.want(),
                    line: None,
                });
                boards.insert(*bdf, gpu.board.clone());
            }
            None => report
                .warnings
                .push(ApplyWarning::DeclaredAbsent { device: *bdf }),
        }
    }
    wanted.sort_by_key(|w| w.gpu.index);
    Ok(Job::new(wanted, Some(boards)))
}

/// An apply under the lock: the hooks around it, the preflight, the writes, the record.
fn run_locked(
    run: ApplyRun<'_>,
    lock: &HostLock,
    job: Job,
    options: &ApplyOptions,
    report: &mut ApplyReport,
) -> Result<(), ApplyError> {
    let ApplyRun {
        host: _,
        helper,
        store,
        mut reset,
        mut observe,
    } = run;
    // Every run of the helper ends when the caller cancels (the closing sync's too).
    let run_helper = helper;
    let cancellable;
    let helper = match &options.cancel {
        Some(cancel) => {
            cancellable = Helper::new(helper.config().clone().cancel(cancel.clone()));
            &cancellable
        }
        None => helper,
    };
    let cancelled = || options.cancel.as_ref().is_some_and(Cancel::is_cancelled);
    let direction = if job.wanted.iter().any(|w| w.want.enabled) {
        Direction::Entering
    } else {
        Direction::Leaving
    };
    let mut progress = |progress: Progress| {
        tracing::debug!("{}: {progress}", progress.device());
        if let Some(observe) = observe.as_mut() {
            observe(&progress);
        }
    };
    let hooked = !options.dry_run;
    let mut env = HookEnv {
        label: options.label.clone(),
        devices: job
            .wanted
            .iter()
            .map(|w| w.gpu.bdf.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        outcome: None,
    };
    let started_hook = if hooked {
        hooks::run_point(
            &options.hooks,
            HookPoint::ApplyStart,
            &env,
            &mut report.hooks,
        )
    } else {
        None
    };
    if let Some(failed) = started_hook {
        block_on_hook(report, &failed);
    } else if direction == Direction::Entering && !options.pool.is_enabled() {
        report.outcome = ApplyOutcome::Blocked(ApplyReason::PoolDisabled);
        report.detail = Some(
            "the pool switch is off, and the layout turns MIG on: switch the pool on first"
                .to_owned(),
        );
    } else if job.wanted.is_empty() {
        report.warnings.push(ApplyWarning::NothingNamed);
    } else {
        match helper.negotiate_apply() {
            Err(_) if cancelled() => block_cancelled(report, "before the helper answered"),
            Err(failure) => {
                report.outcome = ApplyOutcome::Blocked(ApplyReason::HelperUnavailable);
                report.detail = Some(failure.to_string());
            }
            Ok(format) => {
                let mut ctx = Ctx {
                    shared: Shared {
                        lock,
                        helper,
                        settle: run_helper,
                        format,
                        cancel: options.cancel.as_ref(),
                    },
                    progress: &mut progress,
                };
                go(
                    &mut ctx, store, &mut reset, job, direction, options, &env, report,
                )?;
            }
        }
    }
    if matches!(report.outcome, ApplyOutcome::Blocked(_)) && report.host.is_none() {
        // A blocked apply is recorded too (for monitoring), and the host classified.
        let record = host_sync::start_apply(lock, store, &options.label, direction)?;
        let end = ApplyEnd::new(ended(report.outcome), report.detail.clone(), false);
        host_sync::end_apply(lock, store, record, end)?;
        report.host = Some(classify(lock, helper, store, options)?);
    }
    if hooked {
        env.outcome = Some((
            report.outcome.as_str().to_owned(),
            report.outcome.reason().unwrap_or_default().to_owned(),
        ));
        let mut runs = Vec::new();
        if let Some(failed) =
            hooks::run_point(&options.hooks, HookPoint::ApplyExit, &env, &mut runs)
        {
            report.warnings.push(ApplyWarning::ExitHookFailed(failed));
        }
        report.hooks.extend(runs);
    }
    Ok(())
}

/// Blocks the report: the caller cancelled the apply before any write.
fn block_cancelled(report: &mut ApplyReport, when: &str) {
    report.outcome = ApplyOutcome::Blocked(ApplyReason::Cancelled);
    report.detail = Some(format!(
        "the apply was cancelled {when}; nothing was changed"
    ));
}

fn block_on_hook(report: &mut ApplyReport, failed: &HookRun) {
    report.outcome = ApplyOutcome::Blocked(ApplyReason::HookFailed);
    let said = failed.stderr.trim();
    report.detail = Some(if said.is_empty() {
        format!("{failed}; nothing was changed")
    } else {
        format!("{failed} ({said}); nothing was changed")
    });
}

/// The record's outcome of an apply's.
fn ended(outcome: ApplyOutcome) -> LayoutOutcome {
    // Every reason of an apply is a valid stored token (a test checks them all).
    let token = |text: &str| StoredReason::new(text).unwrap_or_default();
    match outcome {
        ApplyOutcome::Done | ApplyOutcome::DryRun => LayoutOutcome::Done,
        ApplyOutcome::Blocked(why) => LayoutOutcome::Blocked(token(why.as_str())),
        ApplyOutcome::Failed(why) => LayoutOutcome::Failed(token(why.as_str())),
        ApplyOutcome::ColdRebootRequired(why) => {
            LayoutOutcome::ColdRebootRequired(token(why.as_str()))
        }
    }
}

/// The sync that ends an apply, under its lock.
fn classify(
    lock: &HostLock,
    helper: &Helper,
    store: &mut dyn StateStore,
    options: &ApplyOptions,
) -> Result<HostAfter, ApplyError> {
    let mut sync = SyncOptions::new(options.pool, AfterBoot::No);
    if let Some(cancel) = &options.cancel {
        sync = sync.cancel(cancel.clone());
    }
    let after = match sync_under(lock, helper, store, &sync) {
        Ok(after) => after,
        // Cancelled, it still wrote the host as it found it: that is the host after.
        Err(host_sync::SyncError::Cancelled {
            written: Some(after),
        }) => *after,
        Err(error) => return Err(error.into()),
    };
    Ok(HostAfter {
        status: after.status,
        reason: after.reason,
        message: after.message,
    })
}

/// The preflight, then (unless it refused, or this is a dry run) the pre-hooks and the writes,
/// recorded with what the host is now declared to be.
#[allow(clippy::too_many_arguments)]
fn go(
    ctx: &mut Ctx<'_, '_>,
    store: &mut dyn StateStore,
    reset: &mut ResetWith<'_>,
    job: Job,
    direction: Direction,
    options: &ApplyOptions,
    env: &HookEnv,
    report: &mut ApplyReport,
) -> Result<(), ApplyError> {
    let shared = ctx.shared;
    let (mut cards, warnings) = match preflight::preflight(
        shared.lock,
        shared.helper,
        shared.format,
        job.wanted,
        job.boards.as_ref(),
    ) {
        Preflight::Refused { gpus, warnings, .. } if shared.cancelled() => {
            report.warnings.extend(warnings);
            block_cancelled(report, "while the cards were read");
            report.gpus = gpus;
            return Ok(());
        }
        Preflight::Refused {
            reason,
            detail,
            impossible,
            gpus,
            warnings,
        } => {
            report.warnings.extend(warnings);
            report.outcome = ApplyOutcome::Blocked(reason);
            report.detail = Some(detail);
            report.impossible = impossible;
            report.gpus = gpus;
            return Ok(());
        }
        Preflight::Go(cards, warnings) => (cards, warnings),
    };
    report.warnings.extend(warnings);
    for gpu in &cards {
        for line in &gpu.report.plan {
            ctx.say(Progress::Plan {
                device: gpu.report.device,
                line: line.clone(),
            });
        }
    }
    if options.dry_run {
        report.outcome = ApplyOutcome::DryRun;
        report.gpus = cards.into_iter().map(|gpu| gpu.report).collect();
        return Ok(());
    }
    // The hooks before the writes: a mode change (and its reset), then the instances.
    let changes_mode = cards.iter().any(|gpu| gpu.changes_mode());
    let changes_instances = cards.iter().any(|gpu| gpu.changes_instances());
    for (point, due) in [
        (HookPoint::PreApplyMode, changes_mode),
        (HookPoint::PreApplyConfig, changes_instances),
    ] {
        if !due {
            continue;
        }
        if let Some(failed) = hooks::run_point(&options.hooks, point, env, &mut report.hooks) {
            block_on_hook(report, &failed);
            report.gpus = cards.into_iter().map(|gpu| gpu.report).collect();
            return Ok(());
        }
    }
    if shared.cancelled() {
        block_cancelled(report, "before the writes");
        report.gpus = cards.into_iter().map(|gpu| gpu.report).collect();
        return Ok(());
    }
    // From here on the host is between layouts until the record says how the apply ended.
    let record = host_sync::start_apply(shared.lock, store, &options.label, direction)?;
    host_sync::begin_apply(shared.lock, store, &record)?;
    phases::run(ctx, reset, &mut cards, report);
    let cancelled = shared.cancelled();
    // Whether any card may have been written: a step done, a reset issued, a batch that gave no
    // answer and left its card changed. None was: the declaration before stands.
    let wrote = cards.iter().any(|gpu| gpu.wrote);
    if !wrote && cancelled {
        report.outcome = ApplyOutcome::Blocked(ApplyReason::Cancelled);
        report.detail = Some(
            "the apply was cancelled before its first write; nothing was written, and the \
             declared layout is as it was"
                .to_owned(),
        );
        report.gpus = cards.into_iter().map(|gpu| gpu.report).collect();
        let end = ApplyEnd::new(ended(report.outcome), report.detail.clone(), false);
        host_sync::end_apply(shared.lock, store, record, end)?;
        report.host = Some(classify(shared.lock, shared.helper, store, options)?);
        return Ok(());
    }
    for gpu in &mut cards {
        let Some(stop) = gpu.stop.as_mut() else {
            gpu.report.outcome = Some(ApplyOutcome::Done);
            continue;
        };
        // A step or a read ended by the cancel fails as cancelled, not as its own reason.
        if let ApplyOutcome::Failed(reason) = stop.outcome {
            if reason != ApplyReason::Cancelled && cancelled {
                stop.outcome = ApplyOutcome::Failed(ApplyReason::Cancelled);
                stop.detail = format!("the apply was cancelled: {}", stop.detail);
            }
        }
        gpu.report.outcome = Some(stop.outcome);
        gpu.report.detail = Some(stop.detail.clone());
    }
    // The apply ends as its worst GPU: a cold reboot before a failure; among equals the
    // first in index order gives the reason. The detail names every GPU that stopped.
    let severity = |outcome: ApplyOutcome| match outcome {
        ApplyOutcome::ColdRebootRequired(_) => 2,
        ApplyOutcome::Failed(_) => 1,
        ApplyOutcome::Done | ApplyOutcome::DryRun | ApplyOutcome::Blocked(_) => 0,
    };
    let stopped: Vec<&phases::Gpu> = cards.iter().filter(|gpu| gpu.stop.is_some()).collect();
    if let Some(worst) = stopped
        .iter()
        .filter_map(|gpu| gpu.stop.as_ref())
        .max_by_key(|stop| severity(stop.outcome))
        .map(|worst| worst.outcome)
    {
        let first = stopped
            .iter()
            .filter_map(|gpu| gpu.stop.as_ref())
            .find(|stop| severity(stop.outcome) == severity(worst))
            .map_or(worst, |stop| stop.outcome);
        report.outcome = first;
        let each: Vec<String> = stopped
            .iter()
            .filter_map(|gpu| gpu.stop.as_ref())
            .map(|stop| stop.detail.clone())
            .collect();
        let held = cards.len() - stopped.len();
        report.detail = Some(if held > 0 {
            format!(
                "{}; the other {held} GPU(s) of the layout hold it",
                each.join("; ")
            )
        } else {
            each.join("; ")
        });
    }
    let modes = cards
        .iter()
        .map(|gpu| (gpu.wanted.gpu.bdf, gpu.reply.outcome().partition_mode()))
        .collect();
    let declared = cards
        .iter()
        .map(|gpu| (gpu.wanted.gpu.bdf, gpu.declared.clone()))
        .collect();
    report.gpus = cards.into_iter().map(|gpu| gpu.report).collect();
    let mut end = ApplyEnd::new(ended(report.outcome), report.detail.clone(), wrote);
    end.modes = modes;
    // The new declaration stands once the layout holds, and after any write (the host is then
    // between layouts until it holds; a restore finishes it); an apply that ended before its
    // first write without the layout holding leaves the one before.
    end.declared = (wrote || report.outcome == ApplyOutcome::Done).then_some(declared);
    match host_sync::end_apply(shared.lock, store, record, end) {
        Ok(()) => {}
        Err(ApplyStateError::Store(StoreError::NotKept { difference })) => {
            return Err(ApplyError::NotKept {
                difference,
                report: Box::new(report.clone()),
            });
        }
        Err(error) => return Err(error.into()),
    }
    report.host = Some(classify(shared.lock, shared.helper, store, options)?);
    Ok(())
}
