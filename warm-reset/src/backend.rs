//! [`Backend`]: everything the procedure asks of the host, behind one trait with one real
//! implementation ([`crate::MxSmiBackend`]) and one simulated ([`crate::SimHost`]).

use crate::kmsg::KernelLogError;
use crate::metax::mx_smi::{GpuProcess, GpuRow, Topology, VersionCheck};
use crate::metax::{DriverUse, MxSmiError};
use std::time::Duration;

/// Why the host did not answer a question of the procedure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// `mx-smi` did not answer.
    #[error(transparent)]
    MxSmi(#[from] MxSmiError),
    /// The kernel log could not be used.
    #[error(transparent)]
    KernelLog(#[from] KernelLogError),
    /// A failure a simulated host was told to show (this description).
    #[error("{0} (simulated)")]
    Simulated(String),
}

/// How `mx-smi -r` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResetEnd {
    /// It exited 0 and said nothing of an error.
    Finished,
    /// It failed, or said so.
    Failed(BackendError),
    /// It did not end within the time given and was killed.
    Hung,
}

/// The host as the procedure sees it.
pub trait Backend {
    /// Whether this runs as root.
    fn is_root(&mut self) -> bool;
    /// Whether `mx-smi` is there (present and executable), or why not.
    fn find_mx_smi(&mut self) -> Result<(), BackendError>;
    /// The `metax` driver's use count.
    fn driver_use(&mut self) -> DriverUse;
    /// The versions in plain `mx-smi`'s header; `Err` when `mx-smi` fails or is not MetaX's.
    fn versions(&mut self) -> Result<VersionCheck, BackendError>;
    /// The processes of plain `mx-smi`'s process section (the same call as the versions may
    /// serve both).
    fn processes(&mut self) -> Result<Vec<GpuProcess>, BackendError>;
    /// `mx-smi -L`.
    fn list(&mut self) -> Result<Vec<GpuRow>, BackendError>;
    /// `mx-smi topo -m`: the MetaXLink links.
    fn topology(&mut self) -> Result<Topology, BackendError>;
    /// Notes the end of the kernel log; `Err` when it cannot be opened or read.
    fn mark_kernel_log(&mut self) -> Result<(), BackendError>;
    /// Error records added to the kernel log since the mark.
    fn kernel_errors(&mut self) -> Result<Vec<String>, BackendError>;
    /// Runs `mx-smi -r -i ID`, killing it if it has not ended `within`.
    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ResetEnd;
}
