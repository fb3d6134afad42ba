//! [`GpuRecord`]: what the host keeps of one GPU.

use crate::pci::PciFunction;
use crate::reason::GpuReason;
use gpu_host_probe::amdgpu::{AmdPartitions, ComputePartition, MemoryPartition};
use gpu_host_probe::{Boot, BootMatch};
use gpu_partition_types::PartitionMode;
use layout_model::partition::Division;
use serde::{Deserialize, Serialize};

/// A memory partition this host requested of an AMD GPU (its XGMI hive), waiting for a driver
/// reload. The kernel keeps the request in the driver and shows none (`current_memory_partition`
/// shows the mode now until the reload), so only this record knows it: it ends when a read shows
/// the GPU in the mode (the reload came), or in another boot (the driver that held it is gone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MemoryRequest {
    /// The mode requested.
    pub mode: MemoryPartition,
    /// When (Unix seconds).
    pub at: u64,
    /// The boot it was made in (`boot_id`, `boot_time`).
    #[serde(flatten)]
    pub boot: Boot,
}

impl MemoryRequest {
    /// `mode` requested at `at` in `boot`.
    pub fn new(mode: MemoryPartition, at: u64, boot: Boot) -> Self {
        Self { mode, at, boot }
    }
}

/// Whether a memory request of ours still waits for a driver reload, given what the GPU shows
/// now in `boot`: not once the GPU shows the mode (the reload came), nor in another boot (the
/// driver that held it is gone). The one owner of the rule: the sync's read and `mxctl gpus`
/// call it. (A reload of ours ends every request too: [`crate::requests_ended`].)
pub fn still_waits(request: &MemoryRequest, held: &AmdPartitions, boot: &Boot) -> bool {
    request.boot.compare(boot) != BootMatch::Other && held.memory != Some(request.mode)
}

/// What the host keeps of an AMD GPU's partitions: as last read (with when), and a memory
/// request of ours waiting for a driver reload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[non_exhaustive]
pub struct AmdRecord {
    /// The compute partition the last read found; `None` when it did not read (the mode's
    /// reason says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<ComputePartition>,
    /// The memory partition the last read found; `None` when it did not read, or the GPU shows
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryPartition>,
    /// When they were read (Unix seconds); `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<u64>,
    /// A memory partition requested and waiting for a driver reload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<MemoryRequest>,
}

impl AmdRecord {
    /// Partitions read at `read_at`, no request waiting.
    pub fn read(
        compute: Option<ComputePartition>,
        memory: Option<MemoryPartition>,
        read_at: u64,
    ) -> Self {
        Self {
            compute,
            memory,
            read_at: Some(read_at),
            requested: None,
        }
    }
}

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
    /// An AMD GPU's partitions (schema 5); `None` for any other GPU, and for an AMD GPU never
    /// read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amd: Option<AmdRecord>,
    /// Its partitions as last read, with the layout's generation (schema 7); `None` before the
    /// first read that listed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub division: Option<Division>,
    /// An NVIDIA GPU's architecture as its last answered read gave it (schema 10: NVML's
    /// number), for what a restart keeps of its division; `None`: not known (never read, or
    /// read from a helper that does not say it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<gpu_partition_types::CardArchitecture>,
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
            amd: None,
            division: None,
            architecture: None,
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

    /// An AMD GPU, by vendor ID.
    pub fn is_amd(&self) -> bool {
        self.vendor == gpu_host_probe::AMD_VENDOR
    }

    /// The memory partition requested of this AMD GPU that still waits for a driver reload,
    /// judged against what it shows now (`held`) in `boot` by [`still_waits`]:
    /// what a caller that reads the GPU itself asks (an apply's preflight, an assert, `mxctl
    /// gpus`), where the record may be older than the read.
    pub fn waiting_request(
        &self,
        held: &gpu_host_probe::amdgpu::AmdPartitions,
        boot: &Boot,
    ) -> Option<MemoryPartition> {
        self.amd
            .as_ref()
            .and_then(|amd| amd.requested.as_ref())
            .filter(|request| still_waits(request, held, boot))
            .map(|request| request.mode)
    }

    /// The memory partition requested of this AMD GPU and waiting for a driver reload, if any.
    pub fn requested_memory(&self) -> Option<MemoryPartition> {
        self.amd
            .as_ref()
            .and_then(|amd| amd.requested.as_ref())
            .map(|request| request.mode)
    }

    /// Divided or possibly divided now, or last read so.
    pub fn last_known_divided(&self) -> bool {
        self.partition_mode.is_divided_or_possibly()
            || self
                .last_read
                .is_some_and(PartitionMode::is_divided_or_possibly)
    }

    /// Whether the GPU waits for a reset before it holds what was asked of it, from its mode
    /// and its division as last read: a MIG mode change pending until the GPU is reset
    /// (`enable_on_reboot`, `disable_on_reboot`); on an AMD GPU a memory partition requested and
    /// waiting for the driver reload that carries it out; or a declared division the card no
    /// longer admits (`Division::unadmitted`). `None` where the mode was not read (`unknown`,
    /// `possibly_enabled`, `not_checked`, `not_in_use`): not known.
    pub fn requires_reset(&self) -> Option<bool> {
        match self.partition_mode {
            PartitionMode::EnableOnReboot | PartitionMode::DisableOnReboot => Some(true),
            // A memory request waits for its reload whether or not it changes whether the GPU
            // is divided (NPS2 to NPS4 leaves it divided: `enabled`).
            PartitionMode::NotSupported | PartitionMode::Disabled | PartitionMode::Enabled => {
                let unadmitted = self
                    .division
                    .as_ref()
                    .is_some_and(|division| !division.unadmitted.is_empty());
                Some(self.requested_memory().is_some() || unadmitted)
            }
            PartitionMode::Unknown
            | PartitionMode::NotChecked
            | PartitionMode::NotInUse
            | PartitionMode::PossiblyEnabled => None,
        }
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
