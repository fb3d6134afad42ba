//! [`State`]: where the procedure is, and how it ended.

use crate::reasons::{BlockedReason, ColdRebootReason, OutcomeKind, Reason};
use crate::target::Target;
use std::time::Duration;

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

    /// Why the procedure ended blocked or needing a cold reboot; `None` otherwise.
    pub fn reason(&self) -> Option<Reason> {
        match self {
            Self::Blocked { reason, .. } => Some(Reason::Blocked(*reason)),
            Self::ColdRebootRequired { reason, .. } => Some(Reason::ColdReboot(*reason)),
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
            | Self::CheckingKernel { .. }
            | Self::Done { .. }
            | Self::DryRun { .. } => None,
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
