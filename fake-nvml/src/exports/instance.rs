//! GPU instances and their compute instances.

use crate::out::{write, write_found};
use crate::state::{self, INVALID, code, compute_instance, gpu_instance, log, with};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::c_uint;

/// Compute-instance profiles answer for indices 0 to 8, with ID = index.
const COMPUTE_PROFILES: u32 = 9;

/// The GPU instance's ID, profile ID and placement.
///
/// # Safety
///
/// `info` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetInfo(
    handle: nvml::nvmlGpuInstance_t,
    info: *mut nvml::nvmlGpuInstanceInfo_t,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlGpuInstanceGetInfo {:#x}", handle.addr()));
    code(with(|s| {
        let (device, _, gi) = gpu_instance(s, handle, "nvmlGpuInstanceGetInfo")?;
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
    }))
}

/// The compute-instance profile at index `profile` (0 to 8, ID = index; past 8,
/// `NVML_ERROR_INVALID_ARGUMENT`).
///
/// # Safety
///
/// `info` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstanceProfileInfo(
    handle: nvml::nvmlGpuInstance_t,
    profile: c_uint,
    _engine_profile: c_uint,
    info: *mut nvml::nvmlComputeInstanceProfileInfo_t,
) -> nvml::nvmlReturn_t {
    log(format_args!(
        "nvmlGpuInstanceGetComputeInstanceProfileInfo {:#x} {profile}",
        handle.addr()
    ));
    code(with(|s| {
        gpu_instance(s, handle, "nvmlGpuInstanceGetComputeInstanceProfileInfo")?;
        if profile >= COMPUTE_PROFILES {
            return Err(INVALID);
        }
        let answer = nvml::nvmlComputeInstanceProfileInfo_t {
            id: profile,
            sliceCount: profile + 1,
            instanceCount: 1,
            multiprocessorCount: 14 * (profile + 1),
            sharedCopyEngineCount: 1,
            sharedDecoderCount: 0,
            sharedEncoderCount: 0,
            sharedJpegCount: 0,
            sharedOfaCount: 0,
        };
        // SAFETY: passed on from this function's own contract.
        unsafe { write(info, answer) }
    }))
}

/// The compute instances of the GPU instance with this compute-instance profile ID.
///
/// # Safety
///
/// `instances` is null or has room for the profile's instance count; `count` is null or valid
/// for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstances(
    handle: nvml::nvmlGpuInstance_t,
    profile_id: c_uint,
    instances: *mut nvml::nvmlComputeInstance_t,
    count: *mut c_uint,
) -> nvml::nvmlReturn_t {
    log(format_args!(
        "nvmlGpuInstanceGetComputeInstances {:#x} {profile_id}",
        handle.addr()
    ));
    code(with(|s| {
        let (device, at, gi) = gpu_instance(s, handle, "nvmlGpuInstanceGetComputeInstances")?;
        if profile_id >= COMPUTE_PROFILES {
            return Err(INVALID);
        }
        let found: Vec<nvml::nvmlComputeInstance_t> = gi
            .compute_instances
            .iter()
            .enumerate()
            .filter(|(_, ci)| ci.profile_id == profile_id)
            .map(|(ci, _)| state::compute_instance_handle(device, at, ci))
            .collect();
        // SAFETY: passed on from this function's own contract.
        unsafe { write_found(instances, count, &found) }
    }))
}

/// The compute instance's ID, profile ID and placement.
///
/// # Safety
///
/// `info` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlComputeInstanceGetInfo_v2(
    handle: nvml::nvmlComputeInstance_t,
    info: *mut nvml::nvmlComputeInstanceInfo_t,
) -> nvml::nvmlReturn_t {
    log(format_args!(
        "nvmlComputeInstanceGetInfo_v2 {:#x}",
        handle.addr()
    ));
    code(with(|s| {
        let (device, at, ci) = compute_instance(s, handle, "nvmlComputeInstanceGetInfo_v2")?;
        let compute = &s.devices[device].gpu_instances[at].compute_instances[ci];
        let answer = nvml::nvmlComputeInstanceInfo_t {
            device: state::device_handle(device),
            gpuInstance: state::gpu_instance_handle(device, at),
            id: compute.id,
            profileId: compute.profile_id,
            placement: nvml::nvmlComputeInstancePlacement_t {
                start: compute.placement.start,
                size: compute.placement.size,
            },
        };
        // SAFETY: passed on from this function's own contract.
        unsafe { write(info, answer) }
    }))
}
