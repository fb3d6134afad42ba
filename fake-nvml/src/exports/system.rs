//! Starting and stopping, versions, error strings.

use crate::out::write_str;
use crate::scenario::{ERRORS, Scenario};
use crate::state::{code, log, scenario, with};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{c_char, c_uint};

/// Reads the state file `FAKE_NVML_STATE` names (made from the scenario when absent), else the
/// scenario `FAKE_NVML_SCENARIO` names; a missing or bad one answers
/// `NVML_ERROR_UNINITIALIZED`, with why on stderr.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> nvml::nvmlReturn_t {
    log(format_args!("nvmlInit_v2"));
    let loaded = match crate::store::state_path() {
        Some(path) => crate::store::load(&path),
        None => Scenario::from_env(),
    };
    match loaded {
        Ok(loaded) => {
            *scenario() = Some(loaded);
            nvml::nvmlReturn_enum_NVML_SUCCESS
        }
        Err(error) => {
            eprintln!("fake-nvml: {error}");
            nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED
        }
    }
}

/// [`nvmlInit_v2`]; the flags change nothing here.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvml::nvmlReturn_t {
    nvmlInit_v2()
}

/// Forgets the scenario.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> nvml::nvmlReturn_t {
    log(format_args!("nvmlShutdown"));
    match scenario().take() {
        Some(_) => nvml::nvmlReturn_enum_NVML_SUCCESS,
        None => nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
    }
}

/// The `NVML_ERROR_*` name of a code, as a static C string.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: nvml::nvmlReturn_t) -> *const c_char {
    const NAMES: [&std::ffi::CStr; 3] = [c"Success", c"Unknown Error", c"fake-nvml error"];
    let known = ERRORS.iter().any(|(_, known)| *known == result);
    match result {
        nvml::nvmlReturn_enum_NVML_SUCCESS => NAMES[0].as_ptr(),
        nvml::nvmlReturn_enum_NVML_ERROR_UNKNOWN => NAMES[1].as_ptr(),
        _ if known => NAMES[2].as_ptr(),
        _ => NAMES[1].as_ptr(),
    }
}

/// The scenario's `driver_version`.
///
/// # Safety
///
/// `version` is null or valid for `length` chars.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlSystemGetDriverVersion"));
    // SAFETY: passed on from this function's own contract.
    code(with(|s| unsafe {
        write_str(version, length, &s.driver_version)
    }))
}

/// The scenario's `nvml_version`.
///
/// # Safety
///
/// `version` is null or valid for `length` chars.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlSystemGetNVMLVersion"));
    // SAFETY: passed on from this function's own contract.
    code(with(|s| unsafe {
        write_str(version, length, &s.nvml_version)
    }))
}

/// The name of a process holding a card (a scenario's `clients`); `NVML_ERROR_NOT_FOUND` for
/// another pid.
///
/// # Safety
///
/// `name` is null or valid for `length` chars.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetProcessName(
    pid: c_uint,
    name: *mut c_char,
    length: c_uint,
) -> nvml::nvmlReturn_t {
    log(format_args!("nvmlSystemGetProcessName {pid}"));
    code(with(|s| {
        let client = s
            .devices
            .iter()
            .flat_map(|device| &device.clients)
            .find(|client| client.pid == pid)
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(name, length, &client.name) }
    }))
}
