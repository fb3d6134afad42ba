//! What the machine is told ([`Event`]), what it asks for ([`Action`]), and the error of an
//! event that does not belong to the state ([`InvalidTransition`]).

use super::state::State;
use crate::backend::BackendError;
use crate::metax::DriverUse;
use crate::metax::mx_smi::{GpuProcess, GpuRow, Topology, VersionCheck};
use crate::target::Target;
use std::time::Duration;

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
    MxSmi(Result<(), BackendError>),
    /// The `metax` driver's use.
    Driver(DriverUse),
    /// The versions, or why `mx-smi` gave none (not MetaX's, failed).
    Versions(Result<VersionCheck, BackendError>),
    /// The processes using the GPUs, or why the process section did not read.
    Processes(Result<Vec<GpuProcess>, BackendError>),
    /// `mx-smi -L`, or why it failed.
    Listing(Result<Vec<GpuRow>, BackendError>),
    /// `mx-smi topo -m`, or why it did not read.
    Topology(Result<Topology, BackendError>),
    /// The end of the kernel log was noted, or why it could not be read.
    KernelLog(Result<(), BackendError>),
    /// `mx-smi -r` ended: `Ok` on success, `Err` with what it reported.
    ResetExited(Result<(), BackendError>),
    /// `mx-smi -r` did not end within the window and was killed.
    ResetHung,
    /// The wait between two listings is over.
    Tick,
    /// The kernel's error records since the mark, or why they could not be read.
    KernelErrors(Result<Vec<String>, BackendError>),
}

impl Event {
    /// A short name, for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Lock(_) => "host lock",
            Self::Journal(_) => "journal",
            Self::Root(_) => "root",
            Self::MxSmi(_) => "mx-smi found",
            Self::Driver(_) => "driver use",
            Self::Versions(_) => "versions",
            Self::Processes(_) => "processes",
            Self::Listing(_) => "listing",
            Self::Topology(_) => "topology",
            Self::KernelLog(_) => "kernel log marked",
            Self::ResetExited(_) => "reset exited",
            Self::ResetHung => "reset hung",
            Self::Tick => "tick",
            Self::KernelErrors(_) => "kernel errors",
        }
    }
}

/// An event that does not answer the state's action, or that came after the end. The machine
/// refuses it and keeps `from`; the executor logs it and stops (a reset in flight stays in the
/// journal, so the next run verifies it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the event `{}` does not belong to the state `{}`", event.name(), from.name())]
#[non_exhaustive]
pub struct InvalidTransition {
    /// The state, unchanged.
    pub from: State,
    /// The event it was given.
    pub event: Event,
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
