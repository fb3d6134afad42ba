//! GPU instances and their compute instances: listed, described, created and destroyed.

use crate::out::{c_array, stamped, write, write_found};
use crate::rules;
use crate::scenario::{GpuInstance, Placement, Profile, Scenario};
use crate::state::{
    self, Answer, INVALID, code, compute_instance, gpu_instance, gpu_instance_of, log, with,
};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::c_uint;

/// NVML's compute-instance profile struct `nvml::$kind` (either version: each names its counts
/// alike) of the compute profile `$id` of `$slices` compute slices in a GPU instance of the
/// profile `$gi_profile`, with the members only that version has.
macro_rules! compute_profile_info {
    (
        $kind:ident, $id:expr, $slices:expr,
        $gi_profile:ident { $($member:ident: $value:expr),* $(,)? }
    ) => {
        nvml::$kind {
            id: $id,
            sliceCount: $slices,
            instanceCount: $gi_profile.slice_count / $slices.max(1),
            multiprocessorCount: rules::compute_multiprocessors($gi_profile, $slices),
            sharedCopyEngineCount: $gi_profile.copy_engine_count,
            sharedDecoderCount: $gi_profile.decoder_count,
            sharedEncoderCount: $gi_profile.encoder_count,
            sharedJpegCount: $gi_profile.jpeg_count,
            sharedOfaCount: $gi_profile.ofa_count,
            $($member: $value,)*
        }
    };
}

/// The profile of the GPU instance `gi` on the card at `device`, and the compute slices of the
/// compute profile `compute_profile_id` in it ([`rules::compute_profile_slices`]).
fn compute_profile<'a>(
    s: &'a Scenario,
    device: usize,
    gi: &GpuInstance,
    compute_profile_id: u32,
) -> Answer<(&'a Profile, u32)> {
    let gi_profile = rules::profile(&s.devices[device], gi.profile_id)?;
    let slices = rules::compute_profile_slices(gi_profile, compute_profile_id)?;
    Ok((gi_profile, slices))
}

answered! {
    /// The GPU instance's ID, profile ID and placement.
    ///
    /// # Safety
    ///
    /// `info` is null or valid for a write.
    fn nvmlGpuInstanceGetInfo(
        handle: nvml::nvmlGpuInstance_t,
        info: *mut nvml::nvmlGpuInstanceInfo_t,
    ) logs("{:#x}", handle.addr()) |s| {
        let (device, gi) = gpu_instance(s, handle, CALL)?;
        let answer = nvml::nvmlGpuInstanceInfo_t {
            device: state::device_handle(device),
            id: gi.id,
            profileId: gi.profile_id,
            placement: nvml::nvmlGpuInstancePlacement_t {
                start: gi.placement.start,
                size: gi.placement.size,
            },
        };
        // SAFETY: passed on from this function's own contract.
        unsafe { write(info, answer) }
    }

    /// The compute-instance profile at index `profile` (NVML's `NVML_COMPUTE_INSTANCE_PROFILE_*`,
    /// whose ID is the index): one the GPU instance offers ([`rules::compute_profiles`]), else
    /// `NVML_ERROR_NOT_SUPPORTED`, and past the last index `NVML_ERROR_INVALID_ARGUMENT`.
    ///
    /// # Safety
    ///
    /// `info` is null or valid for a write.
    fn nvmlGpuInstanceGetComputeInstanceProfileInfo(
        handle: nvml::nvmlGpuInstance_t,
        profile: c_uint,
        _engine_profile: c_uint,
        info: *mut nvml::nvmlComputeInstanceProfileInfo_t,
    ) logs("{:#x} {}", handle.addr(), profile) |s| {
        let (device, gi) = gpu_instance(s, handle, CALL)?;
        let (gi_profile, slices) = compute_profile(s, device, gi, profile)?;
        let answer = compute_profile_info!(
            nvmlComputeInstanceProfileInfo_t,
            profile,
            slices,
            gi_profile {}
        );
        // SAFETY: passed on from this function's own contract.
        unsafe { write(info, answer) }
    }

    /// [`nvmlGpuInstanceGetComputeInstanceProfileInfo`] in the version-2 struct, with the profile's
    /// name (the caller stamps `version`; another stamp is `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`).
    ///
    /// # Safety
    ///
    /// `info` is null or valid for a read and a write of the v2 struct.
    fn nvmlGpuInstanceGetComputeInstanceProfileInfoV(
        handle: nvml::nvmlGpuInstance_t,
        profile: c_uint,
        _engine_profile: c_uint,
        info: *mut nvml::nvmlComputeInstanceProfileInfo_v2_t,
    ) logs("{:#x} {}", handle.addr(), profile) |s| {
        let (device, gi) = gpu_instance(s, handle, CALL)?;
        // SAFETY: passed on from this CALL's own contract.
        let stamp = unsafe { stamped(info, 2) }?;
        let (gi_profile, slices) = compute_profile(s, device, gi, profile)?;
        let name = c_array(&rules::compute_profile_name(gi_profile, slices));
        let answer = compute_profile_info!(
            nvmlComputeInstanceProfileInfo_v2_t,
            profile,
            slices,
            gi_profile {
                version: stamp,
                name: name,
            }
        );
        // SAFETY: passed on from this CALL's own contract.
        unsafe { write(info, answer) }
    }

    /// How many more compute instances of the profile with this ID fit in the GPU instance
    /// ([`rules::compute_remaining`]).
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a write.
    fn nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
        handle: nvml::nvmlGpuInstance_t,
        profile_id: c_uint,
        count: *mut c_uint,
    ) logs("{:#x} {}", handle.addr(), profile_id) |s| {
        let (device, gi) = gpu_instance(s, handle, CALL)?;
        let (gi_profile, slices) = compute_profile(s, device, gi, profile_id)?;
        // SAFETY: passed on from this CALL's own contract.
        unsafe { write(count, rules::compute_remaining(gi, gi_profile, slices)) }
    }

    /// Where compute instances of the profile with this ID may go in the GPU instance
    /// ([`rules::compute_placements`]); `*count` is the room in, the number out.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a read and a write; `placements` is null or valid for
    /// `*count` writes.
    fn nvmlGpuInstanceGetComputeInstancePossiblePlacements(
        handle: nvml::nvmlGpuInstance_t,
        profile_id: c_uint,
        placements: *mut nvml::nvmlComputeInstancePlacement_t,
        count: *mut c_uint,
    ) logs("{:#x} {}", handle.addr(), profile_id) |s| {
        let (device, gi) = gpu_instance(s, handle, CALL)?;
        let (gi_profile, slices) = compute_profile(s, device, gi, profile_id)?;
        let list: Vec<nvml::nvmlComputeInstancePlacement_t> =
            rules::compute_placements(gi_profile, slices)
                .into_iter()
                .map(|p| nvml::nvmlComputeInstancePlacement_t {
                    start: p.start,
                    size: p.size,
                })
                .collect();
        // SAFETY: passed on from this CALL's own contract.
        unsafe { crate::out::write_list(placements, count, &list) }
    }

    /// The compute instances of the GPU instance with this compute-instance profile ID.
    ///
    /// # Safety
    ///
    /// `instances` is null or has room for the profile's instance count; `count` is null or valid
    /// for a write.
    fn nvmlGpuInstanceGetComputeInstances(
        handle: nvml::nvmlGpuInstance_t,
        profile_id: c_uint,
        instances: *mut nvml::nvmlComputeInstance_t,
        count: *mut c_uint,
    ) logs("{:#x} {}", handle.addr(), profile_id) |s| {
        let (device, gi) = gpu_instance(s, handle, CALL)?;
        if profile_id >= rules::COMPUTE_PROFILE_COUNT {
            return Err(INVALID);
        }
        let found: Vec<nvml::nvmlComputeInstance_t> = gi
            .compute_instances
            .iter()
            .filter(|ci| ci.profile_id == profile_id)
            .map(|ci| state::compute_instance_handle(device, gi.id, ci.id))
            .collect();
        // SAFETY: passed on from this function's own contract.
        unsafe { write_found(instances, count, &found) }
    }

    /// The compute instance's ID, profile ID and placement.
    ///
    /// # Safety
    ///
    /// `info` is null or valid for a write.
    fn nvmlComputeInstanceGetInfo_v2(
        handle: nvml::nvmlComputeInstance_t,
        info: *mut nvml::nvmlComputeInstanceInfo_t,
    ) logs("{:#x}", handle.addr()) |s| {
        let (device, gi_id, ci_id) = compute_instance(s, handle, CALL)?;
        let compute = rules::gpu_instance(&s.devices[device], gi_id)?
            .compute_instances
            .iter()
            .find(|ci| ci.id == ci_id)
            .ok_or(INVALID)?;
        let answer = nvml::nvmlComputeInstanceInfo_t {
            device: state::device_handle(device),
            gpuInstance: state::gpu_instance_handle(device, gi_id),
            id: compute.id,
            profileId: compute.profile_id,
            placement: nvml::nvmlComputeInstancePlacement_t {
                start: compute.placement.start,
                size: compute.placement.size,
            },
        };
        // SAFETY: passed on from this function's own contract.
        unsafe { write(info, answer) }
    }
}

/// Creates a compute instance in the GPU instance ([`rules::create_compute_instance`]), placed
/// by `placement` or, when it is null, at the first free placement of its profile.
///
/// # Safety
///
/// `placement` is null or valid for a read; `instance` is null or valid for a write.
unsafe fn create_compute_instance(
    function: &str,
    handle: nvml::nvmlGpuInstance_t,
    profile_id: c_uint,
    placement: *const nvml::nvmlComputeInstancePlacement_t,
    instance: *mut nvml::nvmlComputeInstance_t,
) -> nvml::nvmlReturn_t {
    if instance.is_null() {
        return INVALID;
    }
    let asked = if placement.is_null() {
        None
    } else {
        // SAFETY: not null; valid for a read by the caller's contract.
        let asked = unsafe { placement.read() };
        Some(Placement {
            start: asked.start,
            size: asked.size,
        })
    };
    log(format_args!(
        "{function} {:#x} {profile_id}{}",
        handle.addr(),
        asked
            .map(|p| format!(" {}+{}", p.start, p.size))
            .unwrap_or_default()
    ));
    code(gpu_instance_of(handle).and_then(|(device, gi_id)| {
        let id = state::change(device, function, |card| {
            rules::create_compute_instance(card, gi_id, profile_id, asked)
        })?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(instance, state::compute_instance_handle(device, gi_id, id)) }
    }))
}

/// Creates a compute instance placed by NVML (the first free placement of its profile).
///
/// # Safety
///
/// `instance` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceCreateComputeInstance(
    handle: nvml::nvmlGpuInstance_t,
    profile_id: c_uint,
    instance: *mut nvml::nvmlComputeInstance_t,
) -> nvml::nvmlReturn_t {
    // SAFETY: passed on from this function's own contract (no placement).
    unsafe {
        create_compute_instance(
            "nvmlGpuInstanceCreateComputeInstance",
            handle,
            profile_id,
            std::ptr::null(),
            instance,
        )
    }
}

/// Creates a compute instance at `placement` (compute slices within the GPU instance).
///
/// # Safety
///
/// `placement` is null or valid for a read; `instance` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    handle: nvml::nvmlGpuInstance_t,
    profile_id: c_uint,
    placement: *const nvml::nvmlComputeInstancePlacement_t,
    instance: *mut nvml::nvmlComputeInstance_t,
) -> nvml::nvmlReturn_t {
    if placement.is_null() {
        return INVALID;
    }
    // SAFETY: passed on from this function's own contract.
    unsafe {
        create_compute_instance(
            "nvmlGpuInstanceCreateComputeInstanceWithPlacement",
            handle,
            profile_id,
            placement,
            instance,
        )
    }
}

/// Destroys a compute instance ([`rules::destroy_compute_instance`]).
#[unsafe(no_mangle)]
pub extern "C" fn nvmlComputeInstanceDestroy(
    handle: nvml::nvmlComputeInstance_t,
) -> nvml::nvmlReturn_t {
    log(format_args!(
        "nvmlComputeInstanceDestroy {:#x}",
        handle.addr()
    ));
    let function = "nvmlComputeInstanceDestroy";
    code(
        with(|s| compute_instance(s, handle, function)).and_then(|(device, gi_id, ci_id)| {
            state::change(device, function, |card| {
                rules::destroy_compute_instance(card, gi_id, ci_id)
            })
        }),
    )
}

/// Destroys a GPU instance ([`rules::destroy_gpu_instance`]).
#[unsafe(no_mangle)]
pub extern "C" fn nvmlGpuInstanceDestroy(handle: nvml::nvmlGpuInstance_t) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlGpuInstanceDestroy {:#x}", handle.addr()));
    let function = "nvmlGpuInstanceDestroy";
    code(
        with(|s| gpu_instance(s, handle, function).map(|(device, gi)| (device, gi.id))).and_then(
            |(device, gi_id)| {
                state::change(device, function, |card| {
                    rules::destroy_gpu_instance(card, gi_id)
                })
            },
        ),
    )
}

answered! {
    /// The compute instance with this ID in the GPU instance; `NVML_ERROR_NOT_FOUND` for none.
    ///
    /// # Safety
    ///
    /// `instance` is null or valid for a write.
    fn nvmlGpuInstanceGetComputeInstanceById(
        handle: nvml::nvmlGpuInstance_t,
        id: c_uint,
        instance: *mut nvml::nvmlComputeInstance_t,
    ) logs("{:#x} {}", handle.addr(), id) |s| {
        let (device, gi) = gpu_instance(s, handle, CALL)?;
        gi.compute_instances
            .iter()
            .find(|ci| ci.id == id)
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(instance, state::compute_instance_handle(device, gi.id, id)) }
    }
}
