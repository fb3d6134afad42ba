//! A card: its handle (by bus ID or index), name, serial and UUID, memory, PCI info, and the
//! processes holding it. Its MIG side is [`super::mig`]'s.

use crate::out::{c_array, stamped, write, write_list, write_str};
use crate::rules;
use crate::scenario::parse_bus_id;
use crate::state::{self, Answer, INVALID, code, device, failure, log, with};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{CStr, c_char, c_uint};

const NOT_SUPPORTED: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;

/// The card whose bus ID matches (either form, any case); `NVML_ERROR_NOT_FOUND` for none.
///
/// # Safety
///
/// `pci_bus_id` is null or a NUL-terminated string; `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    pci_bus_id: *const c_char,
    device: *mut nvml::nvmlDevice_t,
) -> nvml::nvmlReturn_t {
    if pci_bus_id.is_null() {
        return INVALID;
    }
    // SAFETY: not null, and NUL-terminated by the caller's contract.
    let asked = unsafe { CStr::from_ptr(pci_bus_id) }.to_string_lossy();
    log(format_args!("nvmlDeviceGetHandleByPciBusId_v2 {asked}"));
    code(with(|s| {
        let wanted = parse_bus_id(&asked).ok_or(INVALID)?;
        let index = s
            .devices
            .iter()
            .position(|d| parse_bus_id(&d.pci_bus_id) == Some(wanted))
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        failure(&s.devices[index], "nvmlDeviceGetHandleByPciBusId_v2")?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(device, state::device_handle(index)) }
    }))
}

answered! {
    /// The card's `name`.
    ///
    /// # Safety
    ///
    /// `name` is null or valid for `length` chars.
    fn nvmlDeviceGetName(handle: nvml::nvmlDevice_t, name: *mut c_char, length: c_uint) |s| {
        let (_, card) = device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(name, length, &card.name) }
    }

    /// The board's serial ([`Device::serial_or_derived`]): every part of the fake is a data-center
    /// board with an InfoROM, which nvml.h says every board with one has ("For all products with an
    /// inforom").
    ///
    /// # Safety
    ///
    /// `serial` is null or valid for `length` chars.
    fn nvmlDeviceGetSerial(handle: nvml::nvmlDevice_t, serial: *mut c_char, length: c_uint) |s| {
        let (_, card) = device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(serial, length, &card.serial_or_derived()) }
    }

    /// The card's `uuid` (for a scenario that gives none, one made of its bus ID:
    /// [`crate::scenario::Device::uuid_or_derived`]).
    ///
    /// # Safety
    ///
    /// `uuid` is null or valid for `length` chars.
    fn nvmlDeviceGetUUID(handle: nvml::nvmlDevice_t, uuid: *mut c_char, length: c_uint) |s| {
        let (_, card) = device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(uuid, length, &card.uuid_or_derived()) }
    }

    /// The card's `architecture` as NVML numbers it (`nvmlDeviceArchitecture_t`: nvml.h's
    /// `NVML_DEVICE_ARCH_*`); a scenario that gives none answers `NVML_ERROR_NOT_SUPPORTED`, which
    /// no real part does, so every shipped scenario of a real part gives it with its source.
    ///
    /// # Safety
    ///
    /// `architecture` is null or valid for a write.
    fn nvmlDeviceGetArchitecture(
        handle: nvml::nvmlDevice_t,
        architecture: *mut nvml::nvmlDeviceArchitecture_t,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let number = card.architecture.ok_or(NOT_SUPPORTED)?.nvml();
        // SAFETY: passed on from this function's own contract.
        unsafe { write(architecture, number) }
    }

    /// The processes holding the card (its `clients`), as NVML's running compute processes;
    /// `*count` is the room in, the number out.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a read and a write; `infos` is null or valid for `*count`
    /// writes.
    fn nvmlDeviceGetComputeRunningProcesses_v3(
        handle: nvml::nvmlDevice_t,
        count: *mut c_uint,
        infos: *mut nvml::nvmlProcessInfo_t,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let list: Vec<nvml::nvmlProcessInfo_t> = rules::clients(card)
            .iter()
            .map(|client| nvml::nvmlProcessInfo_t {
                pid: client.pid,
                usedGpuMemory: 0,
                gpuInstanceId: u32::MAX,
                computeInstanceId: u32::MAX,
            })
            .collect();
        // SAFETY: passed on from this function's own contract.
        unsafe { write_list(infos, count, &list) }
    }

    /// How many cards the scenario holds.
    ///
    /// # Safety
    ///
    /// `count` is null or valid for a write.
    fn nvmlDeviceGetCount_v2(count: *mut c_uint) |s| {
        let cards = u32::try_from(s.devices.len()).map_err(|_| INVALID)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(count, cards) }
    }
}

/// The first version's name for [`nvmlDeviceGetCount_v2`].
///
/// # Safety
///
/// `count` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount(count: *mut c_uint) -> nvml::nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetCount_v2(count) }
}

answered! {
    /// The card NVML numbers `index` (cards are numbered in bus order, as `nvidia-smi` lists
    /// them); past the last, `NVML_ERROR_INVALID_ARGUMENT`.
    ///
    /// # Safety
    ///
    /// `device` is null or valid for a write.
    fn nvmlDeviceGetHandleByIndex_v2(
        index: c_uint,
        device: *mut nvml::nvmlDevice_t,
    ) logs("{}", index) |s| {
        let at = state::device_at_index(s, index)?;
        failure(&s.devices[at], CALL)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write(device, state::device_handle(at)) }
    }
}

/// The first version's name for [`nvmlDeviceGetHandleByIndex_v2`].
///
/// # Safety
///
/// `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex(
    index: c_uint,
    device: *mut nvml::nvmlDevice_t,
) -> nvml::nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetHandleByIndex_v2(index, device) }
}

const MIB: u64 = 1 << 20;

/// The card's memory (total, reserved) in bytes, or `NVML_ERROR_NOT_SUPPORTED` where the
/// scenario does not give it.
fn memory(card: &crate::scenario::Device) -> Answer<(u64, u64)> {
    let total = card.memory_total_mib.ok_or(NOT_SUPPORTED)?;
    let reserved = card.memory_reserved_mib.unwrap_or(0).min(total);
    Ok((total.saturating_mul(MIB), reserved.saturating_mul(MIB)))
}

answered! {
    /// The card's memory in the first struct: `used` is what is reserved and allocated (nothing
    /// is allocated: the fake runs no process on the card), `free` the rest.
    ///
    /// # Safety
    ///
    /// `memory` is null or valid for a write.
    fn nvmlDeviceGetMemoryInfo(
        handle: nvml::nvmlDevice_t,
        memory_out: *mut nvml::nvmlMemory_t,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let (total, reserved) = memory(card)?;
        let answer = nvml::nvmlMemory_t {
            total,
            free: total - reserved,
            used: reserved,
        };
        // SAFETY: passed on from this function's own contract.
        unsafe { write(memory_out, answer) }
    }

    /// The card's memory in the version-2 struct (the caller stamps `version`; another stamp is
    /// `NVML_ERROR_ARGUMENT_VERSION_MISMATCH`): `reserved` apart, `used` what is allocated (none).
    ///
    /// # Safety
    ///
    /// `memory` is null or valid for a read and a write of the v2 struct.
    fn nvmlDeviceGetMemoryInfo_v2(
        handle: nvml::nvmlDevice_t,
        memory_out: *mut nvml::nvmlMemory_v2_t,
    ) |s| {
        let (_, card) = device(s, handle, CALL)?;
        // SAFETY: passed on from this function's own contract.
        let stamp = unsafe { stamped(memory_out, 2) }?;
        let (total, reserved) = memory(card)?;
        let answer = nvml::nvmlMemory_v2_t {
            version: stamp,
            total,
            reserved,
            free: total - reserved,
            used: 0,
        };
        // SAFETY: passed on from this function's own contract.
        unsafe { write(memory_out, answer) }
    }

    /// The card's PCI location and IDs: the bus ID in both of NVML's forms, and the device ID the
    /// scenario gives (0 where it gives none).
    ///
    /// # Safety
    ///
    /// `pci` is null or valid for a write.
    fn nvmlDeviceGetPciInfo_v3(handle: nvml::nvmlDevice_t, pci: *mut nvml::nvmlPciInfo_t) |s| {
        let (_, card) = device(s, handle, CALL)?;
        let (domain, bus, dev, function) = parse_bus_id(&card.pci_bus_id).ok_or(INVALID)?;
        let answer = nvml::nvmlPciInfo_t {
            busIdLegacy: c_array(&format!(
                "{:04X}:{bus:02X}:{dev:02X}.{function:X}",
                domain & 0xffff
            )),
            domain,
            bus: u32::from(bus),
            device: u32::from(dev),
            pciDeviceId: card.pci_device_id.unwrap_or(0),
            pciSubSystemId: 0,
            busId: c_array(&format!("{domain:08X}:{bus:02X}:{dev:02X}.{function:X}")),
        };
        // SAFETY: passed on from this function's own contract.
        unsafe { write(pci, answer) }
    }
}

/// The previous version's name for [`nvmlDeviceGetPciInfo_v3`] (the same struct).
///
/// # Safety
///
/// `pci` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v2(
    handle: nvml::nvmlDevice_t,
    pci: *mut nvml::nvmlPciInfo_t,
) -> nvml::nvmlReturn_t {
    // SAFETY: the same contract.
    unsafe { nvmlDeviceGetPciInfo_v3(handle, pci) }
}
