//! [`SysfsError`]: a sysfs file of a PCI function that could not be read, or that holds what the
//! kernel never writes there.

use crate::reasons::BlockedReason;
use gpu_host_probe::OsError;
use std::path::PathBuf;

/// A sysfs entry that does not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SysfsError {
    /// A file or link could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: OsError,
    },
    /// A file holds what the kernel never writes there.
    #[error("{} holds {text:?}, not {expected}", path.display())]
    Unexpected {
        /// The file.
        path: PathBuf,
        /// What it holds.
        text: String,
        /// What the kernel writes there.
        expected: &'static str,
    },
    /// The shell that writes `reset` cannot be run (absent, or another user could have
    /// written it).
    #[error("cannot run the writer of reset files")]
    Writer(#[source] gpu_host_probe::run::StartError),
    /// Writing `1` to the `reset` file failed.
    #[error("writing 1 to {} failed: {why}", path.display())]
    ResetWrite {
        /// The `reset` file.
        path: PathBuf,
        /// How the write ended (and what it said).
        why: String,
    },
}

impl SysfsError {
    /// The reason a run is blocked with when sysfs fails this way before the reset: a writer
    /// of `reset` root may not run is `unsafe_program`; a function whose files do not read is
    /// `unknown_device`.
    pub fn blocked_reason(&self) -> BlockedReason {
        match self {
            Self::Writer(start) if start.is_unsafe() => BlockedReason::UnsafeProgram,
            Self::Writer(_)
            | Self::Read { .. }
            | Self::Unexpected { .. }
            | Self::ResetWrite { .. } => BlockedReason::UnknownDevice,
        }
    }
}

impl From<gpu_host_probe::PciIdError> for SysfsError {
    fn from(error: gpu_host_probe::PciIdError) -> Self {
        match error {
            gpu_host_probe::PciIdError::Read { path, source } => Self::Read {
                path,
                source: source.into(),
            },
            gpu_host_probe::PciIdError::Malformed {
                path,
                content,
                expected,
            } => Self::Unexpected {
                path,
                text: content,
                expected,
            },
        }
    }
}
