//! The sysfs PCI scan on trees with the layout real servers have: an Intel VMD domain past 16
//! bits, a GPU's HDMI audio function, a device that vanished during the scan, and one whose files
//! cannot all be read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{scan, scan_gpus};

fn names(gpus: &[host_sync::PciFunction]) -> Vec<String> {
    gpus.iter().map(|gpu| gpu.bdf.to_string()).collect()
}

/// A server with VMD enabled: its NVMe drive sits in domain `10000`, its GPU in domain `0001`.
fn vmd_server(sysfs: &FakeSysfs) {
    sysfs
        .function(
            "10000:e1:00.0",
            "0x8086",
            "0x0a54",
            "0x010802",
            Some("nvme"),
        )
        .unwrap();
    sysfs
        .function(
            "10000:e0:00.0",
            "0x1b36",
            "0x000d",
            "0x030000",
            Some("bochs-drm"),
        )
        .unwrap();
    sysfs.nvidia("0001:81:00.0", Some("nvidia")).unwrap();
    // The GPU's HDMI audio function: NVIDIA's vendor id, but an audio device, not a GPU.
    sysfs
        .function(
            "0001:81:00.1",
            "0x10de",
            "0x22ba",
            "0x040300",
            Some("snd_hda_intel"),
        )
        .unwrap();
}

#[test]
fn a_vmd_domain_past_16_bits_is_scanned_like_any_other() {
    let (_dir, sysfs) = common::fake_sysfs();
    vmd_server(&sysfs);
    let found = scan(sysfs.root()).unwrap();
    assert_eq!(names(&found.gpus), ["0001:81:00.0", "10000:e0:00.0"]);
    assert!(found.skipped.is_empty(), "{:?}", found.skipped);
}

#[test]
fn the_hdmi_audio_function_of_an_nvidia_gpu_is_not_a_gpu() {
    let (_dir, sysfs) = common::fake_sysfs();
    vmd_server(&sysfs);
    let gpus = scan_gpus(sysfs.root()).unwrap();
    assert!(!names(&gpus).contains(&"0001:81:00.1".to_owned()));
}

#[test]
fn a_device_that_vanished_during_the_scan_is_skipped_and_named() {
    let (_dir, sysfs) = common::fake_sysfs();
    vmd_server(&sysfs);
    sysfs.vanished("0001:81:00.4").unwrap();
    let found = scan(sysfs.root()).unwrap();
    assert_eq!(names(&found.gpus), ["0001:81:00.0", "10000:e0:00.0"]);
    assert_eq!(found.skipped.len(), 1);
    let skipped = &found.skipped[0];
    assert_eq!(
        skipped.bdf.map(|b| b.to_string()).as_deref(),
        Some("0001:81:00.4")
    );
    assert!(
        skipped.to_string().contains("0001:81:00.4/class"),
        "{skipped}"
    );
}

#[test]
fn a_half_read_device_is_skipped_and_the_scan_goes_on() {
    let (_dir, sysfs) = common::fake_sysfs();
    vmd_server(&sysfs);
    sysfs.nvidia("0001:82:00.0", Some("nvidia")).unwrap();
    std::fs::remove_file(sysfs.device_dir("0001:82:00.0").join("vendor")).unwrap();
    let found = scan(sysfs.root()).unwrap();
    assert_eq!(names(&found.gpus), ["0001:81:00.0", "10000:e0:00.0"]);
    assert_eq!(
        found
            .skipped
            .iter()
            .map(|s| s.bdf.map(|b| b.to_string()))
            .collect::<Vec<_>>(),
        [Some("0001:82:00.0".to_owned())]
    );
}

#[test]
fn a_file_with_content_sysfs_never_writes_is_skipped_with_what_it_held() {
    let (_dir, sysfs) = common::one_nvidia("0000:3b:00.0");
    sysfs.nvidia("0000:3c:00.0", Some("nvidia")).unwrap();
    std::fs::write(sysfs.device_dir("0000:3c:00.0").join("class"), "garbage\n").unwrap();
    let found = scan(sysfs.root()).unwrap();
    assert_eq!(names(&found.gpus), ["0000:3b:00.0"]);
    assert!(found.skipped[0].to_string().contains("\"garbage\""));
}

#[test]
fn an_entry_whose_name_is_not_an_address_is_skipped() {
    let (_dir, sysfs) = common::one_nvidia("0000:3b:00.0");
    std::fs::create_dir(sysfs.root().join("bus/pci/devices/not-a-device")).unwrap();
    let found = scan(sysfs.root()).unwrap();
    assert_eq!(names(&found.gpus), ["0000:3b:00.0"]);
    assert_eq!(found.skipped.len(), 1);
    assert_eq!(found.skipped[0].bdf, None);
    assert!(found.skipped[0].to_string().contains("not a PCI address"));
}

#[test]
fn only_an_unreadable_device_directory_fails_the_scan() {
    let (_dir, sysfs) = common::fake_sysfs();
    let devices = sysfs.root().join("bus/pci/devices");
    std::fs::remove_dir(&devices).unwrap();
    std::fs::write(&devices, "not a directory").unwrap();
    let error = scan(sysfs.root()).unwrap_err();
    assert!(error.to_string().contains("bus/pci/devices"), "{error}");
}

/// The scan of one NVIDIA GPU at 0000:3b:00.0 whose subsystem files hold `vendor` and `device`.
fn scan_with_subsystem(vendor: &str, device: &str) -> host_sync::PciScan {
    let (_dir, sysfs) = common::one_nvidia("0000:3b:00.0");
    let at = sysfs.device_dir("0000:3b:00.0");
    std::fs::write(at.join("subsystem_vendor"), vendor).unwrap();
    std::fs::write(at.join("subsystem_device"), device).unwrap();
    scan(sysfs.root()).unwrap()
}

#[test]
fn a_gpu_carries_the_subsystem_ids_sysfs_gives() {
    let found = scan_with_subsystem("0x10de\n", "0x1795\n");
    assert_eq!(
        found.gpus[0].identity.to_string(),
        "10de:2335 class 030200 subsystem 10de:1795"
    );
}

#[test]
fn a_subsystem_id_that_does_not_read_skips_the_gpu_naming_the_file_never_id_zero() {
    let found = scan_with_subsystem("0x10de\n", "\n");
    assert!(found.gpus.is_empty());
    let skipped = found.skipped[0].to_string();
    assert!(
        skipped.contains("0000:3b:00.0/subsystem_device"),
        "{skipped}"
    );
}

#[test]
fn an_amd_instinct_accelerator_is_a_gpu_and_another_vendors_accelerator_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = FakeSysfs::new(dir.path()).unwrap();
    // An MI300X enumerates as a processing accelerator (class 0x12); an inference card of
    // another vendor (Habana's vendor ID here) does too.
    sysfs
        .function(
            "0000:05:00.0",
            "0x1002",
            "0x74a1",
            "0x120000",
            Some("amdgpu"),
        )
        .unwrap()
        .function(
            "0000:06:00.0",
            "0x1da3",
            "0x1020",
            "0x120000",
            Some("habanalabs"),
        )
        .unwrap()
        .function(
            "0000:07:00.0",
            "0x1002",
            "0x740f",
            "0x038000",
            Some("amdgpu"),
        )
        .unwrap();
    let gpus = scan_gpus(dir.path()).unwrap();
    assert_eq!(names(&gpus), ["0000:05:00.0", "0000:07:00.0"]);
    assert!(
        gpus.iter()
            .all(|gpu| gpu.identity.is_amd() && gpu.is_read_by(host_sync::ReadBy::Amdgpu))
    );
}
