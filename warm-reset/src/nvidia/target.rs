//! [`NvidiaTarget`]: the NVIDIA GPUs an ID names, and the group a reset must take with them.

use super::nvidia_smi::NvidiaGpu;
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// The GPUs named, and the group reset in one command: them and their NVLink peers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NvidiaTarget {
    /// The GPUs the ID names.
    pub named: Vec<NvidiaGpu>,
    /// Every GPU reset together (the named ones and their NVLink peers), by index.
    pub group: Vec<NvidiaGpu>,
}

impl NvidiaTarget {
    /// The PCI addresses of the named GPUs.
    pub fn devices(&self) -> Vec<Bdf> {
        self.named.iter().map(|gpu| gpu.bdf).collect()
    }

    /// The PCI addresses of every GPU of the group (each is verified after the reset).
    pub fn verified(&self) -> Vec<Bdf> {
        self.group.iter().map(|gpu| gpu.bdf).collect()
    }

    /// The group's indices.
    pub fn group(&self) -> Vec<u32> {
        self.group.iter().map(|gpu| gpu.index).collect()
    }
}
