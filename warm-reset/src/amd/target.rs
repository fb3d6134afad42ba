//! [`AmdTarget`]: the AMD GPUs an ID names, the group the kernel resets with them (every GPU of
//! their XGMI hives), and the GPUs `amd-smi` is given (one a hive).

use gpu_host_probe::PciIdentity;
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// One GPU of the group, as it was before the reset (what it must be again after it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AmdGpu {
    /// Its address.
    pub bdf: Bdf,
    /// Its IDs.
    pub identity: PciIdentity,
    /// Its XGMI hive; `None`: in no hive.
    pub hive: Option<u64>,
    /// What `current_compute_partition` read (without its newline); `None`: absent.
    pub compute_partition: Option<String>,
    /// What `current_memory_partition` read; `None`: absent.
    pub memory_partition: Option<String>,
}

/// The GPUs named, the group the kernel resets with them, and what `amd-smi` is given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AmdTarget {
    /// The GPUs the ID names.
    pub named: Vec<AmdGpu>,
    /// Every GPU the reset touches: the named ones and every GPU of their hives, by address.
    pub group: Vec<AmdGpu>,
    /// The GPUs `amd-smi reset --gpureset --gpu` is given: the first named GPU of each hive,
    /// and each named GPU in no hive (the kernel takes the rest of a hive along).
    pub reset: Vec<Bdf>,
}

impl AmdTarget {
    /// The PCI addresses of the named GPUs.
    pub fn devices(&self) -> Vec<Bdf> {
        self.named.iter().map(|gpu| gpu.bdf).collect()
    }

    /// The PCI addresses of every GPU of the group (each is verified after the reset).
    pub fn verified(&self) -> Vec<Bdf> {
        self.group.iter().map(|gpu| gpu.bdf).collect()
    }
}
