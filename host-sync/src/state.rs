//! [`HostState`]: what a host keeps, as the store writes it.

use crate::boot::Boot;
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
    /// The boot of the last sync: its boot id and boot time, each when it was readable
    /// (`boot_id` and `boot_time` in the file).
    #[serde(flatten)]
    pub boot: Boot,
    /// Each GPU, by address.
    #[serde(default)]
    pub gpus: BTreeMap<Bdf, GpuRecord>,
    /// When the last sync finished (Unix seconds); `None` before the first, and in files of
    /// versions that did not write it (`synced_at` in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_at: Option<u64>,
}

impl Default for HostState {
    /// A host that never synced: `not_reported`, no GPU.
    fn default() -> Self {
        Self {
            schema: SCHEMA,
            status: HostStatus::NotReported,
            reason: Reason::none(),
            boot: Boot::default(),
            gpus: BTreeMap::new(),
            synced_at: None,
        }
    }
}
