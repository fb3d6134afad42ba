//! [`GpuRecord`]: what the host keeps of one GPU.

use crate::pci::PciFunction;
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
    /// otherwise empty.
    pub reason: String,
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
            reason: String::new(),
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
    pub fn set(&mut self, mode: PartitionMode, reason: impl Into<String>) {
        self.partition_mode = mode;
        self.reason = reason.into();
    }

    /// Takes the ids and driver of the current scan.
    pub fn refresh(&mut self, function: &PciFunction) {
        self.vendor.clone_from(&function.vendor);
        self.device.clone_from(&function.device);
        self.driver.clone_from(&function.driver);
    }
}

/// Why the host does not read `function` by design (`not_nvidia`, `no_driver`, or
/// `driver_<name>` with every character outside `[a-z0-9]` turned into `_`); `None` for an
/// NVIDIA GPU bound to `nvidia`, which is read.
pub fn not_read_reason(function: &PciFunction) -> Option<String> {
    if !function.is_nvidia() {
        return Some("not_nvidia".to_owned());
    }
    match function.driver.as_deref() {
        None => Some("no_driver".to_owned()),
        Some("nvidia") => None,
        Some(driver) => Some(format!(
            "driver_{}",
            driver
                .chars()
                .map(|c| if c.is_ascii_lowercase() || c.is_ascii_digit() {
                    c
                } else {
                    '_'
                })
                .collect::<String>()
        )),
    }
}
