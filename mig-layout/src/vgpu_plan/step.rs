//! One step of a vGPU plan ([`VgpuStep`]), as data and as a line for people.

use crate::Spec;
use crate::vgpu::VgpuTypeName;
use gpu_partition_types::VgpuTypeId;

/// One step of a vGPU plan, in the order it is taken.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VgpuStep {
    /// `sriov-manage -d <GPU>`: the VFs disabled (and the GPU instances with them).
    DisableVfs,
    /// MIG mode on or off (by the MIG executor).
    MigMode(bool),
    /// `sriov-manage -e <GPU>`: every VF the GPU can have enabled; no GPU instance is left.
    EnableVfs,
    /// Heterogeneous vGPU mode on (`nvidia-smi vgpu -shm 1`): after the VFs, before any type.
    Heterogeneous,
    /// The MIG layout the types need (by the MIG executor, by diff: zero writes where held).
    GpuInstances(Spec),
    /// `0` written to `virtfn<index>/nvidia/current_vgpu_type`: its type taken off.
    ClearType {
        /// The VF's number.
        index: u32,
    },
    /// The type's ID written to `virtfn<index>/nvidia/current_vgpu_type`.
    WriteType {
        /// The VF's number (`virtfn<index>`; VFs this plan enables have no address yet).
        index: u32,
        /// The type.
        name: VgpuTypeName,
        /// Its ID, from the catalogue (never 0: a write of 0 is a clear, `ClearType`).
        id: VgpuTypeId,
    },
}

impl std::fmt::Display for VgpuStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DisableVfs => f.write_str(
                "sriov-manage -d: the virtual functions disabled (their GPU instances go with them)",
            ),
            Self::MigMode(true) => f.write_str("MIG mode on"),
            Self::MigMode(false) => f.write_str("MIG mode off"),
            Self::EnableVfs => f.write_str("sriov-manage -e: every virtual function enabled"),
            Self::Heterogeneous => f.write_str("heterogeneous vGPU mode on"),
            Self::GpuInstances(layout) => {
                let listed: Vec<String> = layout
                    .mig_devices
                    .iter()
                    .map(|(profile, count)| format!("{count} x {profile}"))
                    .collect();
                write!(f, "the GPU instances the vGPUs need: {}", listed.join(", "))
            }
            Self::ClearType { index } => write!(f, "virtual function {index}: its vGPU type cleared"),
            Self::WriteType { index, name, id } => {
                write!(f, "virtual function {index}: vGPU type {name} ({id})")
            }
        }
    }
}

/// A step as `--json` shows it: `{"step": "write_type", "virtual_function": 0, "type":
/// "A100-1-5C", "type_id": 474}`, `{"step": "mig_mode", "enabled": true}`, `{"step":
/// "gpu_instances", "mig_devices": {"1g.5gb": 7}}`, `{"step": "enable_vfs"}`.
impl serde::Serialize for VgpuStep {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        match self {
            Self::DisableVfs => map.serialize_entry("step", "disable_vfs")?,
            Self::MigMode(enabled) => {
                map.serialize_entry("step", "mig_mode")?;
                map.serialize_entry("enabled", enabled)?;
            }
            Self::EnableVfs => map.serialize_entry("step", "enable_vfs")?,
            Self::Heterogeneous => map.serialize_entry("step", "heterogeneous_mode")?,
            Self::GpuInstances(layout) => {
                map.serialize_entry("step", "gpu_instances")?;
                let devices: std::collections::BTreeMap<String, u32> = layout
                    .mig_devices
                    .iter()
                    .map(|(profile, count)| (profile.to_string(), *count))
                    .collect();
                map.serialize_entry("mig_devices", &devices)?;
            }
            Self::ClearType { index } => {
                map.serialize_entry("step", "clear_type")?;
                map.serialize_entry("virtual_function", index)?;
            }
            Self::WriteType { index, name, id } => {
                map.serialize_entry("step", "write_type")?;
                map.serialize_entry("virtual_function", index)?;
                map.serialize_entry("type", &name.to_string())?;
                map.serialize_entry("type_id", id)?;
            }
        }
        map.end()
    }
}
