//! [`Backend`]: everything the procedure asks of the host, behind one trait with one real
//! implementation ([`crate::MxSmiBackend`]) and one simulated ([`crate::SimHost`]).

use crate::host_files::DriverUse;
use crate::mx_smi::{GpuProcess, GpuRow, Topology, VersionCheck};
use std::time::Duration;

/// How `mx-smi -r` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResetEnd {
    /// It exited 0 and said nothing of an error.
    Finished,
    /// It failed, or said so; what it reported.
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
    /// The versions in plain `mx-smi`'s header; `Err` when `mx-smi` fails or is not MetaX's.
    fn versions(&mut self) -> Result<VersionCheck, String>;
    /// The processes of plain `mx-smi`'s process section (the same call as the versions may
    /// serve both).
    fn processes(&mut self) -> Result<Vec<GpuProcess>, String>;
    /// `mx-smi -L`.
    fn list(&mut self) -> Result<Vec<GpuRow>, String>;
    /// `mx-smi topo -m`: the MetaXLink links.
    fn topology(&mut self) -> Result<Topology, String>;
    /// Notes the end of the kernel log; `Err` when it cannot be opened or read.
    fn mark_kernel_log(&mut self) -> Result<(), String>;
    /// Error records added to the kernel log since the mark.
    fn kernel_errors(&mut self) -> Result<Vec<String>, String>;
    /// Runs `mx-smi -r -i ID`, killing it if it has not ended `within`.
    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ResetEnd;
}
