//! [`HostState`]: what a host keeps, as the store writes it.

use crate::gpu::GpuRecord;
use crate::status::{HostStatus, Reason};
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The schema version the store writes; a file of a later schema is refused, not guessed at.
pub const SCHEMA: u32 = 1;

/// The host fields, the boot id of the last sync, and each GPU's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostState {
    /// The schema version ([`SCHEMA`]).
    pub schema: u32,
    /// `gpu_partitioning_status`.
    pub status: HostStatus,
    /// `gpu_partitioning_reason`.
    pub reason: Reason,
    /// The kernel's boot id at the last sync, when it was readable.
    #[serde(default)]
    pub boot_id: Option<String>,
    /// Each GPU, by address.
    #[serde(default)]
    pub gpus: BTreeMap<Bdf, GpuRecord>,
}

impl Default for HostState {
    /// A host that never synced: `not_reported`, no GPU.
    fn default() -> Self {
        Self {
            schema: SCHEMA,
            status: HostStatus::NotReported,
            reason: Reason::none(),
            boot_id: None,
            gpus: BTreeMap::new(),
        }
    }
}
