//! The warm-reset procedure as a pure state machine: `step(config, state, event, now)` gives
//! the next state and the actions to perform. No I/O, no clock: time comes in as `now`.

use crate::host_files::DriverUse;
use crate::mx_smi::{GpuProcess, GpuRow, GpuState, Topology, VersionCheck, describe_processes};
use crate::reasons::{BlockedReason, ColdRebootReason, OutcomeKind};
use crate::target::Target;
use std::time::Duration;

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

impl MachineConfig {
    /// A reset of `id` with the guide's window (90 s) and a 1 s poll.
    pub fn new(id: &str) -> Self {
        Self {
            id: id.to_owned(),
            window: Duration::from_secs(90),
            poll: Duration::from_secs(1),
            dry_run: false,
        }
    }
}

/// Where the procedure is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// Not started.
    Planned,
    /// Taking the host lock (never waiting).
    Locking,
    /// Reading the journal for a reset in flight.
    ReadingJournal,
    /// Preflight: running as root?
    CheckingRoot,
    /// Preflight: is `mx-smi` there?
    CheckingMxSmi,
    /// Preflight: is the `metax` driver loaded and unused?
    CheckingDriver,
    /// Preflight: are the versions recent enough (and is this MetaX's `mx-smi`)?
    CheckingVersions,
    /// Preflight: does any process use the GPUs?
    CheckingProcesses,
    /// Preflight: which GPUs does the ID name?
    ResolvingTarget,
    /// Preflight: the MetaXLink links (`mx-smi topo -m`), to name the group and verify them.
    ReadingTopology {
        /// The GPUs.
        target: Target,
    },
    /// Preflight: can the kernel log be read (its end is noted for the verification)?
    CheckingKernelLog {
        /// The GPUs.
        target: Target,
    },
    /// `mx-smi -r` was issued; the window ends at `deadline`.
    Resetting {
        /// The GPUs.
        target: Target,
        /// The end of the window.
        deadline: Duration,
    },
    /// Polling `mx-smi -L` until every GPU is back or the window ends.
    Verifying {
        /// The GPUs.
        target: Target,
        /// The end of the window.
        deadline: Duration,
    },
    /// Every GPU is back in its place; are the MetaXLink links back?
    CheckingTopology {
        /// The GPUs.
        target: Target,
    },
    /// Every GPU is back; reading the kernel log.
    CheckingKernel {
        /// The GPUs.
        target: Target,
    },
    /// Reset and verified.
    Done {
        /// The GPUs.
        target: Target,
    },
    /// The preflight passed; nothing was reset.
    DryRun {
        /// The GPUs that would be reset.
        target: Target,
    },
    /// Nothing was changed.
    Blocked {
        /// Why.
        reason: BlockedReason,
        /// What was found.
        detail: String,
    },
    /// The host must be cold-rebooted.
    ColdRebootRequired {
        /// Why.
        reason: ColdRebootReason,
        /// What was found.
        detail: String,
        /// The GPUs.
        target: Target,
    },
}

impl State {
    /// Whether the procedure has ended.
    pub fn is_end(&self) -> bool {
        self.outcome().is_some()
    }

    /// How the procedure ended, if it has.
    pub fn outcome(&self) -> Option<OutcomeKind> {
        match self {
            Self::Done { .. } => Some(OutcomeKind::Done),
            Self::DryRun { .. } => Some(OutcomeKind::DryRun),
            Self::Blocked { .. } => Some(OutcomeKind::Blocked),
            Self::ColdRebootRequired { .. } => Some(OutcomeKind::ColdRebootRequired),
            Self::Planned
            | Self::Locking
            | Self::ReadingJournal
            | Self::CheckingRoot
            | Self::CheckingMxSmi
            | Self::CheckingDriver
            | Self::CheckingVersions
            | Self::CheckingProcesses
            | Self::ResolvingTarget
            | Self::ReadingTopology { .. }
            | Self::CheckingKernelLog { .. }
            | Self::Resetting { .. }
            | Self::Verifying { .. }
            | Self::CheckingTopology { .. }
            | Self::CheckingKernel { .. } => None,
        }
    }

    /// A short name, for logs and progress.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Planned => "planned",
            Self::Locking => "taking the host lock",
            Self::ReadingJournal => "reading the journal",
            Self::CheckingRoot => "preflight: root",
            Self::CheckingMxSmi => "preflight: mx-smi",
            Self::CheckingDriver => "preflight: metax driver",
            Self::CheckingVersions => "preflight: versions",
            Self::CheckingProcesses => "preflight: processes",
            Self::ResolvingTarget => "preflight: target",
            Self::ReadingTopology { .. } => "preflight: topology",
            Self::CheckingKernelLog { .. } => "preflight: kernel log",
            Self::Resetting { .. } => "resetting",
            Self::Verifying { .. } => "verifying",
            Self::CheckingTopology { .. } => "checking the topology",
            Self::CheckingKernel { .. } => "checking the kernel log",
            Self::Done { .. } => "done",
            Self::DryRun { .. } => "dry run",
            Self::Blocked { .. } => "blocked",
            Self::ColdRebootRequired { .. } => "cold reboot required",
        }
    }
}

/// What the journal says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalView {
    /// No reset in flight (or the host was rebooted since).
    Clear,
    /// A reset is in flight; `window_spent` when its window has ended.
    InFlight {
        /// Its GPUs.
        target: Target,
        /// Whether its window has ended.
        window_spent: bool,
    },
}

/// What happened: the answer to an action, or the start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Begin.
    Start,
    /// The host lock was taken (`true`) or is held by another (`false`).
    Lock(bool),
    /// The journal.
    Journal(JournalView),
    /// Whether this runs as root.
    Root(bool),
    /// `mx-smi` was found, or why not.
    MxSmi(Result<(), String>),
    /// The `metax` driver's use.
    Driver(DriverUse),
    /// The versions, or why `mx-smi` gave none (not MetaX's, failed).
    Versions(Result<VersionCheck, String>),
    /// The processes using the GPUs, or why the process section did not read.
    Processes(Result<Vec<GpuProcess>, String>),
    /// `mx-smi -L`, or why it failed.
    Listing(Result<Vec<GpuRow>, String>),
    /// `mx-smi topo -m`, or why it did not read.
    Topology(Result<Topology, String>),
    /// The end of the kernel log was noted, or why it could not be read.
    KernelLog(Result<(), String>),
    /// `mx-smi -r` ended: `Ok` on success, `Err` with what it reported.
    ResetExited(Result<(), String>),
    /// `mx-smi -r` did not end within the window and was killed.
    ResetHung,
    /// The wait between two listings is over.
    Tick,
    /// The kernel's error records since the mark, or why they could not be read.
    KernelErrors(Result<Vec<String>, String>),
}

/// What the executor must do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Take the host lock without waiting → [`Event::Lock`].
    TakeLock,
    /// Read the journal → [`Event::Journal`].
    ReadJournal,
    /// → [`Event::Root`].
    CheckRoot,
    /// → [`Event::MxSmi`].
    FindMxSmi,
    /// → [`Event::Driver`].
    ReadDriver,
    /// → [`Event::Versions`].
    ReadVersions,
    /// → [`Event::Processes`].
    ListProcesses,
    /// → [`Event::Listing`].
    ListGpus,
    /// → [`Event::Topology`].
    ReadTopology,
    /// Note the end of the kernel log → [`Event::KernelLog`].
    MarkKernelLog,
    /// Record the reset in flight (no event; a failure stops the run before the reset).
    WriteJournal {
        /// The GPUs.
        target: Target,
    },
    /// Run `mx-smi -r -i ID` until it ends or the window does → [`Event::ResetExited`] or
    /// [`Event::ResetHung`].
    IssueReset {
        /// The ID for `mx-smi`.
        mx_smi_id: String,
        /// The end of the window.
        deadline: Duration,
    },
    /// Wait → [`Event::Tick`].
    Wait(Duration),
    /// → [`Event::KernelErrors`].
    ReadKernelErrors,
    /// Record that the reset in flight ended (no event).
    CloseJournal,
    /// Tell the user something that does not change the course (no event).
    Warn(String),
}

fn blocked(reason: BlockedReason, detail: impl Into<String>) -> (State, Vec<Action>) {
    (
        State::Blocked {
            reason,
            detail: detail.into(),
        },
        Vec::new(),
    )
}

fn cold(
    reason: ColdRebootReason,
    detail: impl Into<String>,
    target: Target,
) -> (State, Vec<Action>) {
    (
        State::ColdRebootRequired {
            reason,
            detail: detail.into(),
            target,
        },
        vec![Action::CloseJournal],
    )
}

/// One step: the next state and the actions to perform, in order.
///
/// Every pair is handled: an event that does not belong to the state (which the executor never
/// sends) leaves the state as it is and asks for nothing; an ended procedure stays ended.
pub fn step(
    config: &MachineConfig,
    state: State,
    event: Event,
    now: Duration,
) -> (State, Vec<Action>) {
    use Event as E;
    use State as S;
    match (state, event) {
        (S::Planned, E::Start) => (S::Locking, vec![Action::TakeLock]),
        (S::Locking, E::Lock(true)) => (S::ReadingJournal, vec![Action::ReadJournal]),
        (S::Locking, E::Lock(false)) => blocked(
            BlockedReason::LockBusy,
            "another GPU operation holds the host lock",
        ),
        (S::ReadingJournal, E::Journal(JournalView::Clear)) => {
            (S::CheckingRoot, vec![Action::CheckRoot])
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
        ) => (
            S::Verifying {
                target,
                deadline: now,
            },
            vec![
                Action::Warn("verifying a reset that an earlier run issued".to_owned()),
                Action::ListGpus,
            ],
        ),
        (S::CheckingRoot, E::Root(true)) => (S::CheckingMxSmi, vec![Action::FindMxSmi]),
        (S::CheckingRoot, E::Root(false)) => {
            blocked(BlockedReason::NotRoot, "a warm reset needs root")
        }
        (S::CheckingMxSmi, E::MxSmi(Ok(()))) => (S::CheckingDriver, vec![Action::ReadDriver]),
        (S::CheckingMxSmi, E::MxSmi(Err(why))) => blocked(BlockedReason::MxSmiUnavailable, why),
        (S::CheckingDriver, E::Driver(DriverUse::Loaded(0))) => {
            (S::CheckingVersions, vec![Action::ReadVersions])
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
            blocked(BlockedReason::MxSmiUnavailable, why)
        }
        (S::CheckingVersions, E::Versions(Ok(check))) => {
            if !check.too_old.is_empty() {
                return blocked(BlockedReason::DriverTooOld, check.too_old.join("; "));
            }
            let mut actions: Vec<Action> = check.unreadable.into_iter().map(Action::Warn).collect();
            actions.push(Action::ListProcesses);
            (S::CheckingProcesses, actions)
        }
        (S::CheckingProcesses, E::Processes(Ok(processes))) if processes.is_empty() => {
            (S::ResolvingTarget, vec![Action::ListGpus])
        }
        (S::CheckingProcesses, E::Processes(Ok(processes))) => blocked(
            BlockedReason::GpuBusy,
            format!("processes use the GPUs: {}", describe_processes(&processes)),
        ),
        (S::CheckingProcesses, E::Processes(Err(why))) => {
            blocked(BlockedReason::MxSmiUnavailable, why)
        }
        (S::ResolvingTarget, E::Listing(Err(why))) => blocked(BlockedReason::MxSmiUnavailable, why),
        (S::ResolvingTarget, E::Listing(Ok(rows))) => match Target::resolve(&config.id, &rows) {
            None => blocked(
                BlockedReason::UnknownDevice,
                format!("{:?} names no GPU of mx-smi -L", config.id),
            ),
            Some(target) => (S::ReadingTopology { target }, vec![Action::ReadTopology]),
        },
        (S::ReadingTopology { mut target }, E::Topology(topology)) => {
            let mut actions = Vec::new();
            match topology {
                Ok(topology) => target.topology = Some(topology),
                Err(why) => actions.push(Action::Warn(format!(
                    "the MetaXLink topology does not read, so the interconnect groups are unknown \
                     and the links are not verified: {why}"
                ))),
            }
            actions.push(Action::MarkKernelLog);
            (S::CheckingKernelLog { target }, actions)
        }
        (S::CheckingKernelLog { .. }, E::KernelLog(Err(why))) => blocked(
            BlockedReason::KernelLogUnreadable,
            format!("the reset could not be verified: {why}"),
        ),
        (S::CheckingKernelLog { target }, E::KernelLog(Ok(()))) if config.dry_run => {
            (S::DryRun { target }, Vec::new())
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
            (S::Resetting { target, deadline }, actions)
        }
        (S::Resetting { target, deadline }, E::ResetExited(Ok(()))) => {
            (S::Verifying { target, deadline }, vec![Action::ListGpus])
        }
        (S::Resetting { target, .. }, E::ResetExited(Err(why))) => {
            cold(ColdRebootReason::ResetError, why, target)
        }
        (S::Resetting { target, .. }, E::ResetHung) => cold(
            ColdRebootReason::ResetHung,
            "mx-smi -r did not end within the window",
            target,
        ),
        (S::Verifying { target, deadline }, E::Listing(listing)) => {
            verify(config, target, deadline, listing, now)
        }
        (S::Verifying { target, deadline }, E::Tick) => {
            (S::Verifying { target, deadline }, vec![Action::ListGpus])
        }
        (S::CheckingTopology { target }, E::Topology(Ok(after))) => {
            let lost = target
                .topology
                .as_ref()
                .map(|before| before.lost_links(&after))
                .unwrap_or_default();
            if lost.is_empty() {
                return (S::CheckingKernel { target }, vec![Action::ReadKernelErrors]);
            }
            let lost: Vec<String> = lost
                .iter()
                .map(|(a, b)| format!("GPU#{a}-GPU#{b}"))
                .collect();
            cold(
                ColdRebootReason::TopologyWrong,
                format!("MetaXLink not back: {}", lost.join(", ")),
                target,
            )
        }
        (S::CheckingTopology { target }, E::Topology(Err(why))) => (
            S::CheckingKernel { target },
            vec![
                Action::Warn(format!(
                    "the MetaXLink topology does not read after the reset, so the links are not \
                     verified: {why}"
                )),
                Action::ReadKernelErrors,
            ],
        ),
        (S::CheckingKernel { target }, E::KernelErrors(Ok(errors))) if errors.is_empty() => {
            (S::Done { target }, vec![Action::CloseJournal])
        }
        (S::CheckingKernel { target }, E::KernelErrors(Ok(errors))) => {
            cold(ColdRebootReason::KernelErrors, errors.join("; "), target)
        }
        (S::CheckingKernel { target }, E::KernelErrors(Err(why))) => (
            S::Done { target },
            vec![
                Action::Warn(format!("the kernel log could not be checked: {why}")),
                Action::CloseJournal,
            ],
        ),
        // Every other pair: an event that does not answer this state's action, or any event
        // after the end. Nothing changes.
        (
            state @ (S::Planned
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
            _,
        ) => (state, Vec::new()),
    }
}

/// A listing while verifying: every GPU back and in its place → check the kernel log; some not
/// back with time left → wait and list again; the window spent → why not.
fn verify(
    config: &MachineConfig,
    target: Target,
    deadline: Duration,
    listing: Result<Vec<GpuRow>, String>,
    now: Duration,
) -> (State, Vec<Action>) {
    let rows = listing.as_ref().map(Vec::as_slice).unwrap_or_default();
    let back = |before: &GpuRow| rows.iter().find(|row| row.node == before.node);
    let all_available = listing.is_ok()
        && target
            .before
            .iter()
            .all(|before| back(before).is_some_and(|row| row.state == GpuState::Available));
    if all_available {
        let moved: Vec<String> = target
            .before
            .iter()
            .filter(|before| back(before).is_some_and(|row| !row.same_place(before)))
            .map(|before| format!("GPU#{}", before.node))
            .collect();
        if !moved.is_empty() {
            return cold(
                ColdRebootReason::TopologyWrong,
                format!("PCI address or UUID changed: {}", moved.join(", ")),
                target,
            );
        }
        if target.topology.is_some() {
            return (
                State::CheckingTopology { target },
                vec![Action::ReadTopology],
            );
        }
        return (
            State::CheckingKernel { target },
            vec![Action::ReadKernelErrors],
        );
    }
    if now + config.poll <= deadline {
        return (
            State::Verifying { target, deadline },
            vec![Action::Wait(config.poll)],
        );
    }
    if let Err(why) = &listing {
        return cold(
            ColdRebootReason::GpuMissing,
            format!("mx-smi -L failed: {why}"),
            target,
        );
    }
    let missing: Vec<String> = target
        .before
        .iter()
        .filter(|before| back(before).is_none())
        .map(|before| format!("GPU#{} ({})", before.node, before.bdf))
        .collect();
    if !missing.is_empty() {
        return cold(
            ColdRebootReason::GpuMissing,
            format!("not listed: {}", missing.join(", ")),
            target,
        );
    }
    let unavailable: Vec<String> = target
        .before
        .iter()
        .filter_map(|before| back(before).filter(|row| row.state != GpuState::Available))
        .map(|row| format!("GPU#{} is {}", row.node, row.state))
        .collect();
    cold(
        ColdRebootReason::GpuUnavailable,
        unavailable.join(", "),
        target,
    )
}
