//! [`MxSmiError`]: why `mx-smi` gave no answer the procedure can use.

use super::mx_smi::ParseError;
use crate::reasons::BlockedReason;
use crate::tool::ToolError;
use std::path::PathBuf;

/// `mx-smi` could not be found, did not run to a clean end, is not MetaX's, or printed what
/// does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MxSmiError {
    /// Not found, or a run that did not end with exit 0.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// Its output has none of the marks of MetaX's `mx-smi`.
    #[error(
        "the mx-smi at {} is not MetaX's: its output has no `mx-smi version:` banner, no \
         `MetaX System Management Interface Log` title and no `MX-SMI` header",
        program.display()
    )]
    NotMetax {
        /// The program that answered.
        program: PathBuf,
    },
    /// Its output does not read.
    #[error(transparent)]
    Unreadable(#[from] ParseError),
    /// `mx-smi -r` exited 0 but printed that the reset failed.
    #[error("{command} exited 0 but said: {line}")]
    SaidFailed {
        /// The command line.
        command: String,
        /// The line that says so.
        line: String,
    },
}

impl MxSmiError {
    /// The reason a run is blocked with when `mx-smi` fails this way before the reset: an
    /// `mx-smi` root may not run is `unsafe_program`, any other failure `mx_smi_unavailable`.
    pub fn blocked_reason(&self) -> BlockedReason {
        match self {
            Self::Tool(tool) if tool.is_unsafe() => BlockedReason::UnsafeProgram,
            Self::Tool(_)
            | Self::NotMetax { .. }
            | Self::Unreadable(_)
            | Self::SaidFailed { .. } => BlockedReason::MxSmiUnavailable,
        }
    }
}
