//! What the library holds between calls: the scenario read at `nvmlInit_v2`, the handles it
//! gave out (numbers, decoded and checked on every call), and the call log.

use crate::scenario::{Device, GpuInstance, Scenario, error_code};
use nvml_wrapper_sys::bindings as nvml;
use std::io::Write;
use std::sync::{Mutex, MutexGuard};

static SCENARIO: Mutex<Option<Scenario>> = Mutex::new(None);

/// The scenario, locked; poisoning is recovered from (a panic never crosses the C ABI here).
pub(crate) fn scenario() -> MutexGuard<'static, Option<Scenario>> {
    SCENARIO
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Appends one line to the file `FAKE_NVML_LOG` names, if it is set.
pub(crate) fn log(call: std::fmt::Arguments<'_>) {
    let Some(path) = std::env::var_os("FAKE_NVML_LOG") else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{call}");
    }
}

const DEVICE_BASE: usize = 0x1000;
const GPU_INSTANCE_BASE: usize = 0x100_0000;
const COMPUTE_INSTANCE_BASE: usize = 0x1_0000_0000;

/// A handle made of a number; nothing is behind it.
fn handle<T>(value: usize) -> *mut T {
    std::ptr::without_provenance_mut(value)
}

pub(crate) fn device_handle(device: usize) -> nvml::nvmlDevice_t {
    handle(DEVICE_BASE + device)
}

pub(crate) fn gpu_instance_handle(device: usize, instance: usize) -> nvml::nvmlGpuInstance_t {
    handle(GPU_INSTANCE_BASE + (device << 12) + instance)
}

pub(crate) fn compute_instance_handle(
    device: usize,
    instance: usize,
    compute: usize,
) -> nvml::nvmlComputeInstance_t {
    handle(COMPUTE_INSTANCE_BASE + (device << 24) + (instance << 12) + compute)
}

/// vGPU instances are numbers in NVML already.
pub(crate) fn vgpu_handle(device: usize, vgpu: usize) -> u32 {
    u32::try_from((device + 1) * 1000 + vgpu).unwrap_or(u32::MAX)
}

/// Answers of the calls, one way to fail each.
pub(crate) type Answer<T> = Result<T, nvml::nvmlReturn_t>;

pub(crate) const INVALID: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;

/// Runs `call` on the scenario, or `NVML_ERROR_UNINITIALIZED` before `nvmlInit_v2`.
pub(crate) fn with<T>(call: impl FnOnce(&Scenario) -> Answer<T>) -> Answer<T> {
    match scenario().as_ref() {
        Some(scenario) => call(scenario),
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

/// The GPU instance of a GPU-instance handle (with its device's index), failing as the
/// scenario says for `function`.
pub(crate) fn gpu_instance<'a>(
    scenario: &'a Scenario,
    handle: nvml::nvmlGpuInstance_t,
    function: &str,
) -> Answer<(usize, usize, &'a GpuInstance)> {
    let value = handle
        .addr()
        .checked_sub(GPU_INSTANCE_BASE)
        .ok_or(INVALID)?;
    if value >= COMPUTE_INSTANCE_BASE - GPU_INSTANCE_BASE {
        return Err(INVALID);
    }
    let (device_index, instance_index) = (value >> 12, value & 0xfff);
    let device = scenario.devices.get(device_index).ok_or(INVALID)?;
    failure(device, function)?;
    let instance = device.gpu_instances.get(instance_index).ok_or(INVALID)?;
    Ok((device_index, instance_index, instance))
}

/// The indices (device, GPU instance, compute instance) of a compute-instance handle.
pub(crate) fn compute_instance(
    scenario: &Scenario,
    handle: nvml::nvmlComputeInstance_t,
    function: &str,
) -> Answer<(usize, usize, usize)> {
    let value = handle
        .addr()
        .checked_sub(COMPUTE_INSTANCE_BASE)
        .ok_or(INVALID)?;
    let (device_index, instance_index, compute_index) =
        (value >> 24, (value >> 12) & 0xfff, value & 0xfff);
    let device = scenario.devices.get(device_index).ok_or(INVALID)?;
    failure(device, function)?;
    device
        .gpu_instances
        .get(instance_index)
        .and_then(|instance| instance.compute_instances.get(compute_index))
        .ok_or(INVALID)?;
    Ok((device_index, instance_index, compute_index))
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
