//! What every rule reads of a device: NVML's error codes, whether MIG is on, its profiles, GPU
//! instances and clients, and what placements overlap.

use crate::scenario::{Client, Device, GpuInstance, MigMode, Placement, Profile};
use nvml_wrapper_sys::bindings as nvml;

/// An NVML error code.
pub type Code = nvml::nvmlReturn_t;

pub(super) const NOT_SUPPORTED: Code = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
pub(super) const INVALID: Code = nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
pub(super) const INSUFFICIENT: Code = nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES;
pub(super) const IN_USE: Code = nvml::nvmlReturn_enum_NVML_ERROR_IN_USE;
pub(super) const NOT_FOUND: Code = nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND;

pub(crate) fn overlaps(a: Placement, b: Placement) -> bool {
    a.start < b.start.saturating_add(b.size) && b.start < a.start.saturating_add(a.size)
}

/// Whether MIG is on now.
pub fn mig_on(device: &Device) -> bool {
    matches!(device.mig_mode, MigMode::Mode { current: 1, .. })
}

/// The profile with this ID.
pub fn profile(device: &Device, id: u32) -> Result<&Profile, Code> {
    device
        .gpu_instance_profiles
        .iter()
        .find(|profile| profile.id == id)
        .ok_or(INVALID)
}

/// The GPU instance with this ID.
pub fn gpu_instance(device: &Device, id: u32) -> Result<&GpuInstance, Code> {
    device
        .gpu_instances
        .iter()
        .find(|gi| gi.id == id)
        .ok_or(NOT_FOUND)
}

/// The lowest ID from `first` that `taken` does not hold.
pub(super) fn next_id(first: u32, taken: impl Iterator<Item = u32> + Clone) -> u32 {
    (first..)
        .find(|id| !taken.clone().any(|t| t == *id))
        .unwrap_or(u32::MAX)
}

/// A device with clients refuses every destroy (`NVML_ERROR_IN_USE`): processes, or a
/// monitoring daemon holding handles.
pub(super) fn check_no_clients(device: &Device) -> Result<(), Code> {
    if device.clients.is_empty() {
        Ok(())
    } else {
        Err(IN_USE)
    }
}

/// The device's clients, as NVML lists running processes.
pub fn clients(device: &Device) -> &[Client] {
    &device.clients
}

/// The most intervals of `free` that fit together (interval scheduling: by end, greedily).
pub(super) fn most_disjoint(mut free: Vec<Placement>) -> u32 {
    free.sort_by_key(|p| p.start.saturating_add(p.size));
    let mut taken: Vec<Placement> = Vec::new();
    for placement in free {
        if !taken.iter().any(|t| overlaps(*t, placement)) {
            taken.push(placement);
        }
    }
    u32::try_from(taken.len()).unwrap_or(u32::MAX)
}
