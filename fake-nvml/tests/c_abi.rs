//! The library as an NVML client sees it: loaded with `dlopen`, every function of the NVML
//! surface MIG clients use looked up by name and called with NVML's C signature, answering as
//! NVML documents; and `nm -D` lists them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unsafe_code)]

mod dlopen;

use dlopen::Fake;
use fake_nvml::support::{Build, library};
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::{CStr, c_char, c_uint};

/// The functions of the MIG clients' surface (fake-nvml's README, "What is modelled").
const SURFACE: [&str; 17] = [
    "nvmlInit",
    "nvmlInit_v2",
    "nvmlInitWithFlags",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetName",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceCreateGpuInstance",
];

/// The functions the built library exports, as `nm -D --defined-only` lists them.
fn exported() -> std::collections::BTreeSet<String> {
    let output = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library(Build::Current).unwrap())
        .output()
        .expect("nm (binutils) runs");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [_, "T", name] => Some(name.to_owned()),
                _ => None,
            },
        )
        .collect()
}

#[test]
fn nm_lists_every_function_of_the_surface() {
    let exported = exported();
    for name in SURFACE {
        assert!(exported.contains(name), "{name} is not exported");
    }
}

/// Every function `nvml.h` declares, as nvml-wrapper-sys (the binding this crate is built on)
/// binds them: the `pub unsafe fn nvml…` methods of its generated `bindings.rs`, in the
/// registry's copy of the version the workspace's lock file names (built, so there; no network).
fn functions_the_binding_declares() -> Vec<String> {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.lock"))
        .expect("the workspace's Cargo.lock");
    let version = lock
        .split("[[package]]")
        .find(|package| package.contains("name = \"nvml-wrapper-sys\""))
        .and_then(|package| {
            package
                .lines()
                .find_map(|line| line.strip_prefix("version = \""))
                .and_then(|rest| rest.strip_suffix('"'))
        })
        .expect("nvml-wrapper-sys in the lock file")
        .to_owned();
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let bindings = std::fs::read_dir(home.join("registry/src"))
        .expect("the registry's sources")
        .filter_map(Result::ok)
        .map(|index| {
            index
                .path()
                .join(format!("nvml-wrapper-sys-{version}/src/bindings.rs"))
        })
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("no nvml-wrapper-sys-{version} under {}", home.display()));
    let text = std::fs::read_to_string(&bindings).unwrap();
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("pub unsafe fn "))
        .filter_map(|rest| rest.split('(').next())
        .filter(|name| name.starts_with("nvml"))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn every_function_nvml_h_declares_is_exported() {
    let declared = functions_the_binding_declares();
    assert!(
        declared.len() > 300,
        "the binding lists {} functions",
        declared.len()
    );
    let exported = exported();
    let missing: Vec<&String> = declared
        .iter()
        .filter(|name| !exported.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "declared by nvml.h, not exported: {missing:?}"
    );
}

const OK: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_SUCCESS;

#[test]
fn every_function_of_the_surface_answers_through_dlopen_as_nvml_documents() {
    let fake = Fake::load(
        &fake_nvml::support::scenario_of(&[
            ("0000:3c:00.0", fake_nvml::scenarios::PART_A100_SXM4_80GB),
            ("0000:3b:00.0", fake_nvml::scenarios::PART_H100_80GB),
        ])
        .unwrap(),
    );
    let count = |fake: &Fake, name: &str| {
        let mut n: c_uint = 0;
        let f = fake.get::<unsafe extern "C" fn(*mut c_uint) -> nvml::nvmlReturn_t>(name);
        // SAFETY: a valid out-pointer.
        (unsafe { f(&mut n) }, n)
    };
    let shutdown = |fake: &Fake| fake.init("nvmlShutdown");

    // Reference counting: every init counts, and the library stays until the last shutdown.
    assert_eq!(
        shutdown(&fake),
        nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
        "a shutdown before any init"
    );
    assert_eq!(
        count(&fake, "nvmlDeviceGetCount_v2").0,
        nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED
    );
    assert_eq!(fake.init("nvmlInit_v2"), OK);
    assert_eq!(fake.init("nvmlInit"), OK);
    let with_flags =
        fake.get::<unsafe extern "C" fn(c_uint) -> nvml::nvmlReturn_t>("nvmlInitWithFlags");
    // SAFETY: NVML's signature.
    assert_eq!(unsafe { with_flags(0) }, OK);
    assert_eq!(shutdown(&fake), OK);
    assert_eq!(shutdown(&fake), OK);
    assert_eq!(
        count(&fake, "nvmlDeviceGetCount_v2"),
        (OK, 2),
        "one init is left"
    );

    // Count and handles by index, in bus order; the plain names answer alike.
    assert_eq!(count(&fake, "nvmlDeviceGetCount"), (OK, 2));
    let (ret, first) = fake.handle(0);
    assert_eq!(ret, OK);
    assert_eq!(
        fake.text("nvmlDeviceGetName", first),
        (OK, "NVIDIA H100 80GB HBM3".to_owned())
    );
    let (_, second) = fake.handle(1);
    assert_eq!(
        fake.text("nvmlDeviceGetName", second),
        (OK, "NVIDIA A100-SXM4-80GB".to_owned())
    );
    assert_eq!(
        fake.handle(2).0,
        nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT
    );
    let mut plain: nvml::nvmlDevice_t = std::ptr::null_mut();
    let by_index = fake
        .get::<unsafe extern "C" fn(c_uint, *mut nvml::nvmlDevice_t) -> nvml::nvmlReturn_t>(
            "nvmlDeviceGetHandleByIndex",
        );
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { by_index(0, &mut plain) }, OK);
    assert_eq!(plain, first);

    // UUID (derived from the bus ID where the scenario gives none), serial (derived from the
    // UUID: thirteen digits as a board's, starting with 0 as no real board's does), one per card.
    let (ret, uuid) = fake.text("nvmlDeviceGetUUID", first);
    assert_eq!(ret, OK);
    assert!(uuid.starts_with("GPU-"), "{uuid}");
    let (ret, serial) = fake.text("nvmlDeviceGetSerial", first);
    assert_eq!(ret, OK);
    assert!(
        serial.len() == 13 && serial.starts_with('0') && serial.bytes().all(|b| b.is_ascii_digit()),
        "{serial}"
    );
    assert_ne!(fake.text("nvmlDeviceGetSerial", second), (OK, serial));

    // Architecture: each part's, as nvml.h numbers it (HOPPER 9, AMPERE 7).
    let architecture = fake.get::<unsafe extern "C" fn(
        nvml::nvmlDevice_t,
        *mut nvml::nvmlDeviceArchitecture_t,
    ) -> nvml::nvmlReturn_t>("nvmlDeviceGetArchitecture");
    let mut number: nvml::nvmlDeviceArchitecture_t = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { architecture(first, &mut number) }, OK);
    assert_eq!(number, nvml::NVML_DEVICE_ARCH_HOPPER);
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { architecture(second, &mut number) }, OK);
    assert_eq!(number, nvml::NVML_DEVICE_ARCH_AMPERE);

    // Memory, both structs: each card's published total.
    let v1 = fake.get::<unsafe extern "C" fn(nvml::nvmlDevice_t, *mut nvml::nvmlMemory_t) -> nvml::nvmlReturn_t>("nvmlDeviceGetMemoryInfo");
    let mut memory = nvml::nvmlMemory_t {
        total: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { v1(first, &mut memory) }, OK);
    assert_eq!(memory.total, 81559 << 20);
    assert_eq!(memory.free + memory.used, memory.total);
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { v1(second, &mut memory) }, OK);
    assert_eq!(memory.total, 81920 << 20);
    let v2 =
        fake.get::<unsafe extern "C" fn(
            nvml::nvmlDevice_t,
            *mut nvml::nvmlMemory_v2_t,
        ) -> nvml::nvmlReturn_t>("nvmlDeviceGetMemoryInfo_v2");
    let stamp = u32::try_from(std::mem::size_of::<nvml::nvmlMemory_v2_t>()).unwrap() | (2 << 24);
    let mut memory2 = nvml::nvmlMemory_v2_t {
        version: stamp,
        total: 0,
        reserved: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: a valid, stamped out-pointer.
    assert_eq!(unsafe { v2(first, &mut memory2) }, OK);
    assert_eq!(memory2.total, 81559 << 20);
    memory2.version = 1;
    // SAFETY: as above.
    assert_eq!(
        unsafe { v2(first, &mut memory2) },
        nvml::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH
    );

    // PCI: both bus ID forms, the device ID.
    let pci =
        fake.get::<unsafe extern "C" fn(
            nvml::nvmlDevice_t,
            *mut nvml::nvmlPciInfo_t,
        ) -> nvml::nvmlReturn_t>("nvmlDeviceGetPciInfo_v3");
    // SAFETY: zeroes are a valid nvmlPciInfo_t.
    let mut info: nvml::nvmlPciInfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { pci(first, &mut info) }, OK);
    // SAFETY: NUL-terminated by the library.
    let bus_id = unsafe { CStr::from_ptr(info.busId.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        (bus_id.as_str(), info.bus, info.pciDeviceId),
        ("00000000:3B:00.0", 0x3b, 0x2330_10de)
    );

    // A GPU instance where the driver chooses: refused with MIG off; then the lowest free
    // placement, twice; a third does not fit.
    let create = fake.get::<unsafe extern "C" fn(
        nvml::nvmlDevice_t,
        c_uint,
        *mut nvml::nvmlGpuInstance_t,
    ) -> nvml::nvmlReturn_t>("nvmlDeviceCreateGpuInstance");
    let mut gi: nvml::nvmlGpuInstance_t = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(
        unsafe { create(first, 9, &mut gi) },
        nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED
    );
    let set_mode = fake.get::<unsafe extern "C" fn(
        nvml::nvmlDevice_t,
        c_uint,
        *mut nvml::nvmlReturn_t,
    ) -> nvml::nvmlReturn_t>("nvmlDeviceSetMigMode");
    let mut activation = 0;
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { set_mode(first, 1, &mut activation) }, OK);
    assert_eq!(activation, OK, "Hopper: at once");
    let get_info = fake.get::<unsafe extern "C" fn(
        nvml::nvmlGpuInstance_t,
        *mut nvml::nvmlGpuInstanceInfo_t,
    ) -> nvml::nvmlReturn_t>("nvmlGpuInstanceGetInfo");
    for start in [0, 4] {
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { create(first, 9, &mut gi) }, OK);
        // SAFETY: zeroes are a valid info struct.
        let mut gi_info: nvml::nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid out-pointer.
        assert_eq!(unsafe { get_info(gi, &mut gi_info) }, OK);
        assert_eq!(
            (gi_info.placement.start, gi_info.placement.size),
            (start, 4)
        );
    }
    // SAFETY: a valid out-pointer.
    assert_eq!(
        unsafe { create(first, 9, &mut gi) },
        nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES
    );

    // NVML's own words for its codes.
    let error_string =
        fake.get::<unsafe extern "C" fn(nvml::nvmlReturn_t) -> *const c_char>("nvmlErrorString");
    let said = |code| {
        // SAFETY: a static C string.
        unsafe { CStr::from_ptr(error_string(code)) }
            .to_string_lossy()
            .into_owned()
    };
    assert_eq!(
        said(nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED),
        "Not Supported"
    );
    assert_eq!(
        said(nvml::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES),
        "Insufficient Resources"
    );
    assert_eq!(
        said(nvml::nvmlReturn_enum_NVML_ERROR_IN_USE),
        "In use by another client"
    );
    assert_eq!(said(9999), "Unknown Error");

    // A function not modelled answers FUNCTION_NOT_FOUND, never a missing symbol.
    assert_eq!(
        fake.init("nvmlDeviceGetTemperature"),
        nvml::nvmlReturn_enum_NVML_ERROR_FUNCTION_NOT_FOUND
    );

    assert_eq!(shutdown(&fake), OK);
    assert_eq!(
        shutdown(&fake),
        OK,
        "a shutdown past the count is no error (nvml.h)"
    );
    assert_eq!(
        count(&fake, "nvmlDeviceGetCount_v2").0,
        nvml::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED,
        "and the library is shut down"
    );
}
