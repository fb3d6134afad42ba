//! GPU instances: which placements are free, how many more fit, and how one is created or
//! destroyed.

use super::device::{
    Code, IN_USE, INSUFFICIENT, INVALID, NOT_SUPPORTED, check_no_clients, gpu_instance, mig_on,
    most_disjoint, next_id, overlaps, profile,
};
use crate::scenario::{Device, GpuInstance, Placement, Profile};

/// The profile's placements that no GPU instance overlaps now.
pub fn free_placements(device: &Device, profile: &Profile) -> Vec<Placement> {
    profile
        .placements
        .iter()
        .copied()
        .filter(|p| {
            !device
                .gpu_instances
                .iter()
                .any(|gi| overlaps(*p, gi.placement))
        })
        .collect()
}

/// `nvmlDeviceGetGpuInstanceRemainingCapacity`: how many more instances of the profile fit,
/// computed from what is placed — the profile's instance count less those it has, and no more
/// than its free placements can hold at once. A profile the scenario gives no placements is
/// bounded by its count alone.
pub fn remaining(device: &Device, profile: &Profile) -> u32 {
    let existing = device
        .gpu_instances
        .iter()
        .filter(|gi| gi.profile_id == profile.id)
        .count();
    let by_count = profile
        .instance_count
        .saturating_sub(u32::try_from(existing).unwrap_or(u32::MAX));
    if profile.placements.is_empty() {
        return by_count;
    }
    by_count.min(most_disjoint(free_placements(device, profile)))
}

/// `nvmlDeviceCreateGpuInstanceWithPlacement`: MIG off (or a profile the card has not) is
/// refused; the placement must be one of the profile's and overlap no instance; the profile's
/// instance count bounds it. Answers the new instance's ID.
pub fn create_gpu_instance(
    device: &mut Device,
    profile_id: u32,
    placement: Placement,
) -> Result<u32, Code> {
    if !mig_on(device) {
        return Err(NOT_SUPPORTED);
    }
    let profile = profile(device, profile_id)?;
    if !profile.placements.contains(&placement) {
        return Err(INVALID);
    }
    if remaining(device, profile) == 0
        || device
            .gpu_instances
            .iter()
            .any(|gi| overlaps(gi.placement, placement))
    {
        return Err(INSUFFICIENT);
    }
    if !engines_left(device, profile) {
        return Err(INSUFFICIENT);
    }
    let id = next_id(1, device.gpu_instances.iter().map(|gi| gi.id));
    device.gpu_instances.push(GpuInstance {
        id,
        profile_id,
        placement,
        compute_instances: Vec::new(),
    });
    Ok(id)
}

/// Whether the card's media engines leave room for one more instance of `profile`: the GPU
/// instances together hold no more NVDECs, JPEG decoders or OFAs than the card has — those of
/// the profile that takes the whole card (NVIDIA's MIG user guide: a part with one JPEG and one
/// OFA, as the A30, holds "a single" `+me` instance). A card whose scenario lacks the
/// whole-card profile (its numbers unpublished) bounds nothing.
fn engines_left(device: &Device, profile: &Profile) -> bool {
    type Engine = fn(&Profile) -> u32;
    let end = |p: &Profile| {
        p.placements
            .iter()
            .map(|at| at.start + at.size)
            .max()
            .unwrap_or(0)
    };
    let slots = device
        .gpu_instance_profiles
        .iter()
        .map(end)
        .max()
        .unwrap_or(0);
    let Some(whole) = device.gpu_instance_profiles.iter().find(|p| {
        p.placements.len() == 1
            && p.placements[0].start == 0
            && p.placements[0].size == slots
            && slots > 0
    }) else {
        return true;
    };
    let used = |engine: Engine| -> u32 {
        device
            .gpu_instances
            .iter()
            .filter_map(|gi| {
                device
                    .gpu_instance_profiles
                    .iter()
                    .find(|p| p.id == gi.profile_id)
            })
            .map(engine)
            .sum()
    };
    let engines: [Engine; 3] = [|p| p.decoder_count, |p| p.jpeg_count, |p| p.ofa_count];
    engines
        .iter()
        .all(|engine| used(*engine) + engine(profile) <= engine(whole))
}

/// `nvmlDeviceCreateGpuInstance`: a GPU instance of the profile where the driver chooses. NVIDIA
/// does not publish the driver's choice; the fake takes the free possible placement of lowest
/// start, as the driver did in the published runs it was checked against (two `3g.20gb` on an
/// A100: the first at `0:4`, the second at `4:4`). Answers the new instance's ID.
pub fn create_gpu_instance_anywhere(device: &mut Device, profile_id: u32) -> Result<u32, Code> {
    if !mig_on(device) {
        return Err(NOT_SUPPORTED);
    }
    let profile = profile(device, profile_id)?;
    let mut free = free_placements(device, profile);
    free.sort_by_key(|p| p.start);
    let Some(first) = free.first().copied() else {
        return Err(INSUFFICIENT);
    };
    create_gpu_instance(device, profile_id, first)
}

/// `nvmlGpuInstanceDestroy`: refused (`NVML_ERROR_IN_USE`) while it has compute instances or
/// a vGPU placed on it, or while the device has clients. A vGPU written to a VF's
/// `current_vgpu_type` is placed on its GPU instance as an active one is, so it holds the GPU
/// instance the same way (no published capture shows this refusal for a VF's vGPU; the fake
/// keeps the one rule for both).
pub fn destroy_gpu_instance(device: &mut Device, gpu_instance_id: u32) -> Result<(), Code> {
    check_no_clients(device)?;
    let gi = gpu_instance(device, gpu_instance_id)?;
    let vgpu_on_it = super::vgpu::placed_vgpus(device)
        .iter()
        .any(|(_, on)| *on == Some(gpu_instance_id));
    if !gi.compute_instances.is_empty() || vgpu_on_it {
        return Err(IN_USE);
    }
    device.gpu_instances.retain(|gi| gi.id != gpu_instance_id);
    Ok(())
}
