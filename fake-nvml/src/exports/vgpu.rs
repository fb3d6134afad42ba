//! Active vGPUs and their fields.

use crate::out::{write, write_list, write_str};
use crate::state::{self, code, device, failure, log, vgpu, with};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{c_char, c_uint};

/// The card's active vGPUs; `*count` is the room in, the number out
/// (`NVML_ERROR_INSUFFICIENT_SIZE` when the room is short).
///
/// # Safety
///
/// `count` is null or valid for a read and a write; `instances` is null or valid for `*count`
/// writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetActiveVgpus(
    handle: nvml::nvmlDevice_t,
    count: *mut c_uint,
    instances: *mut nvml::nvmlVgpuInstance_t,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlDeviceGetActiveVgpus"));
    code(with(|s| {
        let (index, card) = device(s, handle, "nvmlDeviceGetActiveVgpus")?;
        let found: Vec<u32> = (0..card.vgpus.len())
            .map(|at| state::vgpu_handle(index, at))
            .collect();
        // SAFETY: passed on from this function's own contract.
        unsafe { write_list(instances, count, &found) }
    }))
}

/// The vGPU's UUID.
///
/// # Safety
///
/// `uuid` is null or valid for `size` chars.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlVgpuInstanceGetUUID(
    instance: nvml::nvmlVgpuInstance_t,
    uuid: *mut c_char,
    size: c_uint,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlVgpuInstanceGetUUID {instance}"));
    code(with(|s| {
        let (_, found) = vgpu(s, instance, "nvmlVgpuInstanceGetUUID")?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(uuid, size, &found.uuid) }
    }))
}

/// The vGPU's type ID.
///
/// # Safety
///
/// `type_id` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlVgpuInstanceGetType(
    instance: nvml::nvmlVgpuInstance_t,
    type_id: *mut nvml::nvmlVgpuTypeId_t,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlVgpuInstanceGetType {instance}"));
    code(with(|s| {
        let (_, found) = vgpu(s, instance, "nvmlVgpuInstanceGetType")?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(type_id, found.type_id) }
    }))
}

/// The name of a vGPU type (of the first card with a vGPU of that type).
///
/// # Safety
///
/// `size` is null or valid for a read and a write; `name` is null or valid for `*size` chars.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlVgpuTypeGetName(
    type_id: nvml::nvmlVgpuTypeId_t,
    name: *mut c_char,
    size: *mut c_uint,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlVgpuTypeGetName {type_id}"));
    code(with(|s| {
        let (card, found) = s
            .devices
            .iter()
            .find_map(|d| {
                d.vgpus
                    .iter()
                    .find(|v| v.type_id == type_id)
                    .map(|v| (d, v))
            })
            .ok_or(state::INVALID)?;
        failure(card, "nvmlVgpuTypeGetName")?;
        if size.is_null() {
            return Err(state::INVALID);
        }
        // SAFETY: not null; valid by this function's contract.
        let room = unsafe { size.read() };
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(name, room, &found.vgpu_type) }
    }))
}

/// The GPU instance a vGPU is placed on; `INVALID_GPU_INSTANCE_ID` for a time-sliced vGPU.
///
/// # Safety
///
/// `id` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlVgpuInstanceGetGpuInstanceId(
    instance: nvml::nvmlVgpuInstance_t,
    id: *mut c_uint,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlVgpuInstanceGetGpuInstanceId {instance}"));
    code(with(|s| {
        let (_, found) = vgpu(s, instance, "nvmlVgpuInstanceGetGpuInstanceId")?;
        let answer = found
            .gpu_instance_id
            .unwrap_or(nvml::INVALID_GPU_INSTANCE_ID);
        // SAFETY: passed on from this function's own contract.
        unsafe { write(id, answer) }
    }))
}

/// The VM's UUID; `NVML_ERROR_NOT_FOUND` for a vGPU without one.
///
/// # Safety
///
/// `vm_id` is null or valid for `size` chars; `id_type` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlVgpuInstanceGetVmID(
    instance: nvml::nvmlVgpuInstance_t,
    vm_id: *mut c_char,
    size: c_uint,
    id_type: *mut nvml::nvmlVgpuVmIdType_t,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlVgpuInstanceGetVmID {instance}"));
    code(with(|s| {
        let (_, found) = vgpu(s, instance, "nvmlVgpuInstanceGetVmID")?;
        let vm = found
            .vm
            .as_deref()
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(vm_id, size, vm) }?;
        // SAFETY: as above.
        unsafe { write(id_type, nvml::nvmlVgpuVmIdType_NVML_VGPU_VM_ID_UUID) }
    }))
}
