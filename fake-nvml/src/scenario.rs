//! The scenario a fake NVML answers from (`FAKE_NVML_SCENARIO` names the file), which is also
//! the shape of its state file (`FAKE_NVML_STATE`):
//!
//! ```json
//! {"driver_version": "570.172.08", "nvml_version": "12.570.172.08",
//!  "devices": [{
//!    "pci_bus_id": "00000000:3B:00.0", "name": "NVIDIA A100-SXM4-40GB",
//!    "mig_mode": {"current": 1, "pending": 1}, "mig_mode_change": "reset",
//!    "gpu_instance_profiles": [{"index": 0, "id": 19, "name": "1g.5gb", "slice_count": 1,
//!       "instance_count": 7, "multiprocessor_count": 14, "copy_engine_count": 1,
//!       "decoder_count": 0, "encoder_count": 0, "jpeg_count": 0, "ofa_count": 0,
//!       "memory_size_mb": 4864, "p2p": false, "gfx": false,
//!       "placements": [{"start": 0, "size": 1}, {"start": 1, "size": 1}]}],
//!    "gpu_instances": [{"id": 1, "profile_id": 9, "placement": {"start": 0, "size": 4},
//!       "compute_instances": [{"id": 0, "profile_id": 2, "placement": {"start": 0, "size": 3}}]}],
//!    "vgpu_types": [{"id": 476, "name": "GRID A100-3-20C", "gpu_instance_profile_id": 9,
//!       "framebuffer_mib": 20480, "max_instances": 2}],
//!    "vgpu_heterogeneous_mode": false,
//!    "vgpus": [{"uuid": "…", "type": "NVIDIA A100-3-20C", "type_id": 1123,
//!       "gpu_instance_id": 1, "vm": null}],
//!    "clients": [{"pid": 4242, "name": "python3"}],
//!    "write_delay_ms": 0,
//!    "fail": {"nvmlDeviceGetGpuInstances": "NO_PERMISSION"}}]}
//! ```
//!
//! Members may be added; absent lists are empty. `mig_mode` may be `"not_supported"`.
//! `mig_mode_change` is `"immediate"` (Hopper and later; the default) or `"reset"` (Ampere: a
//! change stays pending until a GPU reset). A profile's `placements` are NVML's possible
//! placements; its remaining capacity is computed from them and what is placed. `clients` hold
//! the card (every destroy is `IN_USE`, a mode change's activation too), and NVML lists them as
//! running processes. `write_delay_ms` delays every write (for crash tests). `fail` maps an NVML
//! function to the error it answers on that device (an `NVML_ERROR_*` name without its prefix).
//!
//! `vgpu_types` is the card's vGPU type catalogue (`nvmlDeviceGetSupportedVgpus` and the
//! `nvmlVgpuType*` calls): each type's NVML type `id`, its `name` as NVML answers it, its
//! `class` (optional: absent, `nvmlVgpuTypeGetClass` answers `NVML_ERROR_NOT_SUPPORTED`), the
//! `gpu_instance_profile_id` of the MIG profile it runs on (`null` for a time-sliced type:
//! `INVALID_GPU_INSTANCE_PROFILE_ID`), its `framebuffer_mib`, its `max_instances` on one GPU, and
//! `max_instances_per_gpu_instance` (optional: absent where no source publishes it,
//! `nvmlVgpuTypeGetMaxInstancesPerGpuInstance` answers `NVML_ERROR_NOT_SUPPORTED`).
//! `vgpu_heterogeneous_mode` is the mode `nvmlDeviceGetVgpuHeterogeneousMode` answers; absent: the
//! part does not support it (`NVML_ERROR_NOT_SUPPORTED`). A part's numbers name their sources
//! in its `sources`, as every other number does.

pub(crate) use crate::nvml_names::{error_code, parse_bus_id};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole scenario.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Scenario {
    /// Where the scenario's facts come from, for people (a published capture, NVIDIA's
    /// documentation); nothing reads it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// `nvmlSystemGetDriverVersion`.
    pub driver_version: String,
    /// `nvmlSystemGetNVMLVersion`.
    pub nvml_version: String,
    /// The cards.
    #[serde(default)]
    pub devices: Vec<Device>,
    /// The NVLink groups: each the bus IDs of cards joined by NVLink (as `nvidia-smi topo -m`
    /// shows them, `NV<n>` between each pair). A reset through
    /// [`FakeNvmlBackend`](crate::FakeNvmlBackend) takes a card's whole group with it,
    /// as the nvidia method asks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvlink: Vec<Vec<String>>,
    /// What the calls and a reset cost (none by default: every call is instant).
    #[serde(default, skip_serializing_if = "Costs::is_free")]
    pub costs: Costs,
}

/// What a real card's work costs, for benchmarks and tests that run at a card's pace: each
/// NVML call named in `calls_ms` takes that long (the library sleeps on entry, outside any
/// lock, so calls of different processes — different cards — overlap as on a host), and a GPU
/// reset through [`FakeNvmlBackend`](crate::FakeNvmlBackend) takes `reset_ms` on its
/// clock. NVIDIA publishes no figure for either; the benchmarks state the ones they choose.
///
/// ```json
/// "costs": {"reset_ms": 5000, "calls_ms": {"nvmlDeviceCreateGpuInstanceWithPlacement": 200}}
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Costs {
    /// How long a GPU reset takes, in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reset_ms: u64,
    /// How long each call of these functions takes, in milliseconds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calls_ms: BTreeMap<String, u64>,
    /// How long one run of `fake-nvml sriov-manage` takes on one card, in milliseconds (before
    /// it changes the state, holding no lock: runs on different cards overlap, as nothing
    /// published says the driver serializes them).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sriov_manage_ms: u64,
}

fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

impl Costs {
    /// Whether nothing costs anything.
    pub fn is_free(&self) -> bool {
        self.reset_ms == 0 && self.calls_ms.is_empty() && self.sriov_manage_ms == 0
    }

    /// What a reset costs.
    pub fn reset(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.reset_ms)
    }

    /// What a call of `function` costs.
    pub fn call(&self, function: &str) -> std::time::Duration {
        std::time::Duration::from_millis(self.calls_ms.get(function).copied().unwrap_or(0))
    }
}

/// One card.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Device {
    /// Its bus ID, in either form NVML knows (`00000000:3B:00.0`, `0000:3b:00.0`).
    pub pci_bus_id: String,
    /// `nvmlDeviceGetName`.
    #[serde(default)]
    pub name: String,
    /// `nvmlDeviceGetSerial`; `None`: one made of the card's UUID
    /// ([`Device::serial_or_derived`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// `nvmlDeviceGetUUID`; `None`: one made of the bus ID ([`Device::uuid_or_derived`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// `nvmlDeviceGetArchitecture`, by nvml.h's name (`"ampere"`, `"hopper"`: NVML answers its
    /// number); absent: `NVML_ERROR_NOT_SUPPORTED`, which no real part answers, so every
    /// shipped scenario of a real part gives it, with its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<gpu_partition_types::Architecture>,
    /// The PCI device and vendor ID as NVML gives them (`0x20B010DE`: device `0x20b0`, vendor
    /// NVIDIA; mig-parted's `device-filter`); absent: 0. Every part gives it, with its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_device_id: Option<u32>,
    /// The board's total memory in MiB (`nvmlDeviceGetMemoryInfo`, what `nvidia-smi` prints
    /// after the slash); absent: the memory calls answer `NVML_ERROR_NOT_SUPPORTED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_total_mib: Option<u64>,
    /// What the driver reserves of it, in MiB (`nvmlMemory_v2_t::reserved`); absent: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_reserved_mib: Option<u64>,
    /// `nvmlDeviceGetMigMode`.
    pub mig_mode: MigMode,
    /// How a mode change takes effect.
    #[serde(default)]
    pub mig_mode_change: MigModeChange,
    /// What a reboot (or a driver reload) leaves of the MIG mode; absent: what the part's
    /// generation does ([`MigModeChange::reboot_default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_mode_at_boot: Option<MigModeAtBoot>,
    /// The GPU-instance profiles, by index.
    #[serde(default)]
    pub gpu_instance_profiles: Vec<Profile>,
    /// The GPU instances.
    #[serde(default)]
    pub gpu_instances: Vec<GpuInstance>,
    /// The vGPU types the card supports, in the order NVML lists them; absent: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vgpu_types: Vec<VgpuType>,
    /// Whether heterogeneous (mixed-size) vGPU mode is on; absent: the part does not support
    /// it, or no source says what it answers (`NVML_ERROR_NOT_SUPPORTED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vgpu_heterogeneous_mode: Option<bool>,
    /// The active vGPUs.
    #[serde(default)]
    pub vgpus: Vec<Vgpu>,
    /// The card's SR-IOV side as NVIDIA's vGPU manager drives it (`sriov-manage`, each VF's
    /// `nvidia/current_vgpu_type`); absent: the card has no SR-IOV virtual functions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sriov: Option<Sriov>,
    /// Processes holding the card.
    #[serde(default)]
    pub clients: Vec<Client>,
    /// How long each write waits before it is stored (milliseconds).
    #[serde(default)]
    pub write_delay_ms: u64,
    /// Function name → the `NVML_ERROR_*` name it answers on this device.
    #[serde(default)]
    pub fail: BTreeMap<String, String>,
}

impl Device {
    /// The card's UUID: the scenario's, else `GPU-00000000-0000-0000-0000-DDDDDDBBddff` made of
    /// the bus ID's domain (its low 24 bits), bus, device and function, so that two cards of one
    /// template stay apart.
    pub fn uuid_or_derived(&self) -> String {
        if let Some(uuid) = &self.uuid {
            return uuid.clone();
        }
        let (domain, bus, device, function) = parse_bus_id(&self.pci_bus_id).unwrap_or_default();
        let domain = domain & 0x00ff_ffff;
        format!("GPU-00000000-0000-0000-0000-{domain:06x}{bus:02x}{device:02x}{function:02x}")
    }

    /// The board's serial: the scenario's, else thirteen digits made of the UUID, as a board's
    /// (`Serial Number : 1753724031847` on an H200) but from 0, as no real one starts: another
    /// board in a slot (a new UUID) gets another serial, as a real swap does.
    pub fn serial_or_derived(&self) -> String {
        if let Some(serial) = &self.serial {
            return serial.clone();
        }
        let uuid = self.uuid_or_derived();
        let digits = uuid.chars().filter_map(|c| c.to_digit(16));
        let folded = digits.fold(0, |sum: u64, d| {
            (sum * 16 + u64::from(d)) % 1_000_000_000_000
        });
        format!("0{folded:012}")
    }
}

/// How a MIG mode change takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MigModeChange {
    /// At once (Hopper and later).
    #[default]
    Immediate,
    /// Pending until a GPU reset (Ampere).
    Reset,
}

impl MigModeChange {
    /// What a reboot leaves of the mode on a part whose mode changes so: Ampere (a change
    /// waits for a reset) keeps it in an InfoROM bit, so it survives; from Hopper on (a change
    /// is immediate) the driver holds it, and it is gone. NVIDIA's GPU operator PR 2603: "MIG
    /// mode survives a reboot on Ampere via an InfoROM status bit, and from Hopper on, enabling
    /// it no longer needs a reset"; NVIDIA's gpu-admin-tools issue 2: "On H100 the MIG
    /// enablement is controlled by driver and it's all gone by the time [...] GPU resets".
    pub fn reboot_default(self) -> MigModeAtBoot {
        match self {
            Self::Reset => MigModeAtBoot::Kept,
            Self::Immediate => MigModeAtBoot::Disabled,
        }
    }
}

/// What a reboot leaves of a part's MIG mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MigModeAtBoot {
    /// The mode survives (the pending one, completed by the reboot's reset): Ampere.
    Kept,
    /// MIG is off after the reboot: Hopper and later.
    Disabled,
}

/// A process holding the card.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Client {
    /// Its pid.
    pub pid: u32,
    /// Its name, as `nvmlSystemGetProcessName` answers.
    pub name: String,
}

/// MIG mode, or not supported: `{"current": 1, "pending": 0}` or `"not_supported"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "serde_json::Value")]
#[non_exhaustive]
pub enum MigMode {
    /// The modes (1 = enabled).
    Mode {
        /// The mode now.
        current: u32,
        /// The mode after the next reset.
        pending: u32,
    },
    /// The card has no MIG: `NVML_ERROR_NOT_SUPPORTED`.
    NotSupported,
}

/// A `mig_mode` that is neither `{"current": N, "pending": N}` nor `"not_supported"`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("mig_mode must be {{\"current\": N, \"pending\": N}} or \"not_supported\", not {value}")]
#[non_exhaustive]
pub struct BadMigMode {
    /// What was read.
    pub value: serde_json::Value,
}

impl TryFrom<serde_json::Value> for MigMode {
    type Error = BadMigMode;

    fn try_from(value: serde_json::Value) -> Result<Self, BadMigMode> {
        let number = |key: &str| {
            value
                .get(key)
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        match (&value, number("current"), number("pending")) {
            (serde_json::Value::String(text), _, _) if text == "not_supported" => {
                Ok(Self::NotSupported)
            }
            (serde_json::Value::Object(_), Some(current), Some(pending)) => {
                Ok(Self::Mode { current, pending })
            }
            _ => Err(BadMigMode { value }),
        }
    }
}

impl Serialize for MigMode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Mode { current, pending } => {
                serde_json::json!({"current": current, "pending": pending}).serialize(serializer)
            }
            Self::NotSupported => serializer.serialize_str("not_supported"),
        }
    }
}

/// A GPU-instance profile.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct Profile {
    /// The index `nvmlDeviceGetGpuInstanceProfileInfo*` takes.
    pub index: u32,
    /// The ID every other call takes.
    pub id: u32,
    pub name: String,
    pub slice_count: u32,
    pub instance_count: u32,
    pub multiprocessor_count: u32,
    pub copy_engine_count: u32,
    pub decoder_count: u32,
    pub encoder_count: u32,
    pub jpeg_count: u32,
    pub ofa_count: u32,
    pub memory_size_mb: u64,
    pub p2p: bool,
    pub gfx: bool,
    /// `nvmlDeviceGetGpuInstancePossiblePlacements_v2`: where its instances may go.
    #[serde(default)]
    pub placements: Vec<Placement>,
    /// The compute instance profile IDs a GPU instance of it offers; absent: NVML's by slice
    /// count (1c up to the profile's own slices; a 4-slice profile offers no 3-slice compute
    /// instance, as on an A100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_profiles: Option<Vec<u32>>,
}

/// A placement (`start`, `size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct Placement {
    pub start: u32,
    pub size: u32,
}

/// A GPU instance.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct GpuInstance {
    pub id: u32,
    /// A profile ID (not an index).
    pub profile_id: u32,
    pub placement: Placement,
    #[serde(default)]
    pub compute_instances: Vec<ComputeInstance>,
}

/// A compute instance.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct ComputeInstance {
    pub id: u32,
    pub profile_id: u32,
    pub placement: Placement,
}

/// A vGPU type of a card's catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct VgpuType {
    /// The NVML vGPU type ID (the `N` of the mdev type `nvidia-N`).
    pub id: u32,
    /// `nvmlVgpuTypeGetName`: the name as NVML answers it (`GRID A100-1-5C`).
    pub name: String,
    /// `nvmlVgpuTypeGetClass` (`Compute`, `Quadro`); absent: not published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The ID of the GPU-instance profile a vGPU of it takes; `None`: time-sliced.
    pub gpu_instance_profile_id: Option<u32>,
    /// `nvmlVgpuTypeGetFramebufferSize`, in MiB (NVML answers bytes).
    pub framebuffer_mib: u64,
    /// `nvmlVgpuTypeGetMaxInstances`: how many vGPUs of it one GPU holds.
    pub max_instances: u32,
    /// `nvmlVgpuTypeGetMaxInstancesPerGpuInstance`; absent: not published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_instances_per_gpu_instance: Option<u32>,
}

/// A card's SR-IOV virtual functions, as the vGPU manager keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Sriov {
    /// `sriov_totalvfs`: how many VFs the card has (`sriov-manage -e` enables them all).
    pub total_vfs: u32,
    /// The VFs enabled, by number (`virtfn<N>`); empty: VFs disabled.
    #[serde(default)]
    pub vfs: Vec<VirtualFunction>,
    /// How many of the next `sriov-manage -e` runs fail as at boot, while the vGPU manager is
    /// starting (exit 1 after awk's `File exists`: the journal of stackhpc's
    /// ansible-collection-linux PR 37); each failure counts one down.
    #[serde(default, skip_serializing_if = "none_left")]
    pub enable_failures: u32,
    /// How many of the next `sriov-manage -e` runs exit 0 and enable nothing (vGPU 17.2:
    /// NVIDIA/gpu-driver-container PR 29); each counts one down.
    #[serde(default, skip_serializing_if = "none_left")]
    pub silent_enable_failures: u32,
}

fn none_left(count: &u32) -> bool {
    *count == 0
}

/// One enabled VF: the vGPU written to it, and where the driver placed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct VirtualFunction {
    /// The vGPU type written to `current_vgpu_type`; `None`: `0`, no vGPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_id: Option<u32>,
    /// The GPU instance a MIG-backed vGPU sits on (`gpu_instance_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    /// Its place inside that GPU instance (`placement_id`: the count of vGPUs before it there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_id: Option<u32>,
}

/// An active vGPU.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
#[allow(missing_docs)]
pub struct Vgpu {
    pub uuid: String,
    #[serde(rename = "type")]
    pub vgpu_type: String,
    pub type_id: u32,
    /// `None`: time-sliced on the whole card (`INVALID_GPU_INSTANCE_ID`).
    pub gpu_instance_id: Option<u32>,
    /// The VM's UUID; `None` answers `NVML_ERROR_NOT_FOUND`.
    pub vm: Option<String>,
}

impl Scenario {
    /// The device at `bus_id` (either form NVML knows).
    pub fn device_at(&self, bus_id: &str) -> Option<&Device> {
        let wanted = parse_bus_id(bus_id)?;
        self.devices
            .iter()
            .find(|device| parse_bus_id(&device.pci_bus_id) == Some(wanted))
    }

    /// The device at `bus_id` (either form NVML knows), to change.
    pub fn device_at_mut(&mut self, bus_id: &str) -> Option<&mut Device> {
        let wanted = parse_bus_id(bus_id)?;
        self.devices
            .iter_mut()
            .find(|device| parse_bus_id(&device.pci_bus_id) == Some(wanted))
    }
}
