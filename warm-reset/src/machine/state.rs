//! [`State`]: where the procedure is, and how it ended.

use crate::reasons::{BlockedReason, ColdRebootReason, ResetOutcome};
use crate::target::Target;
use std::time::Duration;

/// Where the procedure is. Every state is listed: a match on it needs no catch-all, and a
/// new state is a decision the compiler asks for wherever states are matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Not started.
    Planned,
    /// Taking the host lock (never waiting).
    Locking,
    /// Reading the journal for a reset in flight.
    ReadingJournal,
    /// Preflight: running as root?
    CheckingRoot,
    /// Preflight: does anything stop a reset on this host (the tool, its driver, versions)?
    CheckingHost,
    /// Preflight: which devices does the ID name, and which does a reset touch?
    ResolvingTarget,
    /// Preflight: did a reset of this boot leave a device of the group needing a cold reboot?
    CheckingColdReboot {
        /// The group.
        target: Target,
    },
    /// Preflight: does anything use the group?
    CheckingUse {
        /// The group.
        target: Target,
    },
    /// Preflight: can the kernel log be read (its end is noted for the verification)?
    CheckingKernelLog {
        /// The group.
        target: Target,
    },
    /// The reset was issued; the window ends at `deadline`.
    Resetting {
        /// The group.
        target: Target,
        /// The end of the window.
        deadline: Duration,
    },
    /// Asking until every device is back or the window ends.
    Verifying {
        /// The group.
        target: Target,
        /// The end of the window.
        deadline: Duration,
        /// The wait before the next check when this one finds the group not back yet (it
        /// doubles each time, up to the poll).
        interval: Duration,
    },
    /// Every device is back; reading the kernel log.
    CheckingKernel {
        /// The group.
        target: Target,
    },
    /// Reset and verified.
    Done {
        /// The group.
        target: Target,
    },
    /// The preflight passed; nothing was reset.
    DryRun {
        /// The group that would be reset.
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
        /// The group.
        target: Target,
        /// The devices of the group the verification found not back (empty: the group as a
        /// whole, or the cold reboot is not for a verification).
        not_back: Vec<gpu_partition_types::Bdf>,
    },
}

impl State {
    /// Whether the procedure has ended.
    pub fn is_end(&self) -> bool {
        self.outcome().is_some()
    }

    /// How the procedure ended, with its reason, if it has.
    pub fn outcome(&self) -> Option<ResetOutcome> {
        match self {
            Self::Done { .. } => Some(ResetOutcome::Done),
            Self::DryRun { .. } => Some(ResetOutcome::DryRun),
            Self::Blocked { reason, .. } => Some(ResetOutcome::Blocked(*reason)),
            Self::ColdRebootRequired { reason, .. } => {
                Some(ResetOutcome::ColdRebootRequired(*reason))
            }
            Self::Planned
            | Self::Locking
            | Self::ReadingJournal
            | Self::CheckingRoot
            | Self::CheckingHost
            | Self::ResolvingTarget
            | Self::CheckingColdReboot { .. }
            | Self::CheckingUse { .. }
            | Self::CheckingKernelLog { .. }
            | Self::Resetting { .. }
            | Self::Verifying { .. }
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
            Self::CheckingHost => "preflight: tool, driver and versions",
            Self::ResolvingTarget => "preflight: target",
            Self::CheckingColdReboot { .. } => "preflight: cold reboot pending",
            Self::CheckingUse { .. } => "preflight: in use",
            Self::CheckingKernelLog { .. } => "preflight: kernel log",
            Self::Resetting { .. } => "resetting",
            Self::Verifying { .. } => "verifying",
            Self::CheckingKernel { .. } => "checking the kernel log",
            Self::Done { .. } => "done",
            Self::DryRun { .. } => "dry run",
            Self::Blocked { .. } => "blocked",
            Self::ColdRebootRequired { .. } => "cold reboot required",
        }
    }
}
