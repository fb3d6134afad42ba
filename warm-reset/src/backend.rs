//! [`Backend`]: everything the procedure asks of the host, behind one trait with one real
//! implementation ([`crate::MxSmiBackend`]) and one simulated ([`crate::SimHost`]).

use crate::host_files::DriverUse;
use crate::mx_smi::{GpuRow, VersionCheck};
use std::time::Duration;

/// How `mx-smi -r` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResetEnd {
    /// It exited 0.
    Finished,
    /// It failed; what it reported.
    Failed(String),
    /// It did not end within the time given and was killed.
    Hung,
}

/// The host as the procedure sees it.
pub trait Backend {
    /// Whether this runs as root.
    fn is_root(&mut self) -> bool;
    /// Whether `mx-smi` is there (present and executable), or why not.
    fn find_mx_smi(&mut self) -> Result<(), String>;
    /// The `metax` driver's use count.
    fn driver_use(&mut self) -> DriverUse;
    /// The versions; `Err` when `mx-smi --show-version` fails or is not MetaX's tool.
    fn versions(&mut self) -> Result<VersionCheck, String>;
    /// The pids using the GPUs (`mx-smi --show-process`).
    fn processes(&mut self) -> Result<Vec<u32>, String>;
    /// `mx-smi -L`.
    fn list(&mut self) -> Result<Vec<GpuRow>, String>;
    /// Notes the end of the kernel log.
    fn mark_kernel_log(&mut self) -> Result<(), String>;
    /// Error records added to the kernel log since the mark.
    fn kernel_errors(&mut self) -> Result<Vec<String>, String>;
    /// Runs `mx-smi -r -i ID`, killing it if it has not ended `within`.
    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ResetEnd;
    /// The interconnect group of a node, when the backend knows it (the real one does not:
    /// `mx-smi -L` does not show links).
    fn group_of(&mut self, node: u32) -> Option<Vec<u32>>;
}
