//! The lookups a device plugin or a container toolkit makes (a card's index, minor number and
//! handle by UUID; the MIG devices under a card), called through `dlopen` as such a client
//! calls them. Its own binary: the library keeps one scenario per process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unsafe_code)]

mod dlopen;

use dlopen::Fake;
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{CString, c_uint};

const OK: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_SUCCESS;
const INVALID: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
const NOT_FOUND: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
const NOT_SUPPORTED: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;

type Device = nvml::nvmlDevice_t;

fn by_index(fake: &Fake, index: u32) -> Device {
    let (ret, device) = fake.handle(index);
    assert_eq!(ret, OK);
    device
}

fn by_uuid(fake: &Fake, uuid: &str) -> (nvml::nvmlReturn_t, Device) {
    let mut device: Device = std::ptr::null_mut();
    let text = CString::new(uuid).unwrap();
    let f = fake
        .get::<unsafe extern "C" fn(*const std::ffi::c_char, *mut Device) -> nvml::nvmlReturn_t>(
            "nvmlDeviceGetHandleByUUID",
        );
    // SAFETY: a NUL-terminated string and a valid out-pointer.
    let ret = unsafe { f(text.as_ptr(), &mut device) };
    (ret, device)
}

/// The MIG device at `index` under `device`.
fn mig(fake: &Fake, device: Device, index: u32) -> (nvml::nvmlReturn_t, Device) {
    let mut out: Device = std::ptr::null_mut();
    let f = fake.get::<unsafe extern "C" fn(Device, c_uint, *mut Device) -> nvml::nvmlReturn_t>(
        "nvmlDeviceGetMigDeviceHandleByIndex",
    );
    // SAFETY: a valid out-pointer.
    let ret = unsafe { f(device, index, &mut out) };
    (ret, out)
}

fn parent(fake: &Fake, mig: Device) -> (nvml::nvmlReturn_t, Device) {
    let mut out: Device = std::ptr::null_mut();
    let f = fake.get::<unsafe extern "C" fn(Device, *mut Device) -> nvml::nvmlReturn_t>(
        "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
    );
    // SAFETY: a valid out-pointer.
    let ret = unsafe { f(mig, &mut out) };
    (ret, out)
}

#[test]
fn a_device_plugin_finds_cards_by_index_minor_and_uuid_and_the_mig_devices_under_them() {
    // Listed out of bus order: the carved A100 at 3c, an H100 with MIG off at 3b.
    let fake = Fake::load(
        &fake_nvml::support::scenario_of(&[
            ("0000:3c:00.0", fake_nvml::scenarios::A100_MIG_ON_CARVED),
            ("0000:3b:00.0", fake_nvml::scenarios::H100_MIG_OFF),
        ])
        .unwrap(),
    );
    let init = fake.get::<unsafe extern "C" fn() -> nvml::nvmlReturn_t>("nvmlInit_v2");
    // SAFETY: NVML's signature.
    assert_eq!(unsafe { init() }, OK);

    // Index and minor number are the place in bus order: the H100 (3b) is 0, the A100 (3c) 1.
    let (h100, a100) = (by_index(&fake, 0), by_index(&fake, 1));
    assert_eq!(fake.number("nvmlDeviceGetIndex", a100), (OK, 1));
    assert_eq!(fake.number("nvmlDeviceGetIndex", h100), (OK, 0));
    assert_eq!(fake.number("nvmlDeviceGetMinorNumber", a100), (OK, 1));

    // By UUID (the A100's is made of its bus ID); an unknown one is not found.
    assert_eq!(
        by_uuid(&fake, "GPU-00000000-0000-0000-0000-0000003c0000"),
        (OK, a100)
    );
    assert_eq!(
        by_uuid(&fake, "GPU-00000000-0000-0000-0000-00000099ff00").0,
        NOT_FOUND
    );

    // The MIG devices: seven at most on an A100 with MIG on, none where MIG is off.
    assert_eq!(fake.number("nvmlDeviceGetMaxMigDeviceCount", a100), (OK, 7));
    assert_eq!(fake.number("nvmlDeviceGetMaxMigDeviceCount", h100), (OK, 0));
    assert_eq!(mig(&fake, h100, 0).0, NOT_SUPPORTED);
    // Its two compute instances, by GPU instance: 1 (3g.20gb), then 2 (2g.10gb); the tail up
    // to the maximum is sparse, and past it the index is invalid.
    let (ret, first) = mig(&fake, a100, 0);
    assert_eq!(ret, OK);
    let (ret, second) = mig(&fake, a100, 1);
    assert_eq!(ret, OK);
    assert_eq!(mig(&fake, a100, 2).0, NOT_FOUND);
    assert_eq!(mig(&fake, a100, 7).0, INVALID);

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
    assert_eq!(parent(&fake, second), (OK, a100));
    assert_eq!(parent(&fake, a100).0, NOT_SUPPORTED);
}
