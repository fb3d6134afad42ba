//! [`GpuRecord`]: what the host keeps of one GPU.

use crate::pci::PciFunction;
use crate::reason::GpuReason;
use gpu_partition_types::PartitionMode;
use serde::{Deserialize, Serialize};

/// What the host keeps of one GPU (by address, in [`HostState`](crate::HostState)). Every field
/// is part of the store's contract ([`StateStore`](crate::StateStore)): a store keeps each one
/// and gives it back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GpuRecord {
    /// Vendor ID (kept as bare lower-case hex, `10de`).
    #[serde(with = "hex_id")]
    pub vendor: u16,
    /// Device ID (kept as bare lower-case hex, `2335`).
    #[serde(with = "hex_id")]
    pub device: u16,
    /// The bound driver at the last sync.
    pub driver: Option<String>,
    /// The partition mode.
    pub partition_mode: PartitionMode,
    /// Why: the read's reason for `unknown`/`possibly_enabled`, why not read for `not_checked`;
    /// `None` for a mode that needs no reason (`""` in the file).
    #[serde(with = "crate::reason::token_or_empty")]
    pub reason: Option<GpuReason>,
    /// The why of the reason, for people: what the failed read did, with its causes. `None`
    /// when there is no failure to explain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The last mode read from the card itself, kept across the `unknown` written before each
    /// read, so that a failed read (or a crash) over a divided GPU still knows it was divided.
    /// A store must keep it: it is what makes a crash during a read safe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_read: Option<PartitionMode>,
}

impl GpuRecord {
    /// A record as a store keeps it, from its stored fields; [`GpuRecord::reason`],
    /// [`GpuRecord::message`] and [`GpuRecord::last_read`] start as `None` and are set as
    /// fields.
    pub fn new(
        vendor: u16,
        device: u16,
        driver: Option<String>,
        partition_mode: PartitionMode,
    ) -> Self {
        Self {
            vendor,
            device,
            driver,
            partition_mode,
            reason: None,
            message: None,
            last_read: None,
        }
    }

    /// A GPU seen for the first time: `not_in_use`.
    pub fn first_seen(function: &PciFunction) -> Self {
        Self::new(
            function.identity.vendor,
            function.identity.device,
            function.driver.clone(),
            PartitionMode::NotInUse,
        )
    }

    /// An NVIDIA GPU, by vendor ID.
    pub fn is_nvidia(&self) -> bool {
        self.vendor == gpu_host_probe::NVIDIA_VENDOR
    }

    /// Divided or possibly divided now, or last read so.
    pub fn last_known_divided(&self) -> bool {
        self.partition_mode.is_divided_or_possibly()
            || self
                .last_read
                .is_some_and(PartitionMode::is_divided_or_possibly)
    }

    /// Sets the mode and its reason, with no message.
    pub fn set(&mut self, mode: PartitionMode, reason: Option<GpuReason>) {
        self.partition_mode = mode;
        self.reason = reason;
        self.message = None;
    }

    /// Takes the ids and driver of the current scan.
    pub fn refresh(&mut self, function: &PciFunction) {
        self.vendor = function.identity.vendor;
        self.device = function.identity.device;
        self.driver.clone_from(&function.driver);
    }
}

/// A 16-bit PCI ID as the store keeps it: four bare lower-case hexadecimal digits (`10de`).
pub(crate) mod hex_id {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// The ID's four digits.
    pub(crate) fn text(id: u16) -> String {
        format!("{id:04x}")
    }

    pub(crate) fn serialize<S: Serializer>(id: &u16, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&text(*id))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u16, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse(&text).ok_or_else(|| {
            D::Error::custom(format!(
                "{text:?} is not a PCI ID: expected four hexadecimal digits such as 10de"
            ))
        })
    }

    /// Four hexadecimal digits (either case), nothing else.
    pub(crate) fn parse(text: &str) -> Option<u16> {
        (text.len() == 4 && text.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u16::from_str_radix(text, 16).ok())
            .flatten()
    }
}
