//! The warm-reset procedure as a pure state machine: `step(config, state, event, now)` gives
//! the next state and the actions to perform, or an [`InvalidTransition`] for an event that
//! does not belong to the state. No I/O, no clock: time comes in as `now`.
//!
//! - [`State`] (`state.rs`): where the procedure is, and how it ended.
//! - [`Event`], [`Action`], [`JournalView`], [`InvalidTransition`] (`event.rs`).
//! - the verification after the reset (`verify.rs`).

mod event;
mod state;
mod verify;

pub use event::{Action, Event, InvalidTransition, JournalView};
pub use state::State;
pub(crate) use verify::not_available;

use crate::backend::BackendError;
use crate::metax::DriverUse;
use crate::metax::mx_smi::describe_processes;
use crate::reasons::{BlockedReason, ColdRebootReason};
use crate::target::Target;
use gpu_probe::chain::Chain;
use std::time::Duration;

/// The next state and the actions to perform in order, or why the event does not belong.
pub type Transition = Result<(State, Vec<Action>), Box<InvalidTransition>>;

/// What a run asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MachineConfig {
    /// The ID to reset: a node ID, a PCI address, a UUID, or `all`.
    pub id: String,
    /// The window from `mx-smi -r` to the end of the verification (default 90 s).
    pub window: Duration,
    /// How long between two listings while verifying (about 1 s).
    pub poll: Duration,
    /// Run the preflight and resolve the target, change nothing.
    pub dry_run: bool,
}

/// The guide's window from `mx-smi -r` to the end of the verification.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(90);

impl MachineConfig {
    /// A reset of `id` with the guide's window ([`DEFAULT_WINDOW`]) and a 1 s poll.
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            window: DEFAULT_WINDOW,
            poll: Duration::from_secs(1),
            dry_run: false,
        }
    }
}

fn blocked(reason: BlockedReason, detail: impl Into<String>) -> Transition {
    Ok((
        State::Blocked {
            reason,
            detail: detail.into(),
        },
        Vec::new(),
    ))
}

fn cold(reason: ColdRebootReason, detail: impl Into<String>, target: Target) -> Transition {
    Ok((
        State::ColdRebootRequired {
            reason,
            detail: detail.into(),
            target,
        },
        vec![Action::CloseJournal],
    ))
}

/// Why a run is blocked when the host lock is taken.
pub(crate) const LOCK_HELD: &str = "another GPU operation holds the host lock";

/// What the host said when it did not answer, with its causes, for a detail or a warning.
pub(crate) fn said(error: &BackendError) -> String {
    Chain(error).to_string()
}

/// One step: the next state and the actions to perform, in order.
///
/// The match names every state and every event, so a new one does not compile without a
/// decision. An event that does not answer the state's action (the executor never sends one),
/// and any event after the end, is an [`InvalidTransition`] that carries the state unchanged.
pub fn step(config: &MachineConfig, state: State, event: Event, now: Duration) -> Transition {
    use Event as E;
    use State as S;
    let go = |state: State, actions: Vec<Action>| Ok((state, actions));
    match (state, event) {
        (S::Planned, E::Start) => go(S::Locking, vec![Action::TakeLock]),
        (S::Locking, E::Lock(true)) => go(S::ReadingJournal, vec![Action::ReadJournal]),
        (S::Locking, E::Lock(false)) => blocked(BlockedReason::LockBusy, LOCK_HELD),
        (S::ReadingJournal, E::Journal(JournalView::Clear)) => {
            go(S::CheckingRoot, vec![Action::CheckRoot])
        }
        (
            S::ReadingJournal,
            E::Journal(JournalView::InFlight {
                target,
                window_spent: false,
            }),
        ) => blocked(
            BlockedReason::ResetInFlight,
            format!(
                "a reset of {} is in flight and its window has not ended",
                target.id
            ),
        ),
        // The run that issued it is gone and its window has ended: verify what it left.
        (
            S::ReadingJournal,
            E::Journal(JournalView::InFlight {
                target,
                window_spent: true,
            }),
        ) => go(
            S::Verifying {
                target,
                deadline: now,
            },
            vec![
                Action::Warn("verifying a reset that an earlier run issued".to_owned()),
                Action::ListGpus,
            ],
        ),
        (S::CheckingRoot, E::Root(true)) => go(S::CheckingMxSmi, vec![Action::FindMxSmi]),
        (S::CheckingRoot, E::Root(false)) => {
            blocked(BlockedReason::NotRoot, "a warm reset needs root")
        }
        (S::CheckingMxSmi, E::MxSmi(Ok(()))) => go(S::CheckingDriver, vec![Action::ReadDriver]),
        (S::CheckingMxSmi, E::MxSmi(Err(why))) => {
            blocked(BlockedReason::MxSmiUnavailable, said(&why))
        }
        (S::CheckingDriver, E::Driver(DriverUse::Loaded(0))) => {
            go(S::CheckingVersions, vec![Action::ReadVersions])
        }
        (S::CheckingDriver, E::Driver(DriverUse::NotLoaded)) => blocked(
            BlockedReason::DriverNotLoaded,
            "no metax line in /proc/modules",
        ),
        (S::CheckingDriver, E::Driver(DriverUse::Loaded(count))) => blocked(
            BlockedReason::DriverInUse,
            format!("the metax driver's use count is {count}"),
        ),
        (S::CheckingDriver, E::Driver(DriverUse::Unreadable(line))) => blocked(
            BlockedReason::DriverInUse,
            format!("cannot read the metax use count: {line}"),
        ),
        (S::CheckingVersions, E::Versions(Err(why))) => {
            blocked(BlockedReason::MxSmiUnavailable, said(&why))
        }
        (S::CheckingVersions, E::Versions(Ok(check))) => {
            if !check.too_old.is_empty() {
                return blocked(BlockedReason::DriverTooOld, check.too_old.join("; "));
            }
            let mut actions: Vec<Action> = check.unreadable.into_iter().map(Action::Warn).collect();
            actions.push(Action::ListProcesses);
            go(S::CheckingProcesses, actions)
        }
        (S::CheckingProcesses, E::Processes(Ok(processes))) if processes.is_empty() => {
            go(S::ResolvingTarget, vec![Action::ListGpus])
        }
        (S::CheckingProcesses, E::Processes(Ok(processes))) => blocked(
            BlockedReason::GpuBusy,
            format!("processes use the GPUs: {}", describe_processes(&processes)),
        ),
        (S::CheckingProcesses, E::Processes(Err(why))) => {
            blocked(BlockedReason::MxSmiUnavailable, said(&why))
        }
        (S::ResolvingTarget, E::Listing(Err(why))) => {
            blocked(BlockedReason::MxSmiUnavailable, said(&why))
        }
        (S::ResolvingTarget, E::Listing(Ok(rows))) => match Target::resolve(&config.id, &rows) {
            None => blocked(
                BlockedReason::UnknownDevice,
                format!("{:?} names no GPU of mx-smi -L", config.id),
            ),
            Some(target) => go(S::ReadingTopology { target }, vec![Action::ReadTopology]),
        },
        (S::ReadingTopology { mut target }, E::Topology(topology)) => {
            let mut actions = Vec::new();
            match topology {
                Ok(topology) => target.topology = Some(topology),
                Err(why) => actions.push(Action::Warn(format!(
                    "the MetaXLink topology does not read, so the interconnect groups are unknown \
                     and the links are not verified: {}",
                    said(&why)
                ))),
            }
            actions.push(Action::MarkKernelLog);
            go(S::CheckingKernelLog { target }, actions)
        }
        (S::CheckingKernelLog { .. }, E::KernelLog(Err(why))) => blocked(
            BlockedReason::KernelLogUnreadable,
            format!("the reset could not be verified: {}", said(&why)),
        ),
        (S::CheckingKernelLog { target }, E::KernelLog(Ok(()))) if config.dry_run => {
            go(S::DryRun { target }, Vec::new())
        }
        (S::CheckingKernelLog { target }, E::KernelLog(Ok(()))) => {
            let deadline = now + config.window;
            let actions = vec![
                Action::WriteJournal {
                    target: target.clone(),
                },
                Action::IssueReset {
                    mx_smi_id: target.mx_smi_id.clone(),
                    deadline,
                },
            ];
            go(S::Resetting { target, deadline }, actions)
        }
        (S::Resetting { target, deadline }, E::ResetExited(Ok(()))) => {
            go(S::Verifying { target, deadline }, vec![Action::ListGpus])
        }
        (S::Resetting { target, .. }, E::ResetExited(Err(why))) => {
            cold(ColdRebootReason::ResetError, said(&why), target)
        }
        (S::Resetting { target, .. }, E::ResetHung) => cold(
            ColdRebootReason::ResetHung,
            "mx-smi -r did not end within the window",
            target,
        ),
        (S::Verifying { target, deadline }, E::Listing(listing)) => {
            verify::listed(config, target, deadline, listing, now)
        }
        (S::Verifying { target, deadline }, E::Tick) => {
            go(S::Verifying { target, deadline }, vec![Action::ListGpus])
        }
        (S::CheckingTopology { target }, E::Topology(Ok(after))) => verify::links(target, &after),
        (S::CheckingTopology { target }, E::Topology(Err(why))) => go(
            S::CheckingKernel { target },
            vec![
                Action::Warn(format!(
                    "the MetaXLink topology does not read after the reset, so the links are not \
                     verified: {}",
                    said(&why)
                )),
                Action::ReadKernelErrors,
            ],
        ),
        (S::CheckingKernel { target }, E::KernelErrors(Ok(errors))) if errors.is_empty() => {
            go(S::Done { target }, vec![Action::CloseJournal])
        }
        (S::CheckingKernel { target }, E::KernelErrors(Ok(errors))) => {
            cold(ColdRebootReason::KernelErrors, errors.join("; "), target)
        }
        (S::CheckingKernel { target }, E::KernelErrors(Err(why))) => go(
            S::Done { target },
            vec![
                Action::Warn(format!(
                    "the kernel log could not be checked: {}",
                    said(&why)
                )),
                Action::CloseJournal,
            ],
        ),
        // Every other pair, named in full: an event that does not answer this state's action,
        // or any event after the end.
        (
            from @ (S::Planned
            | S::Locking
            | S::ReadingJournal
            | S::CheckingRoot
            | S::CheckingMxSmi
            | S::CheckingDriver
            | S::CheckingVersions
            | S::CheckingProcesses
            | S::ResolvingTarget
            | S::ReadingTopology { .. }
            | S::CheckingKernelLog { .. }
            | S::Resetting { .. }
            | S::Verifying { .. }
            | S::CheckingTopology { .. }
            | S::CheckingKernel { .. }
            | S::Done { .. }
            | S::DryRun { .. }
            | S::Blocked { .. }
            | S::ColdRebootRequired { .. }),
            event @ (E::Start
            | E::Lock(_)
            | E::Journal(_)
            | E::Root(_)
            | E::MxSmi(_)
            | E::Driver(_)
            | E::Versions(_)
            | E::Processes(_)
            | E::Listing(_)
            | E::Topology(_)
            | E::KernelLog(_)
            | E::ResetExited(_)
            | E::ResetHung
            | E::Tick
            | E::KernelErrors(_)),
        ) => Err(Box::new(InvalidTransition { from, event })),
    }
}
