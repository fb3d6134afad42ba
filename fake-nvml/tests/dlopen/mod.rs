//! The fake library as an NVML client holds it: loaded with `dlopen` over a scenario of the
//! test's, each function looked up by name with NVML's C signature. Shared by the test binaries
//! that call it (each its own process: the library keeps one scenario per process).
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unsafe_code
)]

use fake_nvml::support::{Build, library};
use libloading::{Library, Symbol};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{CStr, c_char, c_uint};

pub type Init = unsafe extern "C" fn() -> nvml::nvmlReturn_t;

pub struct Fake {
    lib: Library,
    /// Holds the scenario file while the library may read it.
    _dir: tempfile::TempDir,
}

impl Fake {
    /// The library over `scenario` (its JSON). Call once per test binary, before anything else
    /// reads the environment: it sets `FAKE_NVML_SCENARIO`.
    pub fn load(scenario: &str) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scenario.json");
        std::fs::write(&path, scenario).unwrap();
        // SAFETY: the binary's only test that touches the environment, before the library
        // reads it; no other thread reads it.
        unsafe { std::env::set_var("FAKE_NVML_SCENARIO", &path) };
        Fake {
            // SAFETY: loading the fake runs no initialiser of its own.
            lib: unsafe { Library::new(library(Build::Current).unwrap()) }.unwrap(),
            _dir: dir,
        }
    }

    pub fn get<T>(&self, name: &str) -> Symbol<'_, T> {
        // SAFETY: each name is looked up with NVML's signature for it.
        unsafe { self.lib.get(name.as_bytes()) }.unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// A function of no argument (the inits, `nvmlShutdown`).
    pub fn init(&self, name: &str) -> nvml::nvmlReturn_t {
        // SAFETY: NVML's init functions take nothing.
        unsafe { self.get::<Init>(name)() }
    }

    pub fn handle(&self, index: u32) -> (nvml::nvmlReturn_t, nvml::nvmlDevice_t) {
        let mut device: nvml::nvmlDevice_t = std::ptr::null_mut();
        let f = self
            .get::<unsafe extern "C" fn(c_uint, *mut nvml::nvmlDevice_t) -> nvml::nvmlReturn_t>(
                "nvmlDeviceGetHandleByIndex_v2",
            );
        // SAFETY: a valid out-pointer.
        let ret = unsafe { f(index, &mut device) };
        (ret, device)
    }

    /// A call of NVML's shape `(handle, *mut unsigned int)`.
    pub fn number(&self, name: &str, device: nvml::nvmlDevice_t) -> (nvml::nvmlReturn_t, c_uint) {
        let mut out: c_uint = u32::MAX;
        let f = self
            .get::<unsafe extern "C" fn(nvml::nvmlDevice_t, *mut c_uint) -> nvml::nvmlReturn_t>(
                name,
            );
        // SAFETY: a valid out-pointer.
        (unsafe { f(device, &mut out) }, out)
    }

    /// A call of NVML's shape `(handle, *mut char, length)`.
    pub fn text(&self, name: &str, device: nvml::nvmlDevice_t) -> (nvml::nvmlReturn_t, String) {
        let mut buffer = [0 as c_char; 96];
        let f = self.get::<unsafe extern "C" fn(
            nvml::nvmlDevice_t,
            *mut c_char,
            c_uint,
        ) -> nvml::nvmlReturn_t>(name);
        // SAFETY: the buffer holds 96 chars.
        let ret = unsafe { f(device, buffer.as_mut_ptr(), 96) };
        // SAFETY: NUL-terminated by the library (or still zeroed).
        let text = unsafe { CStr::from_ptr(buffer.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        (ret, text)
    }
}
