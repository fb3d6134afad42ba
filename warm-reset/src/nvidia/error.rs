//! [`NvidiaSmiError`]: why `nvidia-smi`, or the NVIDIA driver's files, gave no answer the
//! procedure can use.

use super::nvidia_smi::ParseError;
use crate::reasons::BlockedReason;
use crate::tool::ToolError;
use gpu_host_probe::OsError;
use std::path::PathBuf;

/// `nvidia-smi` could not be found, did not run to a clean end, printed what does not read,
/// or a driver file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NvidiaSmiError {
    /// Not found, or a run that did not end with exit 0.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// Its output does not read.
    #[error(transparent)]
    Unreadable(#[from] ParseError),
    /// A file of the driver (`/proc/driver/nvidia/gpus/<bdf>/information`) could not be read.
    #[error("cannot read {}", path.display())]
    DriverFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: OsError,
    },
    /// `--gpu-reset` did not say that it reset every GPU of the group.
    #[error("{command} exited with code {code} without saying it reset {missing}: {said:?}")]
    ResetFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        code: i32,
        /// The GPUs it did not say it reset.
        missing: String,
        /// What it printed (the last 300 characters).
        said: String,
    },
}

impl NvidiaSmiError {
    /// The reason a run is blocked with when `nvidia-smi` (or a driver file) fails this way
    /// before the reset: an `nvidia-smi` root may not run is `unsafe_program`, any other
    /// failure `nvidia_smi_unavailable`.
    pub fn blocked_reason(&self) -> BlockedReason {
        match self {
            Self::Tool(tool) if tool.is_unsafe() => BlockedReason::UnsafeProgram,
            Self::Tool(_)
            | Self::Unreadable(_)
            | Self::DriverFile { .. }
            | Self::ResetFailed { .. } => BlockedReason::NvidiaSmiUnavailable,
        }
    }
}
