//! A card's MIG side: its mode (read and set), its GPU-instance profiles and their placements, and
//! its GPU instances (listed and created).

// Only the V call (left out by `without-profile-info-v`) reads a struct's version stamp.
#[cfg(not(feature = "without-profile-info-v"))]
use crate::out::{c_array, stamp_of, struct_version};
use crate::out::{write, write_found, write_list};
use crate::rules::{self, MigModeError};
use crate::scenario::{Device, MigMode, Profile};
use crate::state::{self, Answer, INVALID, code, device, log, with};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::c_uint;

const NOT_SUPPORTED: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;

answered! {
    /// The card's MIG mode; `NVML_ERROR_NOT_SUPPORTED` for `"not_supported"`.
    ///
    /// # Safety
    ///
    /// `current` and `pending` are null or valid for a write.
    fn nvmlDeviceGetMigMode(
        handle: nvml::nvmlDevice_t,
        current: *mut c_uint,
        pending: *mut c_uint,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        match card.mig_mode {
            MigMode::NotSupported => Err(NOT_SUPPORTED),
            MigMode::Mode {
                current: now,
                pending: next,
            } => {
                // SAFETY: passed on from this function's own contract.
                unsafe { write(current, now) }?;
                // SAFETY: as above.
                unsafe { write(pending, next) }
            }
        }
    }
}

/// The profile at `index` of the card, whose driver is `driver_version`: listed, else
/// `NOT_SUPPORTED` inside NVML's profile enum of that driver and `INVALID_ARGUMENT` at or past
/// its end ([`crate::profile_enum`]), as NVML answers.
fn profile_at<'a>(card: &'a Device, driver_version: &str, index: u32) -> Answer<&'a Profile> {
    if let Some(profile) = card.gpu_instance_profiles.iter().find(|p| p.index == index) {
        return Ok(profile);
    }
    match crate::profile_enum::profile_count(driver_version) {
        Some(count) if index < count => Err(NOT_SUPPORTED),
        _ => Err(INVALID),
    }
}

/// NVML's GPU-instance profile struct `nvml::$kind` (any version: each names its ID and counts
/// alike) of the scenario's profile `$found`, with the members only that version has.
macro_rules! profile_info {
    ($kind:ident, $found:ident { $($member:ident: $value:expr),* $(,)? }) => {
        nvml::$kind {
            id: $found.id,
            sliceCount: $found.slice_count,
            instanceCount: $found.instance_count,
            multiprocessorCount: $found.multiprocessor_count,
            copyEngineCount: $found.copy_engine_count,
            decoderCount: $found.decoder_count,
            encoderCount: $found.encoder_count,
            jpegCount: $found.jpeg_count,
            ofaCount: $found.ofa_count,
            memorySizeMB: $found.memory_size_mb,
            $($member: $value,)*
        }
    };
}

fn profile_by_id(profiles: &[Profile], id: u32) -> Answer<&Profile> {
    profiles.iter().find(|p| p.id == id).ok_or(INVALID)
}

answered! {
    /// The profile at index `profile` in the versioned struct the caller stamped (v2 or v3);
    /// another stamp is `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`.
    ///
    /// # Safety
    ///
    /// `info` is null or points to a struct of the version stamped in its first field.
    #[cfg(not(feature = "without-profile-info-v"))]
    fn nvmlDeviceGetGpuInstanceProfileInfoV(
        handle: nvml::nvmlDevice_t,
        profile: c_uint,
        info: *mut nvml::nvmlGpuInstanceProfileInfo_v2_t,
    ) logs("{}", profile) |s| {
        let (_, card) = device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        let stamp = unsafe { stamp_of(info) }?;
        let found = profile_at(card, &s.driver_version, profile)?;
        let caps = u32::from(found.p2p) | (u32::from(found.gfx) << 1);
        if stamp == struct_version::<nvml::nvmlGpuInstanceProfileInfo_v3_t>(3) {
            let v3 = profile_info!(
                nvmlGpuInstanceProfileInfo_v3_t,
                found {
                    version: stamp,
                    name: c_array(&found.name),
                    capabilities: caps,
                }
            );
            // SAFETY: the caller stamped a v3 struct, so `info` holds one.
            unsafe { write(info.cast::<nvml::nvmlGpuInstanceProfileInfo_v3_t>(), v3) }
        } else if stamp == struct_version::<nvml::nvmlGpuInstanceProfileInfo_v2_t>(2) {
            let v2 = profile_info!(
                nvmlGpuInstanceProfileInfo_v2_t,
                found {
                    version: stamp,
                    isP2pSupported: u32::from(found.p2p),
                    name: c_array(&found.name),
                }
            );
            // SAFETY: the caller stamped a v2 struct, so `info` holds one.
            unsafe { write(info, v2) }
        } else {
            Err(nvml::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        }
    }

    /// The profile at index `profile` in the v1 struct (no name, a P2P flag).
    ///
    /// # Safety
    ///
    /// `info` is null or valid for a write of the v1 struct.
    fn nvmlDeviceGetGpuInstanceProfileInfo(
        handle: nvml::nvmlDevice_t,
        profile: c_uint,
        info: *mut nvml::nvmlGpuInstanceProfileInfo_t,
    ) logs("{}", profile) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let found = profile_at(card, &s.driver_version, profile)?;
        let v1 = profile_info!(
            nvmlGpuInstanceProfileInfo_t,
            found {
                isP2pSupported: u32::from(found.p2p),
            }
        );
        // SAFETY: passed on from this function's own contract.
        unsafe { write(info, v1) }
    }

    /// How many more instances of the profile with this ID fit: computed from its instance count,
    /// its placements and what is placed ([`rules::remaining`]).
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a write.
    fn nvmlDeviceGetGpuInstanceRemainingCapacity(
        handle: nvml::nvmlDevice_t,
        profile_id: c_uint,
        count: *mut c_uint,
    ) logs("{}", profile_id) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let found = profile_by_id(&card.gpu_instance_profiles, profile_id)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(count, rules::remaining(card, found)) }
    }

    /// The GPU instances of the profile with this ID; with MIG off, `NVML_ERROR_NOT_SUPPORTED`.
    ///
    /// # Safety
    ///
    /// `instances` is null or has room for the profile's instance count; `count` is null or valid
    /// for a write.
    fn nvmlDeviceGetGpuInstances(
        handle: nvml::nvmlDevice_t,
        profile_id: c_uint,
        instances: *mut nvml::nvmlGpuInstance_t,
        count: *mut c_uint,
    ) logs("{}", profile_id) |s| {
        let (index, card) = device(s, handle, CALL)?;
        if !matches!(card.mig_mode, MigMode::Mode { current: 1, .. }) {
            return Err(NOT_SUPPORTED);
        }
        profile_by_id(&card.gpu_instance_profiles, profile_id)?;
        let found: Vec<nvml::nvmlGpuInstance_t> = card
            .gpu_instances
            .iter()
            .filter(|gi| gi.profile_id == profile_id)
            .map(|gi| state::gpu_instance_handle(index, gi.id))
            .collect();
        // SAFETY: passed on from this function's own contract.
        unsafe { write_found(instances, count, &found) }
    }

    /// The GPU instance with this ID; `NVML_ERROR_NOT_FOUND` for none.
    ///
    /// # Safety
    ///
    /// `instance` is null or valid for a write.
    fn nvmlDeviceGetGpuInstanceById(
        handle: nvml::nvmlDevice_t,
        id: c_uint,
        instance: *mut nvml::nvmlGpuInstance_t,
    ) logs("{}", id) |s| {
        let (index, card) = device(s, handle, CALL)?;
        let found = rules::gpu_instance(card, id)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(instance, state::gpu_instance_handle(index, found.id)) }
    }

    /// Every possible placement of the profile with this ID, MIG on or off (its `placements`).
    /// With `placements` null, `*count` says how many there are.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a read and a write; `placements` is null or valid for `*count`
    /// writes.
    fn nvmlDeviceGetGpuInstancePossiblePlacements_v2(
        handle: nvml::nvmlDevice_t,
        profile_id: c_uint,
        placements: *mut nvml::nvmlGpuInstancePlacement_t,
        count: *mut c_uint,
    ) logs("{}", profile_id) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let found = profile_by_id(&card.gpu_instance_profiles, profile_id)?;
        let list: Vec<nvml::nvmlGpuInstancePlacement_t> = found
            .placements
            .iter()
            .map(|p| nvml::nvmlGpuInstancePlacement_t {
                start: p.start,
                size: p.size,
            })
            .collect();
        if placements.is_null() {
            let needed = u32::try_from(list.len()).map_err(|_| INVALID)?;
            // SAFETY: passed on from this function's own contract.
            return unsafe { write(count, needed) };
        }
        // SAFETY: passed on from this function's own contract.
        unsafe { write_list(placements, count, &list) }
    }
}

/// Sets the MIG mode ([`rules::set_mig_mode`]): the call's return, and the activation status
/// through `activation_status` (`NVML_ERROR_IN_USE` where the card refuses the change).
///
/// # Safety
///
/// `activation_status` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceSetMigMode(
    handle: nvml::nvmlDevice_t,
    mode: c_uint,
    activation_status: *mut nvml::nvmlReturn_t,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlDeviceSetMigMode {mode}"));
    if activation_status.is_null() || mode > 1 {
        return INVALID;
    }
    let index = match with(|s| device(s, handle, "nvmlDeviceSetMigMode").map(|(at, _)| at)) {
        Ok(index) => index,
        Err(call) => return call,
    };
    // The call fails on a card without MIG (or as the scenario says); a change the card
    // refuses is the call's success with the activation status `NVML_ERROR_IN_USE`.
    let activation = state::change(
        index,
        "nvmlDeviceSetMigMode",
        |card| match rules::set_mig_mode(card, mode == 1) {
            Ok(()) => Ok(nvml::nvmlReturn_enum_NVML_SUCCESS),
            Err(MigModeError::Held | MigModeError::InstancesLeft | MigModeError::VfsEnabled) => {
                Ok(nvml::nvmlReturn_enum_NVML_ERROR_IN_USE)
            }
            Err(MigModeError::NotSupported) => Err(nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED),
        },
    );
    match activation {
        Ok(status) => {
            // SAFETY: checked not null above; valid by the caller's contract.
            unsafe { activation_status.write(status) };
            nvml::nvmlReturn_enum_NVML_SUCCESS
        }
        Err(call) => call,
    }
}

/// Creates a GPU instance of the profile with this ID at `placement` ([`rules::
/// create_gpu_instance`]).
///
/// # Safety
///
/// `placement` is null or valid for a read; `instance` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceCreateGpuInstanceWithPlacement(
    handle: nvml::nvmlDevice_t,
    profile_id: c_uint,
    placement: *const nvml::nvmlGpuInstancePlacement_t,
    instance: *mut nvml::nvmlGpuInstance_t,
) -> nvml::nvmlReturn_t {
    if placement.is_null() || instance.is_null() {
        return INVALID;
    }
    // SAFETY: not null; valid for a read by the caller's contract.
    let asked = unsafe { placement.read() };
    log(format_args!(
        "nvmlDeviceCreateGpuInstanceWithPlacement {profile_id} {}+{}",
        asked.start, asked.size
    ));
    let function = "nvmlDeviceCreateGpuInstanceWithPlacement";
    code(
        with(|s| device(s, handle, function).map(|(index, _)| index)).and_then(|index| {
            let at = crate::scenario::Placement {
                start: asked.start,
                size: asked.size,
            };
            let id = state::change(index, function, |card| {
                rules::create_gpu_instance(card, profile_id, at)
            })?;
            // SAFETY: passed on from this function's own contract.
            unsafe { write(instance, state::gpu_instance_handle(index, id)) }
        }),
    )
}

/// Creates a GPU instance of the profile with this ID where the driver chooses
/// ([`rules::create_gpu_instance_anywhere`]).
///
/// # Safety
///
/// `instance` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceCreateGpuInstance(
    handle: nvml::nvmlDevice_t,
    profile_id: c_uint,
    instance: *mut nvml::nvmlGpuInstance_t,
) -> nvml::nvmlReturn_t {
    if instance.is_null() {
        return INVALID;
    }
    log(format_args!("nvmlDeviceCreateGpuInstance {profile_id}"));
    let function = "nvmlDeviceCreateGpuInstance";
    code(
        with(|s| device(s, handle, function).map(|(index, _)| index)).and_then(|index| {
            let id = state::change(index, function, |card| {
                rules::create_gpu_instance_anywhere(card, profile_id)
            })?;
            // SAFETY: passed on from this function's own contract.
            unsafe { write(instance, state::gpu_instance_handle(index, id)) }
        }),
    )
}
