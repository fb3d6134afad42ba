//! [`NvidiaTarget`].

use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// Placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NvidiaTarget {}

impl NvidiaTarget {
    /// Named.
    pub fn devices(&self) -> Vec<Bdf> {
        Vec::new()
    }
    /// Verified.
    pub fn verified(&self) -> Vec<Bdf> {
        Vec::new()
    }
    /// Group.
    pub fn group(&self) -> Vec<u32> {
        Vec::new()
    }
}
