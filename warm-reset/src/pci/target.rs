//! [`PciTarget`].

use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// Placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PciTarget {}

impl PciTarget {
    /// Named.
    pub fn devices(&self) -> Vec<Bdf> {
        Vec::new()
    }
    /// Verified.
    pub fn verified(&self) -> Vec<Bdf> {
        Vec::new()
    }
}
