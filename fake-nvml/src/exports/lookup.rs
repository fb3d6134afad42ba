//! The lookups a device plugin or a container toolkit makes before it touches a card: a card's
//! index, minor number and handle by UUID, and the MIG devices under a card (one per compute
//! instance, as NVML counts them).
//!
//! NVML's rules (`nvml.h`, NVML API reference, "Multi Instance GPU Management"): the maximum
//! MIG device count is zero where MIG is not supported or not enabled; a MIG device handle by
//! index is `NVML_ERROR_NOT_SUPPORTED` on a card without MIG enabled, `INVALID_ARGUMENT` past
//! the maximum, and `NOT_FOUND` where no MIG device is at that index (what NVIDIA's go-nvlib
//! expects: its walk of a card's MIG devices goes through every index to the maximum and skips
//! those). The fake numbers the MIG devices densely, by GPU instance and compute instance ID;
//! how a real driver numbers them is not published.

use crate::out::write;
use crate::scenario::{Device, MigMode};
use crate::state::{self, INVALID, code, device, failure, log, with};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{CStr, c_char, c_uint};

const NOT_SUPPORTED: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;

answered! {
    /// The card's index: its place in bus order, as [`crate::exports::device`]'s
    /// `nvmlDeviceGetHandleByIndex_v2` numbers cards.
    ///
    /// # Safety
    ///
    /// `index` is null or valid for a write.
    fn nvmlDeviceGetIndex(handle: nvml::nvmlDevice_t, index: *mut c_uint) |s| {
        let (at, _) = device(s, handle, CALL)?;
        let number = state::index_of_device(s, at)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(index, number) }
    }

    /// The card's minor number (its node is `/dev/nvidia<minor>`): here the index, bus order. A
    /// real driver numbers cards in the order it probes them, which need not be NVML's index order;
    /// no client should take the two for one, and none here does.
    ///
    /// # Safety
    ///
    /// `minor` is null or valid for a write.
    fn nvmlDeviceGetMinorNumber(handle: nvml::nvmlDevice_t, minor: *mut c_uint) |s| {
        let (at, _) = device(s, handle, CALL)?;
        let number = state::index_of_device(s, at)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(minor, number) }
    }
}

/// The card whose UUID ([`Device::uuid_or_derived`]) is `uuid`; `NVML_ERROR_NOT_FOUND` for
/// none.
///
/// # Safety
///
/// `uuid` is null or a NUL-terminated string; `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device_out: *mut nvml::nvmlDevice_t,
) -> nvml::nvmlReturn_t {
    if uuid.is_null() {
        return INVALID;
    }
    // SAFETY: not null, and NUL-terminated by the caller's contract.
    let asked = unsafe { CStr::from_ptr(uuid) }.to_string_lossy();
    log(format_args!("nvmlDeviceGetHandleByUUID {asked}"));
    code(with(|s| {
        let at = s
            .devices
            .iter()
            .position(|card| card.uuid_or_derived() == asked)
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        failure(&s.devices[at], "nvmlDeviceGetHandleByUUID")?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(device_out, state::device_handle(at)) }
    }))
}

/// Whether MIG is enabled on the card now.
fn mig_enabled(card: &Device) -> bool {
    matches!(card.mig_mode, MigMode::Mode { current: 1, .. })
}

/// How many MIG devices the card can hold while MIG is enabled: as many as its GPU instances
/// of the smallest profile, the largest instance count it offers (seven on an A100 or H100,
/// four on an A30: NVIDIA's MIG user guide).
fn max_mig_devices(card: &Device) -> u32 {
    if !mig_enabled(card) {
        return 0;
    }
    card.gpu_instance_profiles
        .iter()
        .map(|profile| profile.instance_count)
        .max()
        .unwrap_or(0)
}

/// The card's MIG devices in NVML's order: its compute instances, by GPU instance ID and then
/// compute instance ID, as `(gpu instance ID, compute instance ID)`.
fn mig_devices(card: &Device) -> Vec<(u32, u32)> {
    let mut list: Vec<(u32, u32)> = card
        .gpu_instances
        .iter()
        .flat_map(|gi| gi.compute_instances.iter().map(|ci| (gi.id, ci.id)))
        .collect();
    list.sort_unstable();
    list
}

answered! {
    /// The most MIG devices the card can hold: 0 where MIG is not supported or not enabled.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a write.
    fn nvmlDeviceGetMaxMigDeviceCount(handle: nvml::nvmlDevice_t, count: *mut c_uint) |s| {
        let (_, card) = device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(count, max_mig_devices(card)) }
    }

    /// The MIG device at `index` under the card.
    ///
    /// # Safety
    ///
    /// `mig_device` is null or valid for a write.
    fn nvmlDeviceGetMigDeviceHandleByIndex(
        handle: nvml::nvmlDevice_t,
        index: c_uint,
        mig_device: *mut nvml::nvmlDevice_t,
    ) logs("{}", index) |s| {
        let (at, card) = device(s, handle, CALL)?;
        if !mig_enabled(card) {
            return Err(NOT_SUPPORTED);
        }
        if index >= max_mig_devices(card) {
            return Err(INVALID);
        }
        let position = usize::try_from(index).map_err(|_| INVALID)?;
        let (gi, ci) = mig_devices(card)
            .get(position)
            .copied()
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(mig_device, state::mig_device_handle(at, gi, ci)) }
    }

    /// Whether the handle is a MIG device's (1) or a card's (0).
    ///
    /// # Safety
    ///
    /// `is_mig` is null or valid for a write.
    fn nvmlDeviceIsMigDeviceHandle(handle: nvml::nvmlDevice_t, is_mig: *mut c_uint) |s| {
        let mig = state::mig_device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(is_mig, c_uint::from(mig.is_some())) }
    }

    /// The card a MIG device belongs to; a card's own handle is `NVML_ERROR_NOT_SUPPORTED`.
    ///
    /// # Safety
    ///
    /// `device` is null or valid for a write.
    fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
        mig_device: nvml::nvmlDevice_t,
        device_out: *mut nvml::nvmlDevice_t,
    ) |s| {
        let (at, _, _) = state::mig_device(
            s,
            mig_device,
            CALL,
        )?
        .ok_or(NOT_SUPPORTED)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(device_out, state::device_handle(at)) }
    }

    /// The GPU instance ID of a MIG device; a card's own handle is `NVML_ERROR_NOT_SUPPORTED`.
    ///
    /// # Safety
    ///
    /// `id` is null or valid for a write.
    fn nvmlDeviceGetGpuInstanceId(mig_device: nvml::nvmlDevice_t, id: *mut c_uint) |s| {
        let (_, gi, _) =
            state::mig_device(s, mig_device, CALL)?.ok_or(NOT_SUPPORTED)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(id, gi) }
    }

    /// The compute instance ID of a MIG device; a card's own handle is `NVML_ERROR_NOT_SUPPORTED`.
    ///
    /// # Safety
    ///
    /// `id` is null or valid for a write.
    fn nvmlDeviceGetComputeInstanceId(mig_device: nvml::nvmlDevice_t, id: *mut c_uint) |s| {
        let (_, _, ci) = state::mig_device(s, mig_device, CALL)?
            .ok_or(NOT_SUPPORTED)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(id, ci) }
    }
}
