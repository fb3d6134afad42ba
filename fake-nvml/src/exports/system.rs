//! Starting and stopping, versions, error strings.

use crate::out::write_str;
use crate::state::{code, complain, log, scenario, with};
use crate::store::{self, StateFile};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{c_char, c_uint};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many `nvmlInit*` calls the process made that no `nvmlShutdown` has answered: NVML counts
/// them, and "shutdown only occurs when the reference count reaches zero" (nvml.h,
/// `nvmlShutdown`).
static INITS: Mutex<u32> = Mutex::new(0);

fn inits() -> std::sync::MutexGuard<'static, u32> {
    INITS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One initialisation: the first reads the state file `FAKE_NVML_STATE` names (made from the
/// scenario when absent), else the scenario `FAKE_NVML_SCENARIO` names — a missing or bad one
/// answers `NVML_ERROR_UNINITIALIZED`, with why on stderr, and counts nothing; every one that
/// succeeds counts once.
fn init(call: &str) -> nvml::nvmlReturn_t {
    log(format_args!("{call}"));
    let mut count = inits();
    if *count == 0 {
        let loaded = match StateFile::from_env() {
            Some(state) => state.load(),
            None => store::scenario_from_env(),
        };
        match loaded {
            Ok(loaded) => *scenario() = Some(loaded),
            Err(error) => {
                complain(&error);
                return nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
            }
        }
    }
    *count = count.saturating_add(1);
    EVER_INITIALISED.store(true, Ordering::SeqCst);
    nvml::nvmlReturn_enum_NVML_SUCCESS
}

/// Initialises NVML: reference-counted, as NVML's is.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> nvml::nvmlReturn_t {
    init("nvmlInit_v2")
}

/// The first version's name for [`nvmlInit_v2`], which old clients still call.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit() -> nvml::nvmlReturn_t {
    init("nvmlInit")
}

/// [`nvmlInit_v2`]; the flags (`NVML_INIT_FLAG_NO_GPUS`, `NVML_INIT_FLAG_NO_ATTACH`) change
/// nothing here: every scenario card is attached, and a scenario without cards initialises.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(flags: c_uint) -> nvml::nvmlReturn_t {
    init(&format!("nvmlInitWithFlags {flags}"))
}

/// Whether an `nvmlInit*` call of this process ever succeeded.
static EVER_INITIALISED: AtomicBool = AtomicBool::new(false);

/// Counts one initialisation down; the last forgets the scenario. One past the count answers
/// `NVML_SUCCESS` ("for backwards compatibility, no error is reported if nvmlShutdown() is
/// called more times than nvmlInit()", nvml.h), and one before any initialisation succeeded
/// `NVML_ERROR_UNINITIALIZED` ("the library has not been successfully initialized").
#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> nvml::nvmlReturn_t {
    log(format_args!("nvmlShutdown"));
    let mut count = inits();
    match *count {
        0 if EVER_INITIALISED.load(Ordering::SeqCst) => nvml::nvmlReturn_enum_NVML_SUCCESS,
        0 => nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
        1 => {
            *count = 0;
            *scenario() = None;
            nvml::nvmlReturn_enum_NVML_SUCCESS
        }
        more => {
            *count = more - 1;
            nvml::nvmlReturn_enum_NVML_SUCCESS
        }
    }
}

/// NVML's own text for each code, as NVIDIA's DCGM keeps NVML's table
/// (`sdk/nvidia/nvml/nvml_error_strings.h`); a code that table does not name (`NO_DATA` and
/// the later ones) is `Unknown Error`, as NVML answers a code it does not know.
const ERROR_TEXTS: [(nvml::nvmlReturn_t, &std::ffi::CStr); 23] = [
    (nvml::nvmlReturn_enum_NVML_SUCCESS, c"Success"),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
        c"Uninitialized",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT,
        c"Invalid Argument",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED,
        c"Not Supported",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_NO_PERMISSION,
        c"Insufficient Permissions",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_ALREADY_INITIALIZED,
        c"Already Initialized",
    ),
    (nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND, c"Not Found"),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE,
        c"Insufficient Size",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_POWER,
        c"Insufficient External Power",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED,
        c"Driver Not Loaded",
    ),
    (nvml::nvmlReturn_enum_NVML_ERROR_TIMEOUT, c"Timeout"),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_IRQ_ISSUE,
        c"Interrupt Request Issue",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_LIBRARY_NOT_FOUND,
        c"NVML Shared Library Not Found",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_FUNCTION_NOT_FOUND,
        c"Function Not Found",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_CORRUPTED_INFOROM,
        c"Corrupted infoROM",
    ),
    (nvml::nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST, c"GPU is lost"),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_RESET_REQUIRED,
        c"GPU requires reset",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_OPERATING_SYSTEM,
        c"GPU access blocked by the operating system",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_LIB_RM_VERSION_MISMATCH,
        c"Driver/library version mismatch",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_IN_USE,
        c"In use by another client",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_MEMORY,
        c"Insufficient Memory",
    ),
    (
        nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES,
        c"Insufficient Resources",
    ),
    (nvml::nvmlReturn_enum_NVML_ERROR_UNKNOWN, c"Unknown Error"),
];

/// The text of a code, a static C string.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: nvml::nvmlReturn_t) -> *const c_char {
    ERROR_TEXTS
        .iter()
        .find(|(code, _)| *code == result)
        .map_or(c"Unknown Error", |(_, text)| *text)
        .as_ptr()
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

answered! {
    /// The name of a process holding a card (a scenario's `clients`); `NVML_ERROR_NOT_FOUND` for
    /// another pid.
    ///
    /// # Safety
    ///
    /// `name` is null or valid for `length` chars.
    fn nvmlSystemGetProcessName(
        pid: c_uint,
        name: *mut c_char,
        length: c_uint,
    ) logs("{}", pid) |s| {
        let client = s
            .devices
            .iter()
            .flat_map(|device| &device.clients)
            .find(|client| client.pid == pid)
            .ok_or(nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND)?;
        // SAFETY: passed on from this function's own contract.
        unsafe { write_str(name, length, &client.name) }
    }
}
