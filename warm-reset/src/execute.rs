//! The executor: drives the machine, performing its actions through a [`Backend`], a
//! [`Clock`], the host lock and the journal.

use crate::backend::Backend;
use crate::journal::{InFlight, Journal, JournalError, LastReset};
use crate::machine::{
    Action, Event, InvalidTransition, LockAnswer, MachineConfig, PendingColdReboot, State, step,
};
use crate::method::Method;
use crate::reasons::ResetOutcome;
use crate::target::Target;
use crate::warning::ResetWarning;
use gpu_host_probe::{Clock, SystemClock};
use gpu_host_probe::{Host, HostLock, LockError};
use gpu_partition_types::Bdf;
use serde::ser::SerializeStruct;
use std::collections::VecDeque;
use std::time::Duration;

/// How a run ended.
///
/// It serializes to the document of `mxctl --json reset`: `outcome`, `reason` (`""` when done
/// or a dry run), `detail`, `target`, `gpus`, `verified`, `group`, `method`, `elapsed_ms` and
/// `warnings` (their messages).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResetReport {
    /// How it ended, with its reason.
    pub outcome: ResetOutcome,
    /// What was found, for people: why it was blocked or needs a cold reboot, with its causes
    /// (empty when done or a dry run).
    pub detail: String,
    /// The ID as given.
    pub target: String,
    /// The GPUs the ID names (empty when it was never resolved).
    pub gpus: Vec<Bdf>,
    /// Every device verified after the reset (MetaX: every GPU listed before it).
    pub verified: Vec<Bdf>,
    /// The devices the verification found not back when it required a cold reboot, where the
    /// backend tells them apart (empty otherwise): the others of the group are back.
    pub not_back: Vec<Bdf>,
    /// The interconnect group reset together (MetaX node IDs from `mx-smi topo -m`, NVIDIA
    /// indices with their NVLink peers); `None` when it did not read.
    pub group: Option<Vec<u32>>,
    /// The method of the run.
    pub method: Method,
    /// How long the run took.
    pub elapsed: Duration,
    /// Things that did not change the course but that a person should know.
    pub warnings: Vec<ResetWarning>,
}

impl serde::Serialize for ResetReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let strings = |bdfs: &[Bdf]| bdfs.iter().map(ToString::to_string).collect::<Vec<_>>();
        let mut report = serializer.serialize_struct("ResetReport", 10)?;
        report.serialize_field("outcome", self.outcome.as_str())?;
        report.serialize_field("reason", self.outcome.reason_str())?;
        report.serialize_field("detail", &self.detail)?;
        report.serialize_field("target", &self.target)?;
        report.serialize_field("gpus", &strings(&self.gpus))?;
        report.serialize_field("verified", &strings(&self.verified))?;
        report.serialize_field("not_back", &strings(&self.not_back))?;
        report.serialize_field("group", &self.group)?;
        report.serialize_field("method", &self.method)?;
        report.serialize_field(
            "elapsed_ms",
            &u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        )?;
        report.serialize_field("warnings", &self.warnings)?;
        report.end()
    }
}

/// A run that could not go on; nothing was reset after such an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecuteError {
    /// The journal could not be read or written.
    #[error("the reset journal failed")]
    Journal(#[from] JournalError),
    /// The host lock's file could not be opened.
    #[error("the host lock failed")]
    Lock(#[source] LockError),
    /// The machine was given an event that does not belong to its state (a fault of the
    /// executor or the backend). A reset in flight stays in the journal.
    #[error("the reset machine stopped")]
    InvalidTransition(#[source] Box<InvalidTransition>),
    /// The machine asked for nothing more before it reached an end.
    #[error("the reset machine stopped in state `{}` before an end", .0.name())]
    Unfinished(Box<State>),
    /// The machine asked for the journal before the host lock was held (a fault of the
    /// machine): nothing was written.
    #[error("the reset machine asked for the journal before the host lock was held")]
    JournalWithoutLock,
    /// The reset could not be recorded in the machine's record of writes to its cards
    /// ([`gpu_host_probe::HostLock::record_write`]), so it was not issued.
    #[error("the reset could not be recorded as a write to the cards, so it was not issued")]
    NotRecorded(#[source] gpu_host_probe::RecordError),
}

/// What sees every state a run enters, with the time.
pub type Observer<'a> = &'a mut dyn FnMut(&State, Duration);

/// One reset: what to reset, on which host, through which backend, on which clock.
///
/// The host's state directory holds the host lock (taken without waiting: held by another GPU
/// operation, the reset is blocked `lock_busy`) and the journal, and the kernel's boot id is
/// read from its procfs (a reset journalled under another boot is over).
pub struct ResetRun<'a> {
    config: &'a MachineConfig,
    host: &'a Host,
    held: Option<&'a HostLock>,
    backend: &'a mut dyn Backend,
    clock: Option<&'a dyn Clock>,
    observe: Option<Observer<'a>>,
}

impl std::fmt::Debug for ResetRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResetRun")
            .field("config", self.config)
            .field("host", self.host)
            .finish_non_exhaustive()
    }
}

impl<'a> ResetRun<'a> {
    /// A run of `config` on `host` through `backend`, on the real clock.
    pub fn new(config: &'a MachineConfig, host: &'a Host, backend: &'a mut dyn Backend) -> Self {
        Self {
            config,
            host,
            held: None,
            backend,
            clock: None,
            observe: None,
        }
    }

    /// A run of `config` under the host lock the caller already holds, on the lock's host,
    /// through `backend`: for an operation that resets as one of its steps (a plan step, a MIG
    /// layout whose mode change waits for a reset) and must not let go of the lock between
    /// them. The journal is written in the lock's state directory, as for any run.
    pub fn under(
        config: &'a MachineConfig,
        lock: &'a HostLock,
        backend: &'a mut dyn Backend,
    ) -> Self {
        Self {
            held: Some(lock),
            ..Self::new(config, lock.host(), backend)
        }
    }

    /// Runs on `clock` instead (a [`VirtualClock`](gpu_host_probe::VirtualClock) in tests and the
    /// simulator).
    pub fn clock(mut self, clock: &'a dyn Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Shows each state the machine enters, once, with the time, to `observe` (progress for
    /// people): a state it stays in while it waits — verifying, check after check — is shown
    /// when it is entered, not at every check.
    pub fn observe(mut self, observe: Observer<'a>) -> Self {
        self.observe = Some(observe);
        self
    }
}

/// Where the run's host lock comes from.
enum Lock<'a> {
    /// Taken by the run when the machine asks, from the host.
    Take(Option<HostLock>),
    /// Already held by the caller (a plan step holds it for all its actions).
    Held(&'a HostLock),
}

impl Lock<'_> {
    fn held(&self) -> Option<&HostLock> {
        match self {
            Self::Take(lock) => lock.as_ref(),
            Self::Held(lock) => Some(lock),
        }
    }
}

/// Runs the procedure to its end: taking the host lock without waiting when the machine asks
/// for it, or under the lock the run was made with ([`ResetRun::under`]).
pub fn execute(run: ResetRun<'_>) -> Result<ResetReport, ExecuteError> {
    let lock = match run.held {
        Some(held) => Lock::Held(held),
        None => Lock::Take(None),
    };
    drive(run, lock)
}

/// Takes the host lock without waiting: `Err` naming the holder when another GPU operation
/// holds it (the lock's own words: its pid, and the state directory it works for).
/// The host `backend` runs on: `host`, or — a simulation, which touches no card — its simulated
/// host, with its own lock and journal, whatever host it was given (the one rule for
/// [`execute`] and [`crate::run_plan_step`]).
pub(crate) fn host_for<'a>(backend: &dyn Backend, host: &'a Host) -> std::borrow::Cow<'a, Host> {
    if backend.simulation() && !host.is_simulated() {
        std::borrow::Cow::Owned(host.simulated())
    } else {
        std::borrow::Cow::Borrowed(host)
    }
}

pub(crate) fn try_lock(host: &Host) -> Result<Result<HostLock, String>, LockError> {
    match host.try_lock() {
        Ok(held) => Ok(Ok(held)),
        Err(error) if error.is_busy() => Ok(Err(error.to_string())),
        Err(error) => Err(error),
    }
}

fn drive(run: ResetRun<'_>, mut lock: Lock<'_>) -> Result<ResetReport, ExecuteError> {
    let ResetRun {
        config,
        host,
        held: _,
        backend,
        clock,
        mut observe,
    } = run;
    // A simulation touches no card: it runs on the simulated host, its own lock and journal,
    // whatever host or lock it was given.
    let host = host_for(&*backend, host);
    if let std::borrow::Cow::Owned(_) = host {
        lock = Lock::Take(None);
    }
    let host = host.as_ref();
    let system = SystemClock::new();
    let clock = clock.unwrap_or(&system);
    let boot_id = gpu_host_probe::read_boot_id(host.proc_root());
    let boot_id = boot_id.as_deref();
    let started = clock.now();
    let mut state = State::Planned;
    let mut events = VecDeque::from([Event::Start]);
    let mut warnings = Vec::new();
    while let Some(event) = events.pop_front() {
        let before = state.name();
        let (next, actions) = match step(config, state, event, clock.now()) {
            Ok(next) => next,
            Err(invalid) => {
                tracing::error!("{invalid}");
                return Err(ExecuteError::InvalidTransition(invalid));
            }
        };
        // The observer is told of each state once, when it is entered: a verification that
        // checks again stays one state however many times it looks.
        if next.name() != before {
            tracing::debug!("{before} -> {}", next.name());
            if let Some(observe) = observe.as_mut() {
                observe(&next, clock.now());
            }
        }
        state = next;
        for action in actions {
            let writer = || {
                lock.held()
                    .map(Journal::new)
                    .ok_or(ExecuteError::JournalWithoutLock)
            };
            let event = match action {
                Action::TakeLock => {
                    let answer = match &mut lock {
                        Lock::Take(taken) => match try_lock(host).map_err(ExecuteError::Lock)? {
                            Ok(held) => {
                                *taken = Some(held);
                                LockAnswer::Taken
                            }
                            Err(holder) => LockAnswer::Held(holder),
                        },
                        Lock::Held(_) => LockAnswer::Taken,
                    };
                    Some(Event::Lock(answer))
                }
                Action::ReadJournal => {
                    Some(Event::Journal(writer()?.view(clock.unix_ms(), boot_id)?))
                }
                Action::CheckRoot => Some(Event::Root(backend.is_root())),
                Action::CheckHost => Some(Event::Host(backend.prepare())),
                Action::Resolve => Some(Event::Resolved(backend.resolve(&config.target))),
                Action::ReadColdReboots { target } => Some(Event::ColdReboots(
                    writer()?.load()?.cold_reboots(boot_id, &touched(&target)),
                )),
                Action::CheckUse { target } => Some(Event::Use(backend.check_use(&target))),
                Action::MarkKernelLog => Some(Event::KernelLog(backend.mark_kernel_log())),
                Action::WriteJournal { target } => {
                    // First the record of writes: from here on what any observation of these
                    // cards said is over (a reset it could not record is not issued, and leaves
                    // no reset in flight in the journal).
                    let held = lock.held().ok_or(ExecuteError::JournalWithoutLock)?;
                    held.record_write(
                        &touched(&target),
                        gpu_host_probe::Writer::WarmReset {
                            method: gpu_partition_types::Token::as_str(target.method()).to_owned(),
                        },
                    )
                    .map_err(ExecuteError::NotRecorded)?;
                    writer()?.begin(InFlight::new(
                        target,
                        clock.unix_ms(),
                        u64::try_from(config.window.as_millis()).unwrap_or(u64::MAX),
                        boot_id.map(str::to_owned),
                    ))?;
                    None
                }
                Action::IssueReset { target, deadline } => {
                    let within = deadline.saturating_sub(clock.now());
                    tracing::info!(
                        "{} reset of {} (window {:?})",
                        target.method(),
                        target.id,
                        config.window
                    );
                    Some(Event::ResetEnded(backend.reset(&target, within)))
                }
                Action::CheckBack { target } => Some(Event::Back(backend.check_back(&target))),
                Action::Wait(duration) => {
                    clock.sleep(duration);
                    Some(Event::Tick)
                }
                Action::ReadKernelErrors { target } => {
                    Some(Event::KernelErrors(backend.kernel_errors(&target)))
                }
                Action::CloseJournal => {
                    if let Err(error) = writer()?.close() {
                        warn(
                            &mut warnings,
                            ResetWarning::JournalNotClosed(
                                gpu_host_probe::chain::Chain(&error).to_string(),
                            ),
                        );
                    }
                    None
                }
                Action::Warn(warning) => {
                    warn(&mut warnings, warning);
                    None
                }
            };
            events.extend(event);
        }
    }
    let mut report = report(config, state, warnings, clock.now().saturating_sub(started))?;
    // A run that reset (or verified an earlier run's reset) records how it ended; a blocked
    // run and a dry run change nothing, not even the journal.
    if report.outcome.reset_issued() {
        if let Some(held) = lock.held() {
            let last = LastReset::new(report.outcome, &report.target, clock.unix_ms());
            if let Err(error) = Journal::new(held).record_last(last) {
                warn(
                    &mut report.warnings,
                    ResetWarning::EndNotRecorded(gpu_host_probe::chain::Chain(&error).to_string()),
                );
            }
            // A device not back is not warm-reset again in this boot by anything of ours.
            if let ResetOutcome::ColdRebootRequired(reason) = report.outcome {
                let mut devices = if report.not_back.is_empty() {
                    report
                        .gpus
                        .iter()
                        .chain(&report.verified)
                        .copied()
                        .collect()
                } else {
                    report.not_back.clone()
                };
                devices.sort();
                devices.dedup();
                let pending = PendingColdReboot::new(
                    devices,
                    &report.target,
                    reason,
                    clock.unix_ms(),
                    boot_id.map(str::to_owned),
                );
                if let Err(error) = Journal::new(held).record_cold_reboot(pending) {
                    warn(
                        &mut report.warnings,
                        ResetWarning::EndNotRecorded(
                            gpu_host_probe::chain::Chain(&error).to_string(),
                        ),
                    );
                }
            }
        }
    }
    drop(lock);
    Ok(report)
}

/// Every device a reset of `target` touches: those its ID names and those verified after it.
fn touched(target: &Target) -> Vec<Bdf> {
    let mut devices: Vec<Bdf> = target
        .devices()
        .into_iter()
        .chain(target.verified())
        .collect();
    devices.sort();
    devices.dedup();
    devices
}

fn warn(warnings: &mut Vec<ResetWarning>, warning: ResetWarning) {
    tracing::warn!("{warning}");
    warnings.push(warning);
}

fn report(
    config: &MachineConfig,
    end: State,
    warnings: Vec<ResetWarning>,
    elapsed: Duration,
) -> Result<ResetReport, ExecuteError> {
    // Which states are ends is the state's own rule ([`State::outcome`]).
    let Some(outcome) = end.outcome() else {
        return Err(ExecuteError::Unfinished(Box::new(end)));
    };
    let (detail, target, not_back): (String, Option<Target>, Vec<Bdf>) = match end {
        State::Done { target } | State::DryRun { target } => {
            (String::new(), Some(target), Vec::new())
        }
        State::Blocked { detail, .. } => (detail, None, Vec::new()),
        State::ColdRebootRequired {
            detail,
            target,
            not_back,
            ..
        } => (detail, Some(target), not_back),
        running => return Err(ExecuteError::Unfinished(Box::new(running))),
    };
    let target = target.as_ref();
    Ok(ResetReport {
        outcome,
        detail,
        target: target.map_or_else(|| config.target.to_string(), |target| target.id.clone()),
        gpus: target.map(Target::devices).unwrap_or_default(),
        verified: target.map(Target::verified).unwrap_or_default(),
        not_back,
        group: target.and_then(Target::group),
        method: config.method,
        elapsed,
        warnings,
    })
}
