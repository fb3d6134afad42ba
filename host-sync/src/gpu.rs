//! [`GpuRecord`]: what the host keeps of one GPU.

use crate::pci::PciFunction;
use crate::reason::GpuReason;
use gpu_partition_types::PartitionMode;
use serde::{Deserialize, Serialize};

/// What the host keeps of one GPU (by address, in [`HostState`](crate::HostState)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GpuRecord {
    /// Vendor id, bare lower-case hex.
    pub vendor: String,
    /// Device id, bare lower-case hex.
    pub device: String,
    /// The bound driver at the last sync.
    pub driver: Option<String>,
    /// The partition mode.
    pub partition_mode: PartitionMode,
    /// Why: the read's reason for `unknown`/`possibly_enabled`, why not read for `not_checked`,
    /// otherwise none.
    pub reason: GpuReason,
    /// The last mode read from the card itself, kept across the `unknown` written before each
    /// read, so that a failed read (or a crash) over a divided GPU still knows it was divided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_read: Option<PartitionMode>,
}

impl GpuRecord {
    /// A GPU seen for the first time: `not_in_use`.
    pub fn new(function: &PciFunction) -> Self {
        Self {
            vendor: function.vendor.clone(),
            device: function.device.clone(),
            driver: function.driver.clone(),
            partition_mode: PartitionMode::NotInUse,
            reason: GpuReason::None,
            last_read: None,
        }
    }

    /// Divided or possibly divided now, or last read so.
    pub fn last_known_divided(&self) -> bool {
        self.partition_mode.is_divided_or_possibly()
            || self
                .last_read
                .is_some_and(PartitionMode::is_divided_or_possibly)
    }

    /// Sets the mode and its reason.
    pub fn set(&mut self, mode: PartitionMode, reason: GpuReason) {
        self.partition_mode = mode;
        self.reason = reason;
    }

    /// Takes the ids and driver of the current scan.
    pub fn refresh(&mut self, function: &PciFunction) {
        self.vendor.clone_from(&function.vendor);
        self.device.clone_from(&function.device);
        self.driver.clone_from(&function.driver);
    }
}
