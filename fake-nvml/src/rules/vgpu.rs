//! Which vGPU types a card can create now, and the GPU instance a MIG-backed vGPU lands on.

use super::device::{Code, NOT_SUPPORTED, mig_on};
use crate::scenario::{Device, GpuInstance};

/// `nvmlDeviceGetCreatableVgpus`: the IDs of the catalogue's types a vGPU of which the card
/// can take now, in catalogue order.
///
/// - MIG off: the time-sliced types. Once vGPUs exist, only their type, while fewer than its
///   `max_instances` exist: the homogeneous rule of `_kvgpumgrCheckVgpuTypeSupported` and
///   `kvgpumgrCheckVgpuTypeCreatable` in NVIDIA/open-gpu-kernel-modules
///   (`src/nvidia/src/kernel/virtualization/kernel_vgpu_mgr.c`: no vGPU, every type; else the
///   type must be among those the existing vGPUs leave, and their count below its
///   `maxInstance`), and nvml.h's note that where one type runs at a time the list is that
///   type's.
/// - MIG on: the MIG-backed types with a GPU instance of their profile that can take one more
///   vGPU ([`gpu_instance_for`]).
/// - The vGPUs counted are the card's active ones and those written to its VFs
///   ([`sriov`](super::sriov)).
/// - Heterogeneous mode on: the kernel then skips the maximum and decides by placement, which
///   the fake does not model: `NVML_ERROR_NOT_SUPPORTED`.
pub fn creatable_vgpu_types(device: &Device) -> Result<Vec<u32>, Code> {
    if device.vgpu_heterogeneous_mode == Some(true) && !mig_on(device) {
        return Err(NOT_SUPPORTED);
    }
    Ok(creatable_ids(device))
}

/// Every vGPU on the card: (type ID, GPU instance), the active ones and those on its VFs.
pub(crate) fn placed_vgpus(device: &Device) -> Vec<(u32, Option<u32>)> {
    let on_vfs = device
        .sriov
        .iter()
        .flat_map(|sriov| &sriov.vfs)
        .filter_map(|vf| vf.type_id.map(|id| (id, vf.gpu_instance_id)));
    device
        .vgpus
        .iter()
        .map(|vgpu| (vgpu.type_id, vgpu.gpu_instance_id))
        .chain(on_vfs)
        .collect()
}

/// The types the card can create now, by [`creatable_vgpu_types`]'s rules (heterogeneous mode
/// with MIG off: none, as it is not modelled).
pub(crate) fn creatable_ids(device: &Device) -> Vec<u32> {
    if mig_on(device) {
        return device
            .vgpu_types
            .iter()
            .filter(|kind| kind.gpu_instance_profile_id.is_some())
            .filter(|kind| gpu_instance_for(device, kind.id).is_some())
            .map(|kind| kind.id)
            .collect();
    }
    if device.vgpu_heterogeneous_mode == Some(true) {
        return Vec::new();
    }
    let placed = placed_vgpus(device);
    let time_sliced = device
        .vgpu_types
        .iter()
        .filter(|t| t.gpu_instance_profile_id.is_none());
    let Some((running, _)) = placed.first() else {
        return time_sliced.map(|t| t.id).collect();
    };
    let existing = placed.len();
    time_sliced
        .filter(|t| {
            t.id == *running && usize::try_from(t.max_instances).is_ok_and(|max| existing < max)
        })
        .map(|t| t.id)
        .collect()
}

/// The GPU instance a vGPU of type `id` would be placed on now, with how many vGPUs it holds
/// already: the first (by ID) of the type's profile that holds only vGPUs of this type, fewer
/// than its "max instances per GPU instance" (1 where the scenario does not give it). `None`:
/// a time-sliced type, an unknown one, or no GPU instance fits.
pub(crate) fn gpu_instance_for(device: &Device, id: u32) -> Option<(u32, u32)> {
    let kind = device.vgpu_types.iter().find(|kind| kind.id == id)?;
    let profile = kind.gpu_instance_profile_id?;
    let most = kind.max_instances_per_gpu_instance.unwrap_or(1);
    let placed = placed_vgpus(device);
    let mut instances: Vec<&GpuInstance> = device
        .gpu_instances
        .iter()
        .filter(|gi| gi.profile_id == profile)
        .collect();
    instances.sort_by_key(|gi| gi.id);
    instances.into_iter().find_map(|gi| {
        let on: Vec<u32> = placed
            .iter()
            .filter(|(_, at)| *at == Some(gi.id))
            .map(|(kind, _)| *kind)
            .collect();
        let count = u32::try_from(on.len()).ok()?;
        (count < most && on.iter().all(|kind| *kind == id)).then_some((gi.id, count))
    })
}
