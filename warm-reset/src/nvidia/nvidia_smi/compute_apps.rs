//! `nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv,noheader`: one compute process
//! per line, nothing when idle. It lists CUDA processes only: the holders of `/dev/nvidia*` are
//! looked for apart.

use super::bus_id::parse_bus_id;
use crate::parse_error::{ParseError, csv_rows};
use gpu_partition_types::Bdf;

const OUTPUT: &str = "nvidia-smi --query-compute-apps";

/// A compute process on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ComputeApp {
    /// Its pid.
    pub pid: u32,
    /// The GPU it runs on.
    pub bdf: Bdf,
}

/// Reads the CSV lines; an empty output is no process.
pub fn parse_compute_apps(text: &str) -> Result<Vec<ComputeApp>, ParseError> {
    csv_rows(OUTPUT, text, |line, bad| {
        let (pid, bus_id) = line
            .split_once(',')
            .ok_or_else(|| bad("not two comma-separated fields (pid, bus id)"))?;
        Ok(ComputeApp {
            pid: pid
                .trim()
                .parse()
                .map_err(|_| bad("the pid is not a number"))?,
            bdf: parse_bus_id(bus_id).ok_or_else(|| bad("the bus id is not a PCI address"))?,
        })
    })
}
