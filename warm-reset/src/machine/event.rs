//! What the machine is told ([`Event`]), what it asks for ([`Action`]), and the error of an
//! event that does not belong to the state ([`InvalidTransition`]).

use super::state::State;
use crate::backend::{Back, BackendError, Refusal, ResetEnd};
use crate::target::Target;
use crate::warning::ResetWarning;
use std::time::Duration;

/// What the journal says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalView {
    /// No reset in flight (or the host was rebooted since).
    Clear,
    /// A reset is in flight; `window_spent` when its window has ended.
    InFlight {
        /// Its group.
        target: Target,
        /// Whether its window has ended.
        window_spent: bool,
    },
}

/// A reset of this boot that ended needing a cold reboot, as the journal keeps it: until the host
/// is cold-rebooted, no warm reset of ours touches those devices again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct PendingColdReboot {
    /// The devices the verification did not find back (the whole group when it could not tell
    /// them apart).
    pub devices: Vec<gpu_partition_types::Bdf>,
    /// The ID that reset was given.
    pub target: String,
    /// Why it needs a cold reboot.
    pub reason: crate::reasons::ColdRebootReason,
    /// When it ended (Unix milliseconds).
    pub ended_unix_ms: u64,
    /// The kernel's boot id then, when it was readable (a cold reboot changes it).
    pub boot_id: Option<String>,
}

impl PendingColdReboot {
    /// A reset of `target` that ended at `ended_unix_ms` in the boot `boot_id` needing a cold
    /// reboot of `devices`, for `reason`.
    pub fn new(
        devices: Vec<gpu_partition_types::Bdf>,
        target: &str,
        reason: crate::reasons::ColdRebootReason,
        ended_unix_ms: u64,
        boot_id: Option<String>,
    ) -> Self {
        Self {
            devices,
            target: target.to_owned(),
            reason,
            ended_unix_ms,
            boot_id,
        }
    }

    /// Whether it still holds in the boot `boot_id`: the same boot, or one that cannot be told
    /// apart (an unread boot id on either side: a warm reset is never risked on a guess).
    pub fn holds_in(&self, boot_id: Option<&str>) -> bool {
        match (self.boot_id.as_deref(), boot_id) {
            (Some(then), Some(now)) => then == now,
            _ => true,
        }
    }
}

/// Whether the host lock was taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockAnswer {
    /// Taken (or held already by the caller).
    Taken,
    /// Another GPU operation holds it: who, as the lock says (its pid and state directory).
    Held(String),
}

/// What happened: the answer to an action, or the start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Begin.
    Start,
    /// The host lock was taken, or is held by another.
    Lock(LockAnswer),
    /// The journal.
    Journal(JournalView),
    /// Whether this runs as root.
    Root(bool),
    /// The host's own checks: warnings, or why no reset can run.
    Host(Result<Vec<ResetWarning>, Refusal>),
    /// The group the ID names (with warnings), or why not.
    Resolved(Result<(Target, Vec<ResetWarning>), Refusal>),
    /// The resets of this boot that ended needing a cold reboot of a device of the group.
    ColdReboots(Vec<PendingColdReboot>),
    /// Whether anything uses the group: warnings, or why it is in use.
    Use(Result<Vec<ResetWarning>, Refusal>),
    /// The end of the kernel log was noted, or why it could not be read.
    KernelLog(Result<(), BackendError>),
    /// How the reset ended: finished, refused before changing anything, failed, or hung
    /// past the window and stopped.
    ResetEnded(ResetEnd),
    /// Whether the group is back.
    Back(Back),
    /// The wait between two checks is over.
    Tick,
    /// The kernel's error records about the group since the mark, or why they could not be
    /// read.
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
            Self::Host(_) => "host checked",
            Self::Resolved(_) => "target resolved",
            Self::ColdReboots(_) => "cold reboots pending",
            Self::Use(_) => "use checked",
            Self::KernelLog(_) => "kernel log marked",
            Self::ResetEnded(_) => "reset ended",
            Self::Back(_) => "back checked",
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
    /// → [`Event::Host`].
    CheckHost,
    /// Resolve the configured ID → [`Event::Resolved`].
    Resolve,
    /// Read the journal for resets of this boot that ended needing a cold reboot of a device of
    /// the group → [`Event::ColdReboots`].
    ReadColdReboots {
        /// The group.
        target: Target,
    },
    /// → [`Event::Use`].
    CheckUse {
        /// The group.
        target: Target,
    },
    /// Note the end of the kernel log → [`Event::KernelLog`].
    MarkKernelLog,
    /// Record the reset in flight (no event; a failure stops the run before the reset).
    WriteJournal {
        /// The group.
        target: Target,
    },
    /// Reset the group until it ends or the window does → [`Event::ResetEnded`].
    IssueReset {
        /// The group.
        target: Target,
        /// The end of the window.
        deadline: Duration,
    },
    /// → [`Event::Back`].
    CheckBack {
        /// The group.
        target: Target,
    },
    /// Wait → [`Event::Tick`].
    Wait(Duration),
    /// → [`Event::KernelErrors`].
    ReadKernelErrors {
        /// The group.
        target: Target,
    },
    /// Record that the reset in flight ended (no event).
    CloseJournal,
    /// Tell the user something that does not change the course (no event).
    Warn(ResetWarning),
}
