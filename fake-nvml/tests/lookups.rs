//! The lookups a device plugin or a container toolkit makes (a card's index, minor number and
//! handle by UUID; the MIG devices under a card), called through `dlopen` as such a client
//! calls them. Its own binary: the library keeps one scenario per process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unsafe_code)]

use fake_nvml::support::{Build, library};
use libloading::{Library, Symbol};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{CString, c_uint};

const OK: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_SUCCESS;
const INVALID: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
const NOT_FOUND: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
const NOT_SUPPORTED: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;

type Device = nvml::nvmlDevice_t;

struct Fake {
    lib: Library,
}

impl Fake {
    fn get<T>(&self, name: &str) -> Symbol<'_, T> {
        // SAFETY: each name is looked up with NVML's signature for it.
        unsafe { self.lib.get(name.as_bytes()) }.unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// A call of NVML's shape `(handle, *mut unsigned int)`.
    fn number(&self, name: &str, device: Device) -> (nvml::nvmlReturn_t, c_uint) {
        let mut out: c_uint = u32::MAX;
        let f = self.get::<unsafe extern "C" fn(Device, *mut c_uint) -> nvml::nvmlReturn_t>(name);
        // SAFETY: a valid out-pointer.
        (unsafe { f(device, &mut out) }, out)
    }

    fn by_index(&self, index: u32) -> Device {
        let mut device: Device = std::ptr::null_mut();
        let f = self.get::<unsafe extern "C" fn(c_uint, *mut Device) -> nvml::nvmlReturn_t>(
            "nvmlDeviceGetHandleByIndex_v2",
        );
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { f(index, &mut device) }, OK);
        device
    }

    fn by_uuid(&self, uuid: &str) -> (nvml::nvmlReturn_t, Device) {
        let mut device: Device = std::ptr::null_mut();
        let text = CString::new(uuid).unwrap();
        let f = self.get::<unsafe extern "C" fn(*const std::ffi::c_char, *mut Device) -> nvml::nvmlReturn_t>(
            "nvmlDeviceGetHandleByUUID",
        );
        // SAFETY: a NUL-terminated string and a valid out-pointer.
        let ret = unsafe { f(text.as_ptr(), &mut device) };
        (ret, device)
    }

    /// A call of NVML's shape `(handle, *mut nvmlDevice_t)`, or with an index between.
    fn mig(&self, device: Device, index: u32) -> (nvml::nvmlReturn_t, Device) {
        let mut out: Device = std::ptr::null_mut();
        let f = self
            .get::<unsafe extern "C" fn(Device, c_uint, *mut Device) -> nvml::nvmlReturn_t>(
                "nvmlDeviceGetMigDeviceHandleByIndex",
            );
        // SAFETY: a valid out-pointer.
        let ret = unsafe { f(device, index, &mut out) };
        (ret, out)
    }

    fn parent(&self, mig: Device) -> (nvml::nvmlReturn_t, Device) {
        let mut out: Device = std::ptr::null_mut();
        let f = self.get::<unsafe extern "C" fn(Device, *mut Device) -> nvml::nvmlReturn_t>(
            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
        );
        // SAFETY: a valid out-pointer.
        let ret = unsafe { f(mig, &mut out) };
        (ret, out)
    }
}

#[test]
fn a_device_plugin_finds_cards_by_index_minor_and_uuid_and_the_mig_devices_under_them() {
    let dir = tempfile::tempdir().unwrap();
    // Listed out of bus order: the carved A100 at 3c, an H100 with MIG off at 3b.
    let scenario = fake_nvml::support::scenario_of(&[
        ("0000:3c:00.0", fake_nvml::scenarios::A100_MIG_ON_CARVED),
        ("0000:3b:00.0", fake_nvml::scenarios::H100_MIG_OFF),
    ])
    .unwrap();
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, scenario).unwrap();
    // SAFETY: this binary's only test, before the library reads the environment.
    unsafe { std::env::set_var("FAKE_NVML_SCENARIO", &path) };
    // SAFETY: loading the fake runs no initialiser of its own.
    let fake = Fake {
        lib: unsafe { Library::new(library(Build::Current).unwrap()) }.unwrap(),
    };
    let init = fake.get::<unsafe extern "C" fn() -> nvml::nvmlReturn_t>("nvmlInit_v2");
    // SAFETY: NVML's signature.
    assert_eq!(unsafe { init() }, OK);

    // Index and minor number are the place in bus order: the H100 (3b) is 0, the A100 (3c) 1.
    let (h100, a100) = (fake.by_index(0), fake.by_index(1));
    assert_eq!(fake.number("nvmlDeviceGetIndex", a100), (OK, 1));
    assert_eq!(fake.number("nvmlDeviceGetIndex", h100), (OK, 0));
    assert_eq!(fake.number("nvmlDeviceGetMinorNumber", a100), (OK, 1));

    // By UUID (the A100's is made of its bus ID); an unknown one is not found.
    assert_eq!(
        fake.by_uuid("GPU-00000000-0000-0000-0000-0000003c0000"),
        (OK, a100)
    );
    assert_eq!(
        fake.by_uuid("GPU-00000000-0000-0000-0000-00000099ff00").0,
        NOT_FOUND
    );

    // The MIG devices: seven at most on an A100 with MIG on, none where MIG is off.
    assert_eq!(fake.number("nvmlDeviceGetMaxMigDeviceCount", a100), (OK, 7));
    assert_eq!(fake.number("nvmlDeviceGetMaxMigDeviceCount", h100), (OK, 0));
    assert_eq!(fake.mig(h100, 0).0, NOT_SUPPORTED);
    // Its two compute instances, by GPU instance: 1 (3g.20gb), then 2 (2g.10gb); the tail up
    // to the maximum is sparse, and past it the index is invalid.
    let (ret, first) = fake.mig(a100, 0);
    assert_eq!(ret, OK);
    let (ret, second) = fake.mig(a100, 1);
    assert_eq!(ret, OK);
    assert_eq!(fake.mig(a100, 2).0, NOT_FOUND);
    assert_eq!(fake.mig(a100, 7).0, INVALID);

    assert_eq!(fake.number("nvmlDeviceIsMigDeviceHandle", first), (OK, 1));
    assert_eq!(fake.number("nvmlDeviceIsMigDeviceHandle", a100), (OK, 0));
    assert_eq!(fake.number("nvmlDeviceGetGpuInstanceId", first), (OK, 1));
    assert_eq!(fake.number("nvmlDeviceGetGpuInstanceId", second), (OK, 2));
    assert_eq!(
        fake.number("nvmlDeviceGetComputeInstanceId", second),
        (OK, 0)
    );
    assert_eq!(
        fake.number("nvmlDeviceGetGpuInstanceId", a100).0,
        NOT_SUPPORTED,
        "a card is no MIG device"
    );
    assert_eq!(fake.parent(second), (OK, a100));
    assert_eq!(fake.parent(a100).0, NOT_SUPPORTED);
}
