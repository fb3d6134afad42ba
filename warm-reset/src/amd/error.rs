//! [`AmdSmiError`]: why `amd-smi` gave no answer the procedure can use, or said its reset
//! failed.

use super::amd_smi::ParseError;
use crate::reasons::BlockedReason;
use crate::tool::ToolError;

/// `amd-smi` could not be found, did not run to a clean end, printed what does not read, or
/// did not reset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AmdSmiError {
    /// Not found, or a run that did not end with exit 0.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// Its output does not read.
    #[error(transparent)]
    Unreadable(#[from] ParseError),
    /// `reset --gpureset` exited with a code other than 0, or said that it could not reset.
    #[error("{command} exited with code {code} and did not reset: {said:?}")]
    ResetFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        code: i32,
        /// What it printed (the last 300 characters).
        said: String,
    },
}

impl AmdSmiError {
    /// The reason a run is blocked with when `amd-smi` fails this way before the reset: an
    /// `amd-smi` root may not run is `unsafe_program`, any other failure `amd_smi_unavailable`.
    pub fn blocked_reason(&self) -> BlockedReason {
        match self {
            Self::Tool(tool) if tool.is_unsafe() => BlockedReason::UnsafeProgram,
            Self::Tool(_) | Self::Unreadable(_) | Self::ResetFailed { .. } => {
                BlockedReason::AmdSmiUnavailable
            }
        }
    }
}
