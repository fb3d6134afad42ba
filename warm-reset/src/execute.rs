//! The executor: drives the machine, performing its actions through a [`Backend`], a
//! [`Clock`], the host lock and the [`Journal`].

use crate::backend::{Backend, ResetEnd};
use crate::clock::Clock;
use crate::journal::{InFlight, Journal, JournalError};
use crate::machine::{Action, Event, MachineConfig, State, step};
use crate::reasons::OutcomeKind;
use crate::target::Target;
use gpu_partition_types::Bdf;
use gpu_probe::lock::{HostLock, LockError};
use std::collections::VecDeque;
use std::time::Duration;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResetReport {
    /// The outcome.
    pub outcome: OutcomeKind,
    /// The blocked or cold-reboot reason token; empty when done or a dry run.
    pub reason: String,
    /// What was found, for people.
    pub detail: String,
    /// The ID as given.
    pub target: String,
    /// The GPUs the ID names (empty when it was never resolved).
    pub gpus: Vec<Bdf>,
    /// Every GPU listed before the reset (all verified after it).
    pub verified: Vec<Bdf>,
    /// The interconnect groups of the named GPUs (node IDs), from `mx-smi topo -m`; `None`
    /// when it did not read.
    pub group: Option<Vec<u32>>,
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
        let (next, actions) = step(config, state, event, clock.now());
        if next.name() != before {
            tracing::debug!("{before} -> {}", next.name());
        }
        observe(&next, clock.now());
        state = next;
        for action in actions {
            let event = match action {
                Action::TakeLock => match HostLock::try_acquire(journal.dir()) {
                    Ok(held) => {
                        lock = Some(held);
                        Some(Event::Lock(true))
                    }
                    Err(LockError::Busy { .. }) => Some(Event::Lock(false)),
                    Err(error) => return Err(ExecuteError::Lock(error)),
                },
                Action::ReadJournal => {
                    Some(Event::Journal(journal.view(clock.unix_ms(), boot_id)?))
                }
                Action::CheckRoot => Some(Event::Root(backend.is_root())),
                Action::FindMxSmi => Some(Event::MxSmi(backend.find_mx_smi())),
                Action::ReadDriver => Some(Event::Driver(backend.driver_use())),
                Action::ReadVersions => Some(Event::Versions(backend.versions())),
                Action::ListProcesses => Some(Event::Processes(backend.processes())),
                Action::ListGpus => Some(Event::Listing(backend.list())),
                Action::ReadTopology => Some(Event::Topology(backend.topology())),
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
                Action::IssueReset {
                    mx_smi_id,
                    deadline,
                } => {
                    let within = deadline.saturating_sub(clock.now());
                    tracing::info!("mx-smi -r -i {mx_smi_id} (window {:?})", config.window);
                    Some(match backend.reset(&mx_smi_id, within) {
                        ResetEnd::Finished => Event::ResetExited(Ok(())),
                        ResetEnd::Failed(why) => Event::ResetExited(Err(why)),
                        ResetEnd::Hung => Event::ResetHung,
                    })
                }
                Action::Wait(duration) => {
                    clock.sleep(duration);
                    Some(Event::Tick)
                }
                Action::ReadKernelErrors => Some(Event::KernelErrors(backend.kernel_errors())),
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
    drop(lock);
    Ok(report(
        config,
        state,
        warnings,
        clock.now().saturating_sub(started),
    ))
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
) -> ResetReport {
    let (outcome, reason, detail, target): (OutcomeKind, String, String, Option<&Target>) =
        match &end {
            State::Done { target } => (
                OutcomeKind::Done,
                String::new(),
                String::new(),
                Some(target),
            ),
            State::DryRun { target } => (
                OutcomeKind::DryRun,
                String::new(),
                String::new(),
                Some(target),
            ),
            State::Blocked { reason, detail } => (
                OutcomeKind::Blocked,
                reason.to_string(),
                detail.clone(),
                None,
            ),
            State::ColdRebootRequired {
                reason,
                detail,
                target,
            } => (
                OutcomeKind::ColdRebootRequired,
                reason.to_string(),
                detail.clone(),
                Some(target),
            ),
            // The loop ends only when the machine asks for nothing more, which it does only at an
            // end; anything else is reported as blocked so that nothing claims success.
            other => (
                OutcomeKind::Blocked,
                "internal".to_owned(),
                format!("stopped in state {}", other.name()),
                None,
            ),
        };
    let group = target.and_then(Target::group);
    ResetReport {
        outcome,
        reason,
        detail,
        target: target.map_or_else(|| config.id.clone(), |target| target.id.clone()),
        gpus: target.map(Target::devices).unwrap_or_default(),
        verified: target
            .map(|target| target.before.iter().map(|row| row.bdf).collect())
            .unwrap_or_default(),
        group,
        elapsed,
        warnings,
        end,
    }
}
