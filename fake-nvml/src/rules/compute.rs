//! Compute instances: the compute profiles a GPU instance offers, their placements and what is
//! left, and how one is created or destroyed.

use super::device::{
    Code, INSUFFICIENT, INVALID, NOT_FOUND, NOT_SUPPORTED, check_no_clients, gpu_instance, mig_on,
    most_disjoint, next_id, overlaps, profile,
};
use crate::scenario::{ComputeInstance, Device, GpuInstance, Placement, Profile};

/// Compute instance profile IDs by their slice count (NVML's `NVML_COMPUTE_INSTANCE_PROFILE_*`):
/// 1 → 0, 2 → 1, 3 → 2, 4 → 3, 7 → 4, 8 → 5, 6 → 6. IDs 7 and 8 are the `REV1` and `NVL`
/// variants, which the cards modelled here do not offer.
pub const COMPUTE_PROFILE_SLICES: [(u32, u32); 7] =
    [(0, 1), (1, 2), (2, 3), (3, 4), (4, 7), (5, 8), (6, 6)];

/// How many compute instance profile indices NVML's headers define (0 to 8).
pub const COMPUTE_PROFILE_COUNT: u32 = 9;

/// The compute instance profiles a GPU instance of `profile` offers, as (ID, slices): those the
/// scenario lists for it, else NVML's by slice count (1c to the GPU instance's own slices;
/// a 4-slice instance offers no 3-slice compute instance, as on an A100).
pub fn compute_profiles(profile: &Profile) -> Vec<(u32, u32)> {
    let slices_of = |id: u32| {
        COMPUTE_PROFILE_SLICES
            .iter()
            .find(|(known, _)| *known == id)
            .map(|(_, slices)| *slices)
    };
    match &profile.compute_profiles {
        Some(ids) => ids
            .iter()
            .filter_map(|id| slices_of(*id).map(|slices| (*id, slices)))
            .collect(),
        None => COMPUTE_PROFILE_SLICES
            .iter()
            .copied()
            .filter(|(_, slices)| {
                *slices <= profile.slice_count && !(profile.slice_count == 4 && *slices == 3)
            })
            .filter(|(_, slices)| *slices != 6 && *slices != 8 || *slices == profile.slice_count)
            .collect(),
    }
}

/// The slices of a compute instance profile inside a GPU instance of `profile`; `Err` with
/// NVML's answer when the GPU instance does not offer it.
pub fn compute_profile_slices(profile: &Profile, compute_profile: u32) -> Result<u32, Code> {
    if compute_profile >= COMPUTE_PROFILE_COUNT {
        return Err(INVALID);
    }
    compute_profiles(profile)
        .into_iter()
        .find(|(id, _)| *id == compute_profile)
        .map(|(_, slices)| slices)
        .ok_or(NOT_SUPPORTED)
}

/// Where a compute instance of `slices` may go in a GPU instance of `profile` (in compute
/// slices): on each multiple of its size that fits, as NVML lists them
/// (`nvmlGpuInstanceGetComputeInstancePossiblePlacements`).
pub fn compute_placements(profile: &Profile, slices: u32) -> Vec<Placement> {
    let room = profile.slice_count;
    (0..room)
        .step_by(usize::try_from(slices.max(1)).unwrap_or(1))
        .map(|start| Placement {
            start,
            size: slices,
        })
        .filter(|p| p.start.saturating_add(p.size) <= room)
        .collect()
}

/// How many more compute instances of `slices` fit in `gi` (of `profile`): its possible
/// placements that no compute instance overlaps, taken greedily.
pub fn compute_remaining(gi: &GpuInstance, profile: &Profile, slices: u32) -> u32 {
    let free: Vec<Placement> = compute_placements(profile, slices)
        .into_iter()
        .filter(|p| {
            !gi.compute_instances
                .iter()
                .any(|ci| overlaps(ci.placement, *p))
        })
        .collect();
    most_disjoint(free)
}

/// The SMs of a compute instance of `slices` in a GPU instance of `profile`: its share of the
/// GPU instance's, as the A100's published `nvidia-smi mig -lcip` shows (14 of the 42 SMs of a
/// `3g.20gb` for `1c.3g.20gb`, 28 for `2c.3g.20gb`).
pub fn compute_multiprocessors(profile: &Profile, slices: u32) -> u32 {
    profile.multiprocessor_count.saturating_mul(slices) / profile.slice_count.max(1)
}

/// The name of a compute instance profile of `slices` in a GPU instance of `profile`: the GPU
/// instance's own when it fills it (`3g.20gb`), else with its slices before it
/// (`1c.3g.20gb`), as `nvidia-smi mig -lcip` prints them.
pub fn compute_profile_name(profile: &Profile, slices: u32) -> String {
    if slices == profile.slice_count {
        profile.name.clone()
    } else {
        format!("{slices}c.{}", profile.name)
    }
}

/// `nvmlGpuInstanceCreateComputeInstance(WithPlacement)`: the profile must be one the GPU
/// instance offers; the placement (in compute slices) must lie on a multiple of its size within
/// the GPU instance and overlap no compute instance; without one, the first free such placement
/// is taken. Answers the new compute instance's ID.
pub fn create_compute_instance(
    device: &mut Device,
    gpu_instance_id: u32,
    compute_profile: u32,
    placement: Option<Placement>,
) -> Result<u32, Code> {
    if !mig_on(device) {
        return Err(NOT_SUPPORTED);
    }
    let gi = gpu_instance(device, gpu_instance_id)?;
    let gi_profile = profile(device, gi.profile_id)?;
    let slices = compute_profile_slices(gi_profile, compute_profile)?;
    let possible = compute_placements(gi_profile, slices);
    let free = |p: &Placement| {
        !gi.compute_instances
            .iter()
            .any(|ci| overlaps(ci.placement, *p))
    };
    let chosen = match placement {
        Some(asked) if !possible.contains(&asked) => return Err(INVALID),
        Some(asked) if !free(&asked) => return Err(INSUFFICIENT),
        Some(asked) => asked,
        None => possible.into_iter().find(free).ok_or(INSUFFICIENT)?,
    };
    let id = next_id(0, gi.compute_instances.iter().map(|ci| ci.id));
    let Some(gi) = device
        .gpu_instances
        .iter_mut()
        .find(|gi| gi.id == gpu_instance_id)
    else {
        return Err(NOT_FOUND);
    };
    gi.compute_instances.push(ComputeInstance {
        id,
        profile_id: compute_profile,
        placement: chosen,
    });
    Ok(id)
}

/// `nvmlComputeInstanceDestroy`.
pub fn destroy_compute_instance(
    device: &mut Device,
    gpu_instance_id: u32,
    compute_instance_id: u32,
) -> Result<(), Code> {
    check_no_clients(device)?;
    let gi = device
        .gpu_instances
        .iter_mut()
        .find(|gi| gi.id == gpu_instance_id)
        .ok_or(NOT_FOUND)?;
    let before = gi.compute_instances.len();
    gi.compute_instances
        .retain(|ci| ci.id != compute_instance_id);
    if gi.compute_instances.len() == before {
        return Err(NOT_FOUND);
    }
    Ok(())
}
