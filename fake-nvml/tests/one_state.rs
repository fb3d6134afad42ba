//! One state for every process, as a driver has: a client that stays initialised (a device
//! plugin, a monitor) sees at its next call what another process did to the cards since, here
//! `fake-nvml reset` completing a pending MIG mode, and instances another writer made.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unsafe_code)]

use fake_nvml::StateFile;
use fake_nvml::scenarios::A100_MIG_OFF_ON_PENDING;
use fake_nvml::support::{Build, fake_nvml_binary, library};
use libloading::Library;
use nvml_wrapper_sys::bindings as nvml;
use std::ffi::c_uint;

type GetMigMode =
    unsafe extern "C" fn(nvml::nvmlDevice_t, *mut c_uint, *mut c_uint) -> nvml::nvmlReturn_t;
type GpuInstanceById = unsafe extern "C" fn(
    nvml::nvmlDevice_t,
    c_uint,
    *mut nvml::nvmlGpuInstance_t,
) -> nvml::nvmlReturn_t;
type HandleByIndex = unsafe extern "C" fn(c_uint, *mut nvml::nvmlDevice_t) -> nvml::nvmlReturn_t;

#[test]
fn a_client_that_stays_initialised_sees_another_processs_reset_and_instances_at_its_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, A100_MIG_OFF_ON_PENDING).unwrap();
    let state = dir.path().join("state.json");
    // SAFETY: this binary's only test, before the library reads the environment.
    unsafe {
        std::env::set_var("FAKE_NVML_SCENARIO", &scenario);
        std::env::set_var("FAKE_NVML_STATE", &state);
        std::env::remove_var("FAKE_NVML_SYSFS");
        std::env::remove_var("FAKE_NVML_LOG");
    }
    // SAFETY: loading the fake runs no initialiser of its own.
    let lib = unsafe { Library::new(library(Build::Current).unwrap()) }.unwrap();
    // SAFETY: each symbol is looked up with NVML's signature for it, and called with valid
    // out-pointers.
    let (mode, instance) = unsafe {
        let init = lib
            .get::<unsafe extern "C" fn() -> nvml::nvmlReturn_t>(b"nvmlInit_v2")
            .unwrap();
        assert_eq!(init(), nvml::nvmlReturn_enum_NVML_SUCCESS);
        let by_index = lib
            .get::<HandleByIndex>(b"nvmlDeviceGetHandleByIndex_v2")
            .unwrap();
        let mut device: nvml::nvmlDevice_t = std::ptr::null_mut();
        assert_eq!(by_index(0, &mut device), nvml::nvmlReturn_enum_NVML_SUCCESS);
        let get = lib.get::<GetMigMode>(b"nvmlDeviceGetMigMode").unwrap();
        let by_id = lib
            .get::<GpuInstanceById>(b"nvmlDeviceGetGpuInstanceById")
            .unwrap();
        (
            move || {
                let (mut current, mut pending) = (u32::MAX, u32::MAX);
                assert_eq!(
                    get(device, &mut current, &mut pending),
                    nvml::nvmlReturn_enum_NVML_SUCCESS
                );
                (current, pending)
            },
            move |id| {
                let mut instance: nvml::nvmlGpuInstance_t = std::ptr::null_mut();
                by_id(device, id, &mut instance)
            },
        )
    };
    assert_eq!(mode(), (0, 1), "MIG off, on pending");
    let bus_id = StateFile::new(&state).read().unwrap().devices[0]
        .pci_bus_id
        .clone();
    // Another process resets the card, as `nvidia-smi --gpu-reset` would.
    let reset = std::process::Command::new(fake_nvml_binary().unwrap())
        .args(["reset", "--device", &bus_id])
        .output()
        .unwrap();
    assert!(reset.status.success(), "{reset:?}");
    assert_eq!(mode(), (1, 1), "the reset completed the pending mode");
    // Another writer of the state makes a GPU instance (1g.5gb at slice 0), by hand.
    assert_ne!(
        instance(9),
        nvml::nvmlReturn_enum_NVML_SUCCESS,
        "no instance 9 yet"
    );
    let made: fake_nvml::GpuInstance = serde_json::from_value(serde_json::json!({
        "id": 9, "profile_id": 19, "placement": {"start": 0, "size": 1},
        "compute_instances": [],
    }))
    .unwrap();
    StateFile::new(&state)
        .change(|state| {
            state.devices[0].gpu_instances.push(made);
            Ok::<(), std::convert::Infallible>(())
        })
        .unwrap();
    assert_eq!(
        instance(9),
        nvml::nvmlReturn_enum_NVML_SUCCESS,
        "the instance another writer made"
    );
    // Another writer of the state turns MIG off again, by hand.
    StateFile::new(&state)
        .change(|state| {
            state.devices[0].gpu_instances.clear();
            state.devices[0].mig_mode = fake_nvml::MigMode::Mode {
                current: 0,
                pending: 0,
            };
            Ok::<(), std::convert::Infallible>(())
        })
        .unwrap();
    assert_eq!(mode(), (0, 0), "the change by another writer");
}
