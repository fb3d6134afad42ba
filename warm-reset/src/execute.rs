//! The executor: drives the machine, performing its actions through a [`Backend`], a
//! [`Clock`], the host lock and the [`Journal`].

use crate::backend::{Backend, ResetEnd};
use crate::clock::Clock;
use crate::journal::{InFlight, Journal, JournalError, LastReset};
use crate::machine::{Action, Event, InvalidTransition, MachineConfig, State, step};
use crate::method::Method;
use crate::reasons::{OutcomeKind, Reason};
use crate::target::Target;
use gpu_host_probe::lock::{HostLock, LockError};
use gpu_partition_types::Bdf;
use std::collections::VecDeque;
use std::time::Duration;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResetReport {
    /// The outcome.
    pub outcome: OutcomeKind,
    /// Why it was blocked or needs a cold reboot; `None` when done or a dry run.
    pub reason: Option<Reason>,
    /// What was found, for people.
    pub detail: String,
    /// The ID as given.
    pub target: String,
    /// The GPUs the ID names (empty when it was never resolved).
    pub gpus: Vec<Bdf>,
    /// Every device verified after the reset (MetaX: every GPU listed before it).
    pub verified: Vec<Bdf>,
    /// The interconnect group reset together (MetaX node IDs from `mx-smi topo -m`, NVIDIA
    /// indices with their NVLink peers); `None`
    /// when it did not read.
    pub group: Option<Vec<u32>>,
    /// The method of the run.
    pub method: Method,
    /// How long the run took.
    pub elapsed: Duration,
    /// Things that did not change the course but that a person should know.
    pub warnings: Vec<String>,
    /// The state where the run ended.
    pub end: State,
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
}

/// Takes the host lock without waiting: `None` when another GPU operation holds it.
pub(crate) fn try_lock(dir: &std::path::Path) -> Result<Option<HostLock>, LockError> {
    match HostLock::try_acquire(dir) {
        Ok(held) => Ok(Some(held)),
        Err(LockError::Busy { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Runs the procedure to its end. `observe` sees every state the machine enters, with the time.
pub fn execute(
    config: &MachineConfig,
    backend: &mut dyn Backend,
    clock: &dyn Clock,
    journal: &Journal,
    boot_id: Option<&str>,
    observe: &mut dyn FnMut(&State, Duration),
) -> Result<ResetReport, ExecuteError> {
    let started = clock.now();
    let mut state = State::Planned;
    let mut events = VecDeque::from([Event::Start]);
    let mut warnings = Vec::new();
    let mut lock: Option<HostLock> = None;
    while let Some(event) = events.pop_front() {
        let before = state.name();
        let (next, actions) = match step(config, state, event, clock.now()) {
            Ok(next) => next,
            Err(invalid) => {
                tracing::error!("{invalid}");
                return Err(ExecuteError::InvalidTransition(invalid));
            }
        };
        if next.name() != before {
            tracing::debug!("{before} -> {}", next.name());
        }
        observe(&next, clock.now());
        state = next;
        for action in actions {
            let event = match action {
                Action::TakeLock => {
                    lock = try_lock(journal.dir()).map_err(ExecuteError::Lock)?;
                    Some(Event::Lock(lock.is_some()))
                }
                Action::ReadJournal => {
                    Some(Event::Journal(journal.view(clock.unix_ms(), boot_id)?))
                }
                Action::CheckRoot => Some(Event::Root(backend.is_root())),
                Action::CheckHost => Some(Event::Host(backend.prepare())),
                Action::Resolve => Some(Event::Resolved(backend.resolve(&config.id))),
                Action::CheckUse { target } => Some(Event::Use(backend.check_use(&target))),
                Action::MarkKernelLog => Some(Event::KernelLog(backend.mark_kernel_log())),
                Action::WriteJournal { target } => {
                    journal.begin(InFlight {
                        target,
                        started_unix_ms: clock.unix_ms(),
                        window_ms: u64::try_from(config.window.as_millis()).unwrap_or(u64::MAX),
                        boot_id: boot_id.map(str::to_owned),
                    })?;
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
                    Some(match backend.reset(&target, within) {
                        ResetEnd::Finished => Event::ResetExited(Ok(())),
                        ResetEnd::Refused(refusal) => Event::ResetRefused(refusal),
                        ResetEnd::Failed(error) => Event::ResetExited(Err(error)),
                        ResetEnd::Hung => Event::ResetHung,
                    })
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
                    if let Err(error) = journal.close() {
                        warn(
                            &mut warnings,
                            format!("the journal could not be closed: {error}"),
                        );
                    }
                    None
                }
                Action::Warn(message) => {
                    warn(&mut warnings, message);
                    None
                }
            };
            events.extend(event);
        }
    }
    let mut report = report(config, state, warnings, clock.now().saturating_sub(started))?;
    // A run that reset (or verified an earlier run's reset) records how it ended; a blocked
    // run and a dry run change nothing, not even the journal.
    let reset = matches!(
        report.outcome,
        OutcomeKind::Done | OutcomeKind::ColdRebootRequired
    );
    if reset && lock.is_some() {
        let last = LastReset::new(
            report.outcome,
            report.reason,
            &report.target,
            clock.unix_ms(),
        );
        if let Err(error) = journal.record_last(last) {
            warn(
                &mut report.warnings,
                format!(
                    "the end of this run could not be recorded: {}",
                    gpu_host_probe::chain::Chain(&error)
                ),
            );
        }
    }
    drop(lock);
    Ok(report)
}

fn warn(warnings: &mut Vec<String>, message: String) {
    tracing::warn!("{message}");
    warnings.push(message);
}

fn report(
    config: &MachineConfig,
    end: State,
    warnings: Vec<String>,
    elapsed: Duration,
) -> Result<ResetReport, ExecuteError> {
    let (outcome, detail, target): (OutcomeKind, &str, Option<&Target>) = match &end {
        State::Done { target } => (OutcomeKind::Done, "", Some(target)),
        State::DryRun { target } => (OutcomeKind::DryRun, "", Some(target)),
        State::Blocked { detail, .. } => (OutcomeKind::Blocked, detail, None),
        State::ColdRebootRequired { detail, target, .. } => {
            (OutcomeKind::ColdRebootRequired, detail, Some(target))
        }
        State::Planned
        | State::Locking
        | State::ReadingJournal
        | State::CheckingRoot
        | State::CheckingHost
        | State::ResolvingTarget
        | State::CheckingUse { .. }
        | State::CheckingKernelLog { .. }
        | State::Resetting { .. }
        | State::Verifying { .. }
        | State::CheckingKernel { .. } => return Err(ExecuteError::Unfinished(Box::new(end))),
    };
    let group = target.and_then(Target::group);
    Ok(ResetReport {
        outcome,
        reason: end.reason(),
        detail: detail.to_owned(),
        target: target.map_or_else(|| config.id.clone(), |target| target.id.clone()),
        gpus: target.map(Target::devices).unwrap_or_default(),
        verified: target.map(Target::verified).unwrap_or_default(),
        group,
        method: config.method,
        elapsed,
        warnings,
        end,
    })
}
