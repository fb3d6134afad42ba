//! Every part's GPU-instance profile table as an NVML client reads it from the fake (loaded with
//! `dlopen`, every index of NVML's profile enum asked with `nvmlDeviceGetGpuInstanceProfileInfoV`)
//! against the published table of `scenarios/captures/profile-tables.tsv`, whose rows name their
//! sources (`tests/it/geometry.rs` holds the rows to those sources). Its own binary: the library
//! keeps one scenario per process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unsafe_code)]

mod dlopen;
mod profile_table;

use dlopen::Fake;
use nvml_wrapper_sys::bindings as nvml;
use profile_table::{Numbers, rows};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char, c_uint};

const OK: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_SUCCESS;
const NOT_SUPPORTED: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
const INVALID: nvml::nvmlReturn_t = nvml::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;

/// `NVML_GPU_INSTANCE_PROFILE_COUNT` of the R570 driver every part claims (CUDA 12.8's nvml.h:
/// `0xD`, after the three GFX profiles): where `INVALID_ARGUMENT` begins.
const ENUM_END_R570: u32 = 13;

type Device = nvml::nvmlDevice_t;

/// What NVML answers for the profile at `index` of `device`: its name and numbers, or the
/// error.
fn profile_info(fake: &Fake, device: Device, index: u32) -> Result<(String, u32, Numbers), u32> {
    let v3 = fake.get::<unsafe extern "C" fn(
        Device,
        c_uint,
        *mut nvml::nvmlGpuInstanceProfileInfo_v3_t,
    ) -> nvml::nvmlReturn_t>("nvmlDeviceGetGpuInstanceProfileInfoV");
    let stamp = u32::try_from(std::mem::size_of::<nvml::nvmlGpuInstanceProfileInfo_v3_t>())
        .unwrap()
        | (3 << 24);
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut info: nvml::nvmlGpuInstanceProfileInfo_v3_t = unsafe { std::mem::zeroed() };
    info.version = stamp;
    // SAFETY: a valid, stamped v3 struct.
    let ret = unsafe { v3(device, index, &mut info) };
    if ret != OK {
        return Err(ret);
    }
    // SAFETY: NUL-terminated by the library within its 96 chars.
    let name = unsafe { CStr::from_ptr(info.name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let numbers = Numbers {
        id: info.id,
        instances: info.instanceCount,
        memory_mib: info.memorySizeMB,
        sm: info.multiprocessorCount,
        ce: info.copyEngineCount,
        dec: info.decoderCount,
        enc: info.encoderCount,
        jpeg: info.jpegCount,
        ofa: info.ofaCount,
    };
    Ok((name, info.sliceCount, numbers))
}

fn by_bus_id(fake: &Fake, bus_id: &str) -> Device {
    let f = fake.get::<unsafe extern "C" fn(*const c_char, *mut Device) -> nvml::nvmlReturn_t>(
        "nvmlDeviceGetHandleByPciBusId_v2",
    );
    let text = CString::new(bus_id).unwrap();
    let mut device: Device = std::ptr::null_mut();
    // SAFETY: a NUL-terminated string and a valid out-pointer.
    assert_eq!(unsafe { f(text.as_ptr(), &mut device) }, OK, "{bus_id}");
    device
}

#[test]
fn every_parts_profiles_answer_through_nvml_as_the_published_table_gives_them() {
    let parts = fake_nvml::scenarios::PARTS;
    let bus_ids: Vec<String> = (1..=parts.len())
        .map(|at| format!("0000:{at:02x}:00.0"))
        .collect();
    let cards: Vec<(&str, &str)> = bus_ids
        .iter()
        .zip(parts.iter())
        .map(|(bus_id, (_, text))| (bus_id.as_str(), *text))
        .collect();
    let fake = Fake::load(&fake_nvml::support::scenario_of(&cards).unwrap());
    assert_eq!(fake.init("nvmlInit_v2"), OK);

    let mut table: BTreeMap<&str, Vec<profile_table::Row>> = BTreeMap::new();
    let all = rows();
    for row in &all {
        table
            .entry(row.part.as_str())
            .or_default()
            .push(row.clone());
    }
    for ((part, _), bus_id) in parts.iter().zip(&bus_ids) {
        let published = table
            .remove(part)
            .unwrap_or_else(|| panic!("{part}: no rows in profile-tables.tsv"));
        let device = by_bus_id(&fake, bus_id);
        // What NVML answers at every index of its enum, and one past its end.
        let mut answered: BTreeMap<u32, Result<(String, u32, Numbers), u32>> = (0..=ENUM_END_R570)
            .map(|index| (index, profile_info(&fake, device, index)))
            .collect();
        for row in &published {
            let got = answered.remove(&row.index).unwrap();
            let want = match row.numbers {
                Some(numbers) => Ok((row.profile.clone(), row.slices, numbers)),
                // Absent: answered as for a profile the part does not have.
                None => Err(NOT_SUPPORTED),
            };
            assert_eq!(got, want, "{part} {} (index {})", row.profile, row.index);
        }
        for (index, got) in answered {
            let want = if index < ENUM_END_R570 {
                NOT_SUPPORTED
            } else {
                INVALID
            };
            assert_eq!(got, Err(want), "{part}: index {index}, in no row");
        }
    }
    assert!(
        table.is_empty(),
        "rows of no shipped part: {:?}",
        table.keys()
    );
    assert!(
        all.iter()
            .all(|row| row.numbers.is_none_or(|n| n.memory_mib > 0)),
        "a size of 0 is never an answer"
    );
}
