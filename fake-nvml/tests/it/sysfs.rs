//! The fake's VFs shown in a sysfs tree: both layouts a test host has — `host_sync::fake_sysfs`'s
//! (functions linked into `devices/`) and the reboot bed's (directories in `bus/pci/devices`,
//! bind-mounted over the real one) — read back by the host crates' own reader.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::{Managed, StateFile, scenarios};
use host_sync::sriov::read_sriov;
use std::os::unix::fs::symlink;

const GPU: &str = "0000:3b:00.0";

#[test]
fn in_a_tree_of_directories_the_vfs_are_made_beside_the_gpu_bound_to_its_driver_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sys");
    let gpu = root.join("bus/pci/devices").join(GPU);
    std::fs::create_dir_all(&gpu).unwrap();
    std::fs::create_dir_all(dir.path().join("drivers/nvidia")).unwrap();
    for (file, text) in [
        ("vendor", "0x10de\n"),
        ("device", "0x20f1\n"),
        ("class", "0x030200\n"),
    ] {
        std::fs::write(gpu.join(file), text).unwrap();
    }
    symlink(dir.path().join("drivers/nvidia"), gpu.join("driver")).unwrap();
    let state = StateFile::new(dir.path().join("state.json")).with_sysfs(&root);
    state
        .write(&fake_nvml::Scenario::from_json(scenarios::PART_A100_PCIE_40GB.as_bytes()).unwrap())
        .unwrap();
    assert_eq!(state.sriov_manage(GPU, true).unwrap(), Managed::Enabled);
    let sriov = read_sriov(&root, GPU.parse().unwrap()).unwrap().unwrap();
    assert_eq!((sriov.total_vfs, sriov.vfs.len()), (16, 16));
    assert_eq!(sriov.vfs[15].bdf.to_string(), "0000:3b:02.3");
    assert_eq!(sriov.vfs[0].driver.as_deref(), Some("nvidia"));
    let vgpu = sriov.vfs[0].vgpu.as_ref().unwrap();
    assert_eq!(vgpu.current_type, None);
    assert_eq!(vgpu.creatable.len(), 6);
    // Only the GPU is one to read: its VFs are not GPUs of their own.
    let gpus: Vec<String> = host_sync::scan_gpus(&root)
        .unwrap()
        .into_iter()
        .filter(|gpu| gpu.is_read_by(host_sync::ReadBy::Helper))
        .map(|gpu| gpu.bdf.to_string())
        .collect();
    assert_eq!(gpus, vec![GPU.to_owned()]);
    assert_eq!(state.sriov_manage(GPU, false).unwrap(), Managed::Disabled);
    assert!(
        read_sriov(&root, GPU.parse().unwrap())
            .unwrap()
            .unwrap()
            .vfs
            .is_empty()
    );
    assert!(!root.join("bus/pci/devices/0000:3b:00.4").exists());
}
