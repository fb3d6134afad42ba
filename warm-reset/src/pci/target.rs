//! [`PciTarget`]: a PCI function to reset, and every function the reset touches.

use gpu_host_probe::PciIdentity;
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// A function the reset touches, with its IDs before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Member {
    /// Its address.
    pub bdf: Bdf,
    /// Its IDs before the reset.
    pub identity: PciIdentity,
}

impl Member {
    /// A member at `bdf` with these IDs.
    pub fn new(bdf: Bdf, identity: PciIdentity) -> Self {
        Self { bdf, identity }
    }
}

/// The function named, the method the kernel will use, and the group it resets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PciTarget {
    /// The function named.
    pub device: Bdf,
    /// The kernel's first reset method for it (what a write to `reset` uses).
    pub method: String,
    /// Every function the reset touches, the named one first: itself alone, or with a bus
    /// reset every function on its bus.
    pub members: Vec<Member>,
}

impl PciTarget {
    /// The function named.
    pub fn devices(&self) -> Vec<Bdf> {
        vec![self.device]
    }

    /// Every function the reset touches.
    pub fn verified(&self) -> Vec<Bdf> {
        self.members.iter().map(|member| member.bdf).collect()
    }
}
