//! mxctl's exit codes: the contract's one table (as nextest's `NextestExitCode`). Every command
//! ends through it; no other place spells a code.

use mig_layout::{ApplyOutcome, AssertOutcome};
use warm_reset::ResetOutcome;

/// How mxctl exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done (a dry run too; an apply or an assert of a layout that names no GPU of this
    /// host; an assert whose layout holds).
    Done,
    /// 1: failed (a layout between layouts, a refused reply, an assert that found a difference,
    /// any error).
    Failed,
    /// 2: the command line does not fit.
    Usage,
    /// 3: blocked before anything was changed (a reset, an apply, a restore with nothing
    /// declared, an assert whose lock was held).
    Blocked,
    /// 4: a warm reset did not work: the host must be cold-rebooted.
    ColdReboot,
}

impl Exit {
    /// Every code, in order.
    pub const ALL: [Exit; 5] = [
        Self::Done,
        Self::Failed,
        Self::Usage,
        Self::Blocked,
        Self::ColdReboot,
    ];

    /// The process's exit status.
    pub fn code(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Failed => 1,
            Self::Usage => 2,
            Self::Blocked => 3,
            Self::ColdReboot => 4,
        }
    }

    /// What each code means, for the man pages.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Done => {
                "done (also a dry run, and an apply or assert whose layout names no GPU here)"
            }
            Self::Failed => "failed, a refused reply, or an assert that found a difference",
            Self::Usage => "the command line does not fit",
            Self::Blocked => "blocked: nothing was changed",
            Self::ColdReboot => "a warm reset did not work: cold-reboot the host",
        }
    }

    /// The exit of an apply, a leave or a restore that ran.
    pub fn of_apply(outcome: ApplyOutcome) -> Self {
        match outcome {
            ApplyOutcome::Done | ApplyOutcome::NothingNamed | ApplyOutcome::DryRun => Self::Done,
            ApplyOutcome::Failed(_) => Self::Failed,
            ApplyOutcome::Blocked(_) => Self::Blocked,
            ApplyOutcome::ColdRebootRequired(_) => Self::ColdReboot,
        }
    }

    /// The exit of a reset (or a plan step).
    pub fn of_reset(outcome: ResetOutcome) -> Self {
        match outcome {
            ResetOutcome::Done | ResetOutcome::DryRun => Self::Done,
            ResetOutcome::Blocked(_) => Self::Blocked,
            ResetOutcome::ColdRebootRequired(_) => Self::ColdReboot,
        }
    }

    /// The exit of an assert.
    pub fn of_assert(outcome: AssertOutcome) -> Self {
        match outcome {
            AssertOutcome::Applied | AssertOutcome::NothingNamed => Self::Done,
            AssertOutcome::Differs => Self::Failed,
            AssertOutcome::Blocked(_) => Self::Blocked,
        }
    }
}
