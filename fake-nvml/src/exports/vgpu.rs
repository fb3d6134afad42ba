//! The card's vGPU type catalogue (the scenario's `vgpu_types`: supported, creatable, and each
//! type's fields), its heterogeneous mode, and the active vGPUs and their fields.
//!
//! A type ID NVML gives is global: the per-type calls find it in the first card whose
//! catalogue has it (and fail as that card's `fail` says); an ID no card has is
//! `NVML_ERROR_INVALID_ARGUMENT`, as nvml.h documents for an invalid `vgpuTypeId`.

use crate::out::{stamped, struct_version, write, write_list, write_str};
use crate::rules;
use crate::scenario::{Device, Scenario, VgpuType};
use crate::state::{self, Answer, INVALID, code, device, failure, log, vgpu, with};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{c_char, c_uint, c_ulonglong};

const NOT_SUPPORTED: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
const VERSION_MISMATCH: nvml::nvmlReturn_t =
    nvml::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;

/// The card's catalogue; `NVML_ERROR_NOT_SUPPORTED` for a card whose scenario gives none (no
/// source says which types it has: the fake does not claim it has none).
fn catalogue(card: &Device) -> Answer<&[VgpuType]> {
    if card.vgpu_types.is_empty() {
        return Err(NOT_SUPPORTED);
    }
    Ok(&card.vgpu_types)
}

/// The type of this ID in the first card's catalogue that has it, failing as that card's
/// scenario says for `function`; `NVML_ERROR_INVALID_ARGUMENT` for an ID no card has.
fn vgpu_type<'a>(s: &'a Scenario, type_id: u32, function: &str) -> Answer<&'a VgpuType> {
    let (card, found) = s
        .devices
        .iter()
        .find_map(|d| {
            d.vgpu_types
                .iter()
                .find(|t| t.id == type_id)
                .map(|t| (d, t))
        })
        .ok_or(INVALID)?;
    failure(card, function)?;
    Ok(found)
}

answered! {
    /// Every vGPU type the card supports, in catalogue order; `*count` is the room in, the number
    /// out (`NVML_ERROR_INSUFFICIENT_SIZE` when the room is short); `NVML_ERROR_NOT_SUPPORTED` for
    /// a card whose scenario gives no catalogue.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a read and a write; `ids` is null or valid for `*count` writes.
    fn nvmlDeviceGetSupportedVgpus(
        handle: nvml::nvmlDevice_t,
        count: *mut c_uint,
        ids: *mut nvml::nvmlVgpuTypeId_t,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let found: Vec<u32> = catalogue(card)?.iter().map(|t| t.id).collect();
        // SAFETY: passed on from this function's own contract.
        unsafe { write_list(ids, count, &found) }
    }

    /// The vGPU types creatable on the card now ([`rules::creatable_vgpu_types`]: MIG off, the
    /// time-sliced types, narrowed to the running type once vGPUs exist; MIG on, the MIG-backed
    /// types with a free GPU instance of their profile); `*count` as
    /// [`nvmlDeviceGetSupportedVgpus`]'s.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a read and a write; `ids` is null or valid for `*count` writes.
    fn nvmlDeviceGetCreatableVgpus(
        handle: nvml::nvmlDevice_t,
        count: *mut c_uint,
        ids: *mut nvml::nvmlVgpuTypeId_t,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        catalogue(card)?;
        let found = rules::creatable_vgpu_types(card)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_list(ids, count, &found) }
    }

    /// The type's class (`class`); `NVML_ERROR_NOT_SUPPORTED` where the scenario gives none.
    ///
    /// # Safety
    ///
    /// `size` is null or valid for a read; `class` is null or valid for `*size` chars.
    fn nvmlVgpuTypeGetClass(
        type_id: nvml::nvmlVgpuTypeId_t,
        class: *mut c_char,
        size: *mut c_uint,
    ) logs("{}", type_id) |s| {
        let found = vgpu_type(s, type_id, CALL)?;
        let text = found.class.as_deref().ok_or(NOT_SUPPORTED)?;
        if size.is_null() {
            return Err(INVALID);
        }
        // SAFETY: not null; valid by this function's contract.
        let room = unsafe { size.read() };
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(class, room, text) }
    }

    /// The ID of the GPU-instance profile the type runs on; `INVALID_GPU_INSTANCE_PROFILE_ID`
    /// (0xFFFFFFFF) for a time-sliced type, as nvml.h documents.
    ///
    /// # Safety
    ///
    /// `profile_id` is null or valid for a write.
    fn nvmlVgpuTypeGetGpuInstanceProfileId(
        type_id: nvml::nvmlVgpuTypeId_t,
        profile_id: *mut c_uint,
    ) logs("{}", type_id) |s| {
        let found = vgpu_type(s, type_id, CALL)?;
        let answer = found
            .gpu_instance_profile_id
            .unwrap_or(nvml::INVALID_GPU_INSTANCE_PROFILE_ID);
        // SAFETY: passed on from this function's own contract.
        unsafe { write(profile_id, answer) }
    }

    /// The type's framebuffer, in bytes (`framebuffer_mib` × 2^20).
    ///
    /// # Safety
    ///
    /// `size` is null or valid for a write.
    fn nvmlVgpuTypeGetFramebufferSize(
        type_id: nvml::nvmlVgpuTypeId_t,
        size: *mut c_ulonglong,
    ) logs("{}", type_id) |s| {
        let found = vgpu_type(s, type_id, CALL)?;
        let bytes = found.framebuffer_mib.checked_mul(1 << 20).ok_or(INVALID)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(size, bytes) }
    }

    /// How many vGPUs of the type the card holds (`max_instances`); a type not in this card's
    /// catalogue is `NVML_ERROR_INVALID_ARGUMENT`.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a write.
    fn nvmlVgpuTypeGetMaxInstances(
        handle: nvml::nvmlDevice_t,
        type_id: nvml::nvmlVgpuTypeId_t,
        count: *mut c_uint,
    ) logs("{}", type_id) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let found = card
            .vgpu_types
            .iter()
            .find(|t| t.id == type_id)
            .ok_or(INVALID)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(count, found.max_instances) }
    }
}

/// How many vGPUs of the type one GPU instance holds (`max_instances_per_gpu_instance`), into
/// the caller's `nvmlVgpuTypeMaxInstance_v1_t` (its `vgpuTypeId` asks; `version` must be
/// `nvmlVgpuTypeMaxInstance_v1`, else `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`);
/// `NVML_ERROR_NOT_SUPPORTED` where the scenario gives no number (none is published for the
/// parts modelled).
///
/// # Safety
///
/// `info` is null or valid for a read and a write of the struct.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlVgpuTypeGetMaxInstancesPerGpuInstance(
    info: *mut nvml::nvmlVgpuTypeMaxInstance_t,
) -> nvml::nvmlReturn_t {
    if info.is_null() {
        log(format_args!("nvmlVgpuTypeGetMaxInstancesPerGpuInstance"));
        return INVALID;
    }
    // SAFETY: not null; valid by this function's contract.
    let asked = unsafe { info.read() };
    log(format_args!(
        "nvmlVgpuTypeGetMaxInstancesPerGpuInstance {}",
        asked.vgpuTypeId
    ));
    code(with(|s| {
        if asked.version != struct_version::<nvml::nvmlVgpuTypeMaxInstance_t>(1) {
            return Err(VERSION_MISMATCH);
        }
        let found = vgpu_type(
            s,
            asked.vgpuTypeId,
            "nvmlVgpuTypeGetMaxInstancesPerGpuInstance",
        )?;
        let most = found.max_instances_per_gpu_instance.ok_or(NOT_SUPPORTED)?;
        // SAFETY: not null; valid by this function's contract.
        unsafe { (*info).maxInstancePerGI = most };
        Ok(())
    }))
}

answered! {
    /// The card's heterogeneous vGPU mode (`vgpu_heterogeneous_mode`: 1 enabled, 0 disabled) into
    /// the caller's `nvmlVgpuHeterogeneousMode_v1_t` (`version` must be
    /// `nvmlVgpuHeterogeneousMode_v1`, else `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`);
    /// `NVML_ERROR_NOT_SUPPORTED` where the scenario gives none, and in MIG mode (R575 and later,
    /// `rules::sriov::set_heterogeneous_mode`).
    ///
    /// # Safety
    ///
    /// `mode` is null or valid for a read and a write of the struct.
    fn nvmlDeviceGetVgpuHeterogeneousMode(
        handle: nvml::nvmlDevice_t,
        mode: *mut nvml::nvmlVgpuHeterogeneousMode_t,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { stamped(mode, 1) }?;
        // From R575 the call answers NOT_SUPPORTED in MIG mode (as the set does).
        if rules::mig_on(card) {
            return Err(NOT_SUPPORTED);
        }
        let enabled = card.vgpu_heterogeneous_mode.ok_or(NOT_SUPPORTED)?;
        // SAFETY: not null; valid by this function's contract.
        unsafe { (*mode).mode = u32::from(enabled) };
        Ok(())
    }
}

/// Sets the card's heterogeneous vGPU mode from the caller's `nvmlVgpuHeterogeneousMode_v1_t`
/// (`version` must be `nvmlVgpuHeterogeneousMode_v1`, `mode` 0 or 1) by
/// `rules::sriov::set_heterogeneous_mode`: `NVML_ERROR_NOT_SUPPORTED` where the card has no
/// such setting, or in MIG mode.
///
/// # Safety
///
/// `mode` is null or valid for a read of the struct.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceSetVgpuHeterogeneousMode(
    handle: nvml::nvmlDevice_t,
    mode: *const nvml::nvmlVgpuHeterogeneousMode_t,
) -> nvml::nvmlReturn_t {
    if mode.is_null() {
        log(format_args!("nvmlDeviceSetVgpuHeterogeneousMode"));
        return INVALID;
    }
    // SAFETY: not null; valid for a read by this function's contract.
    let asked = unsafe { mode.read() };
    log(format_args!(
        "nvmlDeviceSetVgpuHeterogeneousMode {}",
        asked.mode
    ));
    if asked.version != struct_version::<nvml::nvmlVgpuHeterogeneousMode_t>(1) {
        return VERSION_MISMATCH;
    }
    if asked.mode > 1 {
        return INVALID;
    }
    let index =
        match with(|s| device(s, handle, "nvmlDeviceSetVgpuHeterogeneousMode").map(|(at, _)| at)) {
            Ok(index) => index,
            Err(call) => return call,
        };
    code(state::change(
        index,
        "nvmlDeviceSetVgpuHeterogeneousMode",
        |card| {
            crate::rules::sriov::set_heterogeneous_mode(card, asked.mode == 1)
                .map_err(|()| NOT_SUPPORTED)
        },
    ))
}

answered! {
    /// The card's active vGPUs; `*count` is the room in, the number out
    /// (`NVML_ERROR_INSUFFICIENT_SIZE` when the room is short).
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a read and a write; `instances` is null or valid for `*count`
    /// writes.
    fn nvmlDeviceGetActiveVgpus(
        handle: nvml::nvmlDevice_t,
        count: *mut c_uint,
        instances: *mut nvml::nvmlVgpuInstance_t,
    ) |s| {
        let (index, card) = device(s, handle, CALL)?;
        let found: Vec<u32> = (0..card.vgpus.len())
            .map(|at| state::vgpu_handle(index, at))
            .collect();
        // SAFETY: passed on from this function's own contract.
        unsafe { write_list(instances, count, &found) }
    }

    /// The vGPU's UUID.
    ///
    /// # Safety
    ///
    /// `uuid` is null or valid for `size` chars.
    fn nvmlVgpuInstanceGetUUID(
        instance: nvml::nvmlVgpuInstance_t,
        uuid: *mut c_char,
        size: c_uint,
    ) logs("{}", instance) |s| {
        let (_, found) = vgpu(s, instance, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(uuid, size, &found.uuid) }
    }

    /// The vGPU's type ID.
    ///
    /// # Safety
    ///
    /// `type_id` is null or valid for a write.
    fn nvmlVgpuInstanceGetType(
        instance: nvml::nvmlVgpuInstance_t,
        type_id: *mut nvml::nvmlVgpuTypeId_t,
    ) logs("{}", instance) |s| {
        let (_, found) = vgpu(s, instance, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(type_id, found.type_id) }
    }

    /// The name of a vGPU type: from the first card whose catalogue has it, else from the first
    /// card with an active vGPU of that type.
    ///
    /// # Safety
    ///
    /// `size` is null or valid for a read and a write; `name` is null or valid for `*size` chars.
    fn nvmlVgpuTypeGetName(
        type_id: nvml::nvmlVgpuTypeId_t,
        name: *mut c_char,
        size: *mut c_uint,
    ) logs("{}", type_id) |s| {
        let in_catalogue = s.devices.iter().find_map(|d| {
            d.vgpu_types
                .iter()
                .find(|t| t.id == type_id)
                .map(|t| (d, t.name.as_str()))
        });
        let active = || {
            s.devices.iter().find_map(|d| {
                d.vgpus
                    .iter()
                    .find(|v| v.type_id == type_id)
                    .map(|v| (d, v.vgpu_type.as_str()))
            })
        };
        let (card, found) = in_catalogue.or_else(active).ok_or(state::INVALID)?;
        failure(card, CALL)?;
        if size.is_null() {
            return Err(state::INVALID);
        }
        // SAFETY: not null; valid by this function's contract.
        let room = unsafe { size.read() };
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(name, room, found) }
    }

    /// The GPU instance a vGPU is placed on; `INVALID_GPU_INSTANCE_ID` for a time-sliced vGPU.
    ///
    /// # Safety
    ///
    /// `id` is null or valid for a write.
    fn nvmlVgpuInstanceGetGpuInstanceId(
        instance: nvml::nvmlVgpuInstance_t,
        id: *mut c_uint,
    ) logs("{}", instance) |s| {
        let (_, found) = vgpu(s, instance, CALL)?;
        let answer = found
            .gpu_instance_id
            .unwrap_or(nvml::INVALID_GPU_INSTANCE_ID);
        // SAFETY: passed on from this function's own contract.
        unsafe { write(id, answer) }
    }

    /// The VM's UUID; `NVML_ERROR_NOT_FOUND` for a vGPU without one.
    ///
    /// # Safety
    ///
    /// `vm_id` is null or valid for `size` chars; `id_type` is null or valid for a write.
    fn nvmlVgpuInstanceGetVmID(
        instance: nvml::nvmlVgpuInstance_t,
        vm_id: *mut c_char,
        size: c_uint,
        id_type: *mut nvml::nvmlVgpuVmIdType_t,
    ) logs("{}", instance) |s| {
        let (_, found) = vgpu(s, instance, CALL)?;
        let vm = found
            .vm
            .as_deref()
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(vm_id, size, vm) }?;
        // SAFETY: as above.
        unsafe { write(id_type, nvml::nvmlVgpuVmIdType_NVML_VGPU_VM_ID_UUID) }
    }
}
