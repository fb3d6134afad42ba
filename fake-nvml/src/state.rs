//! What the library holds between calls: the scenario read at `nvmlInit_v2` (or the state file
//! of [`crate::store`]), the handles it gave out (numbers made of IDs, decoded and checked on
//! every call, so a handle of a destroyed instance answers `NVML_ERROR_INVALID_ARGUMENT` and
//! never names another), and the call log.

use crate::call_log;
pub(crate) use crate::complain::complain;
use crate::scenario::{Device, GpuInstance, Scenario, error_code, parse_bus_id};
use crate::store::{self, ChangeError, StateFile};
use nvml_wrapper_sys::bindings as nvml;
use std::sync::{Mutex, MutexGuard};

static SCENARIO: Mutex<Option<Scenario>> = Mutex::new(None);

/// What the state file was when the scenario in memory was last brought up to it: its device,
/// inode, modification time and length. Every write of the store is a whole new file renamed
/// in (a new inode), and one by hand changes the time or the length, so a file whose stamp
/// differs was written since. A write of this process's own is read back once, at the next
/// call, so no other process's write in between is missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    modified_ns: i128,
    len: u64,
}

static SEEN: Mutex<Option<Stamp>> = Mutex::new(None);

fn seen() -> MutexGuard<'static, Option<Stamp>> {
    SEEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The state file's stamp now; `None` when it cannot be read.
fn stamp(state: &StateFile) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(state.path()).ok()?;
    Some(Stamp {
        device: meta.dev(),
        inode: meta.ino(),
        modified_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        len: meta.len(),
    })
}

/// Brings `memory` up to the state file when any process wrote it since it was read, as a
/// driver answers every process from one state: a client that stays initialised sees another
/// process's reset or instances at its next call. A stat per call, a read only after a write.
fn refreshed(memory: &mut Scenario) {
    let Some(state) = StateFile::from_env() else {
        return;
    };
    let now = stamp(&state);
    let mut seen = seen();
    if now.is_some() && *seen == now {
        return;
    }
    match state.read() {
        Ok(current) => {
            *memory = current;
            *seen = now;
        }
        // The state as last read stands; the next call tries again.
        Err(error) => complain(&error),
    }
}

/// The scenario, locked; poisoning is recovered from (a panic never crosses the C ABI here).
pub(crate) fn scenario() -> MutexGuard<'static, Option<Scenario>> {
    SCENARIO
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every call begins here (never under the scenario's lock): its line in the call log
/// ([`call_log::append`], whole), then the call's cost in the scenario's `costs`, slept with
/// no lock held.
pub(crate) fn log(call: std::fmt::Arguments<'_>) {
    let line = call.to_string();
    call_log::append(&line);
    let function = line.split(' ').next().unwrap_or_default();
    let cost = scenario()
        .as_ref()
        .map(|scenario| scenario.costs.call(function))
        .unwrap_or_default();
    if !cost.is_zero() {
        std::thread::sleep(cost);
    }
}

const DEVICE_BASE: usize = 0x1000;
const GPU_INSTANCE_BASE: usize = 0x100_0000;
const COMPUTE_INSTANCE_BASE: usize = 0x1_0000_0000;
/// MIG device handles (`nvmlDevice_t`s of a compute instance) lie above every other handle,
/// so that a device call given one finds no card and answers `NVML_ERROR_INVALID_ARGUMENT`.
const MIG_DEVICE_BASE: usize = 0x100_0000_0000;

/// A handle made of a number; nothing is behind it.
fn handle<T>(value: usize) -> *mut T {
    std::ptr::without_provenance_mut(value)
}

pub(crate) fn device_handle(device: usize) -> nvml::nvmlDevice_t {
    handle(DEVICE_BASE + device)
}

/// IDs are below this (a card holds a handful of instances).
const ID_LIMIT: u32 = 0x1000;

fn id_bits(id: u32) -> usize {
    usize::try_from(id.min(ID_LIMIT - 1)).unwrap_or(0)
}

pub(crate) fn gpu_instance_handle(device: usize, gpu_instance_id: u32) -> nvml::nvmlGpuInstance_t {
    handle(GPU_INSTANCE_BASE + (device << 12) + id_bits(gpu_instance_id))
}

/// A compute instance's card, GPU instance ID and compute instance ID packed in one number, as
/// both its compute-instance handle and its MIG device handle hold them above their bases
/// ([`unpacked_compute_instance`] reads them back).
fn packed_compute_instance(device: usize, gpu_instance_id: u32, compute_instance_id: u32) -> usize {
    (device << 24) + (id_bits(gpu_instance_id) << 12) + id_bits(compute_instance_id)
}

pub(crate) fn compute_instance_handle(
    device: usize,
    gpu_instance_id: u32,
    compute_instance_id: u32,
) -> nvml::nvmlComputeInstance_t {
    handle(
        COMPUTE_INSTANCE_BASE
            + packed_compute_instance(device, gpu_instance_id, compute_instance_id),
    )
}

/// The MIG device of the compute instance `compute_instance_id` in the GPU instance
/// `gpu_instance_id` of the card at `device` (an `nvmlDevice_t`, as NVML gives MIG devices).
pub(crate) fn mig_device_handle(
    device: usize,
    gpu_instance_id: u32,
    compute_instance_id: u32,
) -> nvml::nvmlDevice_t {
    handle(MIG_DEVICE_BASE + packed_compute_instance(device, gpu_instance_id, compute_instance_id))
}

/// The card (its position in the scenario), GPU instance ID and compute instance ID that
/// [`packed_compute_instance`] packed in `value`, failing as the scenario says for `function`;
/// a compute instance that is gone is invalid.
fn unpacked_compute_instance(
    scenario: &Scenario,
    value: usize,
    function: &str,
) -> Answer<(usize, u32, u32)> {
    let (device_index, gi_id, ci_id) = (value >> 24, (value >> 12) & 0xfff, value & 0xfff);
    let (gi_id, ci_id) = (
        u32::try_from(gi_id).map_err(|_| INVALID)?,
        u32::try_from(ci_id).map_err(|_| INVALID)?,
    );
    let device = scenario.devices.get(device_index).ok_or(INVALID)?;
    failure(device, function)?;
    device
        .gpu_instances
        .iter()
        .find(|gi| gi.id == gi_id)
        .and_then(|gi| gi.compute_instances.iter().find(|ci| ci.id == ci_id))
        .ok_or(INVALID)?;
    Ok((device_index, gi_id, ci_id))
}

/// A MIG device handle's card (its position in the scenario), GPU instance ID and compute
/// instance ID, failing as the scenario says for `function`; `None` for a handle that is no
/// MIG device's (a card's handle); one whose compute instance is gone is invalid.
pub(crate) fn mig_device(
    scenario: &Scenario,
    handle: nvml::nvmlDevice_t,
    function: &str,
) -> Answer<Option<(usize, u32, u32)>> {
    let Some(value) = handle.addr().checked_sub(MIG_DEVICE_BASE) else {
        device(scenario, handle, function)?;
        return Ok(None);
    };
    unpacked_compute_instance(scenario, value, function).map(Some)
}

/// vGPU instances are numbers in NVML already.
pub(crate) fn vgpu_handle(device: usize, vgpu: usize) -> u32 {
    u32::try_from((device + 1) * 1000 + vgpu).unwrap_or(u32::MAX)
}

/// Answers of the calls, one way to fail each.
pub(crate) type Answer<T> = Result<T, nvml::nvmlReturn_t>;

pub(crate) const INVALID: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;

/// The position in the scenario of the card NVML numbers `index`: cards are numbered in bus
/// order (domain, bus, device, function), as `nvidia-smi` lists them.
pub(crate) fn device_at_index(scenario: &Scenario, index: u32) -> Answer<usize> {
    type Key = Option<(u32, u8, u8, u8)>;
    let mut order: Vec<(Key, usize)> = scenario
        .devices
        .iter()
        .enumerate()
        .map(|(at, device)| (parse_bus_id(&device.pci_bus_id), at))
        .collect();
    order.sort();
    let index = usize::try_from(index).map_err(|_| INVALID)?;
    order.get(index).map(|(_, at)| *at).ok_or(INVALID)
}

/// The index NVML numbers the card at position `at` of the scenario: the inverse of
/// [`device_at_index`].
pub(crate) fn index_of_device(scenario: &Scenario, at: usize) -> Answer<u32> {
    let key = scenario
        .devices
        .get(at)
        .map(|device| parse_bus_id(&device.pci_bus_id))
        .ok_or(INVALID)?;
    let before = scenario
        .devices
        .iter()
        .enumerate()
        .filter(|(other, device)| (parse_bus_id(&device.pci_bus_id), *other) < (key, at))
        .count();
    u32::try_from(before).map_err(|_| INVALID)
}

/// Runs `call` on the scenario, or `NVML_ERROR_UNINITIALIZED` before `nvmlInit_v2`.
pub(crate) fn with<T>(call: impl FnOnce(&Scenario) -> Answer<T>) -> Answer<T> {
    match scenario().as_mut() {
        Some(scenario) => {
            refreshed(scenario);
            call(scenario)
        }
        None => Err(nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED),
    }
}

/// The error `function` is told to answer on `device`, if any.
pub(crate) fn failure(device: &Device, function: &str) -> Answer<()> {
    match device.fail.get(function).and_then(|name| error_code(name)) {
        Some(code) => Err(code),
        None => Ok(()),
    }
}

/// The device of a device handle, failing as the scenario says for `function`.
pub(crate) fn device<'a>(
    scenario: &'a Scenario,
    handle: nvml::nvmlDevice_t,
    function: &str,
) -> Answer<(usize, &'a Device)> {
    let index = handle.addr().checked_sub(DEVICE_BASE).ok_or(INVALID)?;
    let device = scenario.devices.get(index).ok_or(INVALID)?;
    failure(device, function)?;
    Ok((index, device))
}

/// The device index and GPU instance ID of a GPU-instance handle.
fn decode_gpu_instance(handle: nvml::nvmlGpuInstance_t) -> Answer<(usize, u32)> {
    let value = handle
        .addr()
        .checked_sub(GPU_INSTANCE_BASE)
        .ok_or(INVALID)?;
    if value >= COMPUTE_INSTANCE_BASE - GPU_INSTANCE_BASE {
        return Err(INVALID);
    }
    let id = u32::try_from(value & 0xfff).map_err(|_| INVALID)?;
    Ok((value >> 12, id))
}

/// The GPU instance of a GPU-instance handle (with its device's index), failing as the
/// scenario says for `function`; a handle of an instance that is gone is invalid.
pub(crate) fn gpu_instance<'a>(
    scenario: &'a Scenario,
    handle: nvml::nvmlGpuInstance_t,
    function: &str,
) -> Answer<(usize, &'a GpuInstance)> {
    let (device_index, id) = decode_gpu_instance(handle)?;
    let device = scenario.devices.get(device_index).ok_or(INVALID)?;
    failure(device, function)?;
    let instance = device
        .gpu_instances
        .iter()
        .find(|gi| gi.id == id)
        .ok_or(INVALID)?;
    Ok((device_index, instance))
}

/// The device index, GPU instance ID and compute instance ID of a compute-instance handle,
/// failing as the scenario says for `function`; one that is gone is invalid.
pub(crate) fn compute_instance(
    scenario: &Scenario,
    handle: nvml::nvmlComputeInstance_t,
    function: &str,
) -> Answer<(usize, u32, u32)> {
    let value = handle
        .addr()
        .checked_sub(COMPUTE_INSTANCE_BASE)
        .ok_or(INVALID)?;
    unpacked_compute_instance(scenario, value, function)
}

/// The device index of a GPU-instance handle, for a change (which finds the instance itself).
pub(crate) fn gpu_instance_of(handle: nvml::nvmlGpuInstance_t) -> Answer<(usize, u32)> {
    decode_gpu_instance(handle)
}

/// Changes the state: the device at `device_index` (failing as the scenario says for
/// `function`), through `change`. With a state file the change is made to the file as it is now,
/// under its lock, and written back whole; without one, in memory. A refused change writes
/// nothing.
pub(crate) fn change<T>(
    device_index: usize,
    function: &str,
    change: impl FnOnce(&mut Device) -> Answer<T>,
) -> Answer<T> {
    let mut guard = scenario();
    let Some(memory) = guard.as_mut() else {
        return Err(nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED);
    };
    let on = |scenario: &mut Scenario| -> Answer<T> {
        let device = scenario.devices.get_mut(device_index).ok_or(INVALID)?;
        failure(device, function)?;
        change(device)
    };
    let Some(state) = StateFile::from_env() else {
        return on(memory);
    };
    let delay = |state: &Scenario| {
        let ms = state
            .devices
            .get(device_index)
            .map_or(0, |device| device.write_delay_ms);
        std::time::Duration::from_millis(ms)
    };
    match store::change(&state, delay, on) {
        Ok((state, answer)) => {
            *memory = state;
            Ok(answer)
        }
        Err(ChangeError::Refused(code)) => Err(code),
        Err(ChangeError::State(error)) => {
            complain(&error);
            Err(nvml::nvmlReturn_enum_NVML_ERROR_UNKNOWN)
        }
    }
}

/// The device and vGPU of a vGPU instance number.
pub(crate) fn vgpu<'a>(
    scenario: &'a Scenario,
    instance: u32,
    function: &str,
) -> Answer<(&'a Device, &'a crate::scenario::Vgpu)> {
    let instance = usize::try_from(instance).map_err(|_| INVALID)?;
    let (device_index, vgpu_index) = (instance / 1000, instance % 1000);
    let device = device_index
        .checked_sub(1)
        .and_then(|index| scenario.devices.get(index))
        .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
    failure(device, function)?;
    let vgpu = device
        .vgpus
        .get(vgpu_index)
        .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
    Ok((device, vgpu))
}

/// The code NVML returns for an answer.
pub(crate) fn code(answer: Answer<()>) -> nvml::nvmlReturn_t {
    match answer {
        Ok(()) => nvml::nvmlReturn_enum_NVML_SUCCESS,
        Err(code) => code,
    }
}
