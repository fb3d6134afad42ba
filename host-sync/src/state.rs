//! [`HostState`]: what a host keeps, as the store writes it.

use crate::declared::Declaration;
use crate::gpu::GpuRecord;
use crate::layout::LayoutRecord;
use crate::status::{HostStatus, StoredReason};
use gpu_host_probe::Boot;
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The layout version of the state file ([`FileStore`](crate::FileStore)); a file of a later
/// schema is refused, not guessed at. A database store keeps its own migrations and need not
/// store it: it answers [`HostState::new`]'s (this one) on load.
pub const SCHEMA: u32 = 1;

/// The host fields, the boot of the last sync, and each GPU's record. Every field is part of
/// the store's contract ([`StateStore`](crate::StateStore)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HostState {
    /// The layout version of the state file ([`SCHEMA`]).
    pub schema: u32,
    /// `gpu_partitioning_status`.
    pub status: HostStatus,
    /// `gpu_partitioning_reason`: stored with the status, in the same write.
    pub reason: StoredReason,
    /// Why the host has its reason, for people (the helper that could not be used, say);
    /// `None` when there is nothing to explain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The boot of the last sync: its boot id and boot time, each when it was readable
    /// (`boot_id` and `boot_time` in the file). A store must keep it: the next sync compares
    /// it with the boot now to find the first start after a boot.
    #[serde(flatten)]
    pub boot: Boot,
    /// Each GPU, by address.
    #[serde(default)]
    pub gpus: BTreeMap<Bdf, GpuRecord>,
    /// When the last sync finished (Unix seconds); `None` before the first, and in files of
    /// versions that did not write it (`synced_at` in the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_at: Option<u64>,
    /// The last MIG layout apply, while it runs and after it ended; `None` before the first
    /// (and in files of versions that did not write it). A store must keep it: an unhealed
    /// failure in it is what keeps the host `entering (layout_failed)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<LayoutRecord>,
    /// What the host is declared to be (the last apply or leave that wrote), with how the cards
    /// compared with it at the last sync that read them; `None` before the first. A store must
    /// keep it: it is what a restore brings the cards back to, and its check is what keeps the
    /// host `entering (layout_drifted)` while the cards differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<Declaration>,
}

impl HostState {
    /// A state as a store keeps it, from its host fields: schema [`SCHEMA`], no boot, no GPU,
    /// no message, never synced. The other fields are set as fields.
    pub fn new(status: HostStatus, reason: StoredReason) -> Self {
        Self {
            schema: SCHEMA,
            status,
            reason,
            message: None,
            boot: Boot::default(),
            gpus: BTreeMap::new(),
            synced_at: None,
            layout: None,
            declared: None,
        }
    }
}

impl Default for HostState {
    /// A host that never synced: `not_reported`, no GPU.
    fn default() -> Self {
        Self::new(HostStatus::NotReported, StoredReason::none())
    }
}
