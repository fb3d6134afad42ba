//! The warm-reset procedure as a pure state machine: `step(config, state, event, now)` gives
//! the next state and the actions to perform, or an [`InvalidTransition`] for an event that
//! does not belong to the state. No I/O, no clock: time comes in as `now`. Nothing in it is
//! vendor-specific: a [`Backend`](crate::Backend) answers its questions.
//!
//! - [`State`] (`state.rs`): where the procedure is, and how it ended.
//! - [`Event`], [`Action`], [`JournalView`], [`InvalidTransition`] (`event.rs`).
//! - the verification's clock: wait for the group until the window ends (`verify.rs`).

mod event;
mod state;
mod verify;

pub use event::{Action, Event, InvalidTransition, JournalView, LockAnswer, PendingColdReboot};
pub use state::State;

use crate::backend::{Refusal, ResetEnd};
use crate::method::Method;
use crate::reasons::{BlockedReason, ColdRebootReason};
use crate::reset_target::ResetTarget;
use crate::target::Target;
use crate::warning::ResetWarning;
use gpu_host_probe::Ownership;
use gpu_partition_types::Bdf;
use std::collections::BTreeMap;
use std::time::Duration;

/// The next state and the actions to perform in order, or why the event does not belong.
pub type Transition = Result<(State, Vec<Action>), Box<InvalidTransition>>;

/// What a run asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MachineConfig {
    /// What to reset: every GPU of the method, or GPUs by their IDs.
    pub target: ResetTarget,
    /// The method whose backend runs (a reset in flight of another method is not verified by
    /// this one).
    pub method: Method,
    /// The window from the reset to the end of the verification (default 90 s).
    pub window: Duration,
    /// The longest wait between two checks while verifying (the guide's 1 s): the first check
    /// comes as soon as the reset command ends, the next [`MachineConfig::first_poll`] later,
    /// and each wait doubles up to this one.
    pub poll: Duration,
    /// The wait before the second check (100 ms).
    pub first_poll: Duration,
    /// Run the preflight and resolve the target, change nothing.
    pub dry_run: bool,
    /// The GPUs that are not ours, with who owns them (the host state's
    /// `HostState::not_ours`): a target whose group takes one is blocked (`gpu_not_ours`)
    /// before anything is touched. Empty: every GPU is ours.
    pub not_ours: BTreeMap<Bdf, Ownership>,
}

/// The guide's window from `mx-smi -r` to the end of the verification.
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(90);

/// The wait before the second check of a verification; each next wait doubles, up to
/// [`MachineConfig::poll`]. In a full 90 s window with a 1 s poll that is at most 94 checks
/// (at 0, 0.1, 0.3, 0.7, 1.5 s, then every second), against 91 with a flat 1 s poll.
pub const FIRST_POLL: Duration = Duration::from_millis(100);

impl MachineConfig {
    /// A MetaX reset of `target` with the guide's window ([`DEFAULT_WINDOW`]), checked back
    /// as soon as the reset ends, then after 100 ms, doubling to the guide's 1 s.
    pub fn new(target: ResetTarget) -> Self {
        Self {
            target,
            method: Method::Metax,
            window: DEFAULT_WINDOW,
            poll: Duration::from_secs(1),
            first_poll: FIRST_POLL,
            dry_run: false,
            not_ours: BTreeMap::new(),
        }
    }

    /// The same, sparing the GPUs `not_ours` (each with who owns it): a group that takes one
    /// is blocked.
    pub fn sparing(mut self, not_ours: BTreeMap<Bdf, Ownership>) -> Self {
        self.not_ours = not_ours;
        self
    }

    gpu_host_probe::setters! {
        /// The same with `method`.
        pub method: Method,
        /// The same with the window from the reset to the end of the verification.
        pub window: Duration,
        /// The same with the longest wait between two checks while verifying.
        pub poll: Duration,
        /// The same with the wait before the second check.
        pub first_poll: Duration,
        /// The same as a dry run (`true`: the preflight, the target resolved, nothing changed).
        pub dry_run: bool,
    }
}

/// The first GPU the target's group takes that is not ours, with who owns it.
fn spared(config: &MachineConfig, target: &Target) -> Option<(Bdf, Ownership)> {
    target
        .verified()
        .into_iter()
        .chain(target.devices())
        .find_map(|device| config.not_ours.get(&device).map(|owner| (device, *owner)))
}

fn blocked(refusal: Refusal) -> Transition {
    Ok((
        State::Blocked {
            reason: refusal.reason,
            detail: refusal.detail,
        },
        Vec::new(),
    ))
}

fn cold(reason: ColdRebootReason, detail: impl Into<String>, target: Target) -> Transition {
    cold_not_back(reason, detail, target, Vec::new())
}

/// A cold reboot for the devices `not_back` of the group (all of it when empty).
fn cold_not_back(
    reason: ColdRebootReason,
    detail: impl Into<String>,
    target: Target,
    not_back: Vec<gpu_partition_types::Bdf>,
) -> Transition {
    Ok((
        State::ColdRebootRequired {
            reason,
            detail: detail.into(),
            target,
            not_back,
        },
        vec![Action::CloseJournal],
    ))
}

/// The warnings, then the next action.
fn warned(warnings: Vec<ResetWarning>, then: Action) -> Vec<Action> {
    warnings
        .into_iter()
        .map(Action::Warn)
        .chain([then])
        .collect()
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
        (S::Locking, E::Lock(LockAnswer::Taken)) => {
            go(S::ReadingJournal, vec![Action::ReadJournal])
        }
        (S::Locking, E::Lock(LockAnswer::Held(holder))) => {
            blocked(Refusal::new(BlockedReason::LockBusy, holder))
        }
        (S::ReadingJournal, E::Journal(JournalView::Clear)) => {
            go(S::CheckingRoot, vec![Action::CheckRoot])
        }
        (
            S::ReadingJournal,
            E::Journal(JournalView::InFlight {
                target,
                window_spent: false,
            }),
        ) => blocked(Refusal::new(
            BlockedReason::ResetInFlight,
            format!(
                "a reset of {} is in flight and its window has not ended",
                target.id
            ),
        )),
        // The run that issued it is gone and its window has ended: verify what it left, with
        // the method that issued it.
        (
            S::ReadingJournal,
            E::Journal(JournalView::InFlight {
                target,
                window_spent: true,
            }),
        ) => {
            if target.method() != config.method {
                return blocked(Refusal::new(
                    BlockedReason::ResetInFlight,
                    format!(
                        "a {} reset of {} has not been verified; only the {} method can",
                        target.method(),
                        target.id,
                        target.method()
                    ),
                ));
            }
            go(
                S::Verifying {
                    target: target.clone(),
                    deadline: now,
                    interval: config.first_poll,
                },
                vec![
                    Action::Warn(ResetWarning::VerifyingEarlierReset),
                    Action::CheckBack { target },
                ],
            )
        }
        (S::CheckingRoot, E::Root(true)) => go(S::CheckingHost, vec![Action::CheckHost]),
        (S::CheckingRoot, E::Root(false)) => blocked(Refusal::new(
            BlockedReason::NotRoot,
            "a warm reset needs root",
        )),
        (S::CheckingHost, E::Host(Ok(warnings))) => {
            go(S::ResolvingTarget, warned(warnings, Action::Resolve))
        }
        (S::CheckingHost, E::Host(Err(refusal))) => blocked(refusal),
        (S::ResolvingTarget, E::Resolved(Ok((target, warnings)))) => {
            match spared(config, &target) {
                // Another agent's GPU is never reset by us, as part of a group or by name.
                Some((device, ownership)) => blocked(Refusal::new(
                    BlockedReason::GpuNotOurs,
                    format!(
                        "the reset of {} takes {device}, which is not ours (ownership {ownership}): \
                     nothing is reset",
                        target.id
                    ),
                )),
                None => go(
                    S::CheckingColdReboot {
                        target: target.clone(),
                    },
                    warned(warnings, Action::ReadColdReboots { target }),
                ),
            }
        }
        (S::CheckingColdReboot { target }, E::ColdReboots(pending)) => match pending.first() {
            None => go(
                S::CheckingUse {
                    target: target.clone(),
                },
                vec![Action::CheckUse { target }],
            ),
            // Another warm reset of a device that did not come back risks the host: only a
            // cold reboot clears it.
            Some(earlier) => {
                let named: Vec<String> = earlier.devices.iter().map(ToString::to_string).collect();
                blocked(Refusal::new(
                    BlockedReason::ColdRebootPending,
                    format!(
                        "the warm reset of {} in this boot ended needing a cold reboot ({}) of \
                         {}: no warm reset touches it again until the host is cold-rebooted",
                        earlier.target,
                        earlier.reason,
                        named.join(", ")
                    ),
                ))
            }
        },
        (S::ResolvingTarget, E::Resolved(Err(refusal))) => blocked(refusal),
        (S::CheckingUse { target }, E::Use(Ok(warnings))) => go(
            S::CheckingKernelLog { target },
            warned(warnings, Action::MarkKernelLog),
        ),
        (S::CheckingUse { .. }, E::Use(Err(refusal))) => blocked(refusal),
        (S::CheckingKernelLog { .. }, E::KernelLog(Err(why))) => blocked(Refusal::new(
            BlockedReason::KernelLogUnreadable,
            format!("the reset could not be verified: {}", why.said()),
        )),
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
                    target: target.clone(),
                    deadline,
                },
            ];
            go(S::Resetting { target, deadline }, actions)
        }
        (S::Resetting { target, deadline }, E::ResetEnded(ResetEnd::Finished)) => go(
            S::Verifying {
                target: target.clone(),
                deadline,
                interval: config.first_poll,
            },
            vec![Action::CheckBack { target }],
        ),
        (S::Resetting { target, .. }, E::ResetEnded(ResetEnd::Failed(why))) => {
            cold(ColdRebootReason::ResetError, why.said(), target)
        }
        // The tool changed nothing: the run is blocked, and no reset is left in flight.
        (S::Resetting { .. }, E::ResetEnded(ResetEnd::Refused(refusal))) => Ok((
            State::Blocked {
                reason: refusal.reason,
                detail: refusal.detail,
            },
            vec![Action::CloseJournal],
        )),
        (S::Resetting { target, .. }, E::ResetEnded(ResetEnd::Hung)) => cold(
            ColdRebootReason::ResetHung,
            "the reset did not end within the window",
            target,
        ),
        (
            S::Verifying {
                target,
                deadline,
                interval,
            },
            E::Back(back),
        ) => verify::back(config, target, deadline, interval, back, now),
        (
            S::Verifying {
                target,
                deadline,
                interval,
            },
            E::Tick,
        ) => go(
            S::Verifying {
                target: target.clone(),
                deadline,
                interval,
            },
            vec![Action::CheckBack { target }],
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
                Action::Warn(ResetWarning::KernelLogUnchecked(why.said())),
                Action::CloseJournal,
            ],
        ),
        // Every other pair: an event that does not answer this state's action, or any event
        // after the end. The events are named in full, so a new one must be placed above.
        (
            from,
            event @ (E::Start
            | E::Lock(_)
            | E::Journal(_)
            | E::Root(_)
            | E::Host(_)
            | E::Resolved(_)
            | E::ColdReboots(_)
            | E::Use(_)
            | E::KernelLog(_)
            | E::ResetEnded(_)
            | E::Back(_)
            | E::Tick
            | E::KernelErrors(_)),
        ) => Err(Box::new(InvalidTransition { from, event })),
    }
}
