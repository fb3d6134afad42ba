//! `mxctl gpus` on a vGPU host: each GPU's SR-IOV virtual functions with the vGPU type on
//! each (the per-VF interface), and an mdev parent's types (the older one), as sysfs shows
//! them; a GPU whose SR-IOV state does not read says so and the listing goes on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::sync_host::SyncHost as Host;
use std::path::Path;

/// An H100 at `0000:41:00.0` with SR-IOV (16 VFs possible, two enabled: one holding type
/// 1561 on GPU instance 3, one free with two types creatable), and a P40 at `0000:01:00.0`
/// managed through mdev.
fn vgpu_host(host: &Host) {
    let sysfs = &host.sysfs;
    sysfs.nvidia("0000:41:00.0", Some("nvidia")).unwrap();
    sysfs.sriov("0000:41:00.0", 16).unwrap();
    sysfs
        .virtual_function("0000:41:00.4", "0000:41:00.0", Some("nvidia"))
        .unwrap()
        .virtual_function("0000:41:00.5", "0000:41:00.0", Some("vfio-pci"))
        .unwrap();
    sysfs
        .vgpu("0000:41:00.4", 1561, &[], Some((3, 0)))
        .unwrap()
        .vgpu(
            "0000:41:00.5",
            0,
            &[(1145, "NVIDIA L40S-1B"), (1147, "NVIDIA L40S-1Q")],
            None,
        )
        .unwrap()
        .iommu_group("0000:41:00.5", 71)
        .unwrap();
    sysfs.nvidia("0000:01:00.0", Some("nvidia")).unwrap();
    sysfs
        .mdev_type(
            "0000:01:00.0",
            "nvidia-285",
            "GRID P40-8C",
            2,
            &["a297db4a-f4c2-11e6-90f6-d3b88d6c9525"],
        )
        .unwrap();
}

fn text(host: &Host) -> String {
    let output = common::succeeded(host.mxctl_configured(Path::new("/dev/null")).arg("gpus"));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn gpus_lists_each_virtual_function_with_its_vgpu_type_and_an_mdev_parent_s_types() {
    let host = Host::new();
    vgpu_host(&host);
    insta::assert_snapshot!("gpus_vgpu_text", text(&host));
}

#[test]
fn gpus_json_gives_the_sriov_state_typed() {
    let host = Host::new();
    vgpu_host(&host);
    let (code, document) = host.run(&["gpus"]);
    assert_eq!(code, 0, "{document}");
    let h100 = &document["gpus"][1];
    assert_eq!(h100["device"], "0000:41:00.0");
    assert_eq!(h100["sriov"]["total_vfs"], 16);
    let vfs = h100["sriov"]["vfs"].as_array().unwrap();
    assert_eq!(vfs.len(), 2);
    assert_eq!(vfs[0]["device"], "0000:41:00.4");
    assert_eq!(vfs[0]["vgpu"]["current_type"], 1561);
    assert_eq!(vfs[0]["vgpu"]["gpu_instance_id"], 3);
    assert_eq!(vfs[1]["vgpu"]["current_type"], serde_json::Value::Null);
    assert_eq!(
        vfs[1]["vgpu"]["creatable"][1],
        serde_json::json!({"id": 1147, "name": "NVIDIA L40S-1Q"})
    );
    assert_eq!(vfs[1]["iommu_group"], 71);
    assert_eq!(h100["mdev_types"], serde_json::Value::Null);
    let p40 = &document["gpus"][0];
    assert_eq!(p40["sriov"], serde_json::Value::Null);
    assert_eq!(p40["mdev_types"][0]["name"], "GRID P40-8C");
    assert_eq!(p40["mdev_types"][0]["vgpu_type"], 285);
}

#[test]
fn a_gpu_whose_sriov_state_does_not_read_says_so_and_the_others_are_listed() {
    let host = Host::new();
    vgpu_host(&host);
    // VFs being enabled while read: three said, two linked.
    std::fs::write(
        host.sysfs.device_dir("0000:41:00.0").join("sriov_numvfs"),
        "3\n",
    )
    .unwrap();
    let (code, document) = host.run(&["gpus"]);
    assert_eq!(code, 0, "{document}");
    let h100 = &document["gpus"][1];
    assert_eq!(h100["sriov"], serde_json::Value::Null);
    let why = h100["sriov_unreadable"].as_str().unwrap();
    assert!(why.contains("sriov_numvfs says 3 VFs"), "{why}");
    assert_eq!(document["gpus"][0]["mdev_types"][0]["id"], "nvidia-285");
}

#[test]
fn a_vf_whose_vfio_group_a_vm_holds_names_the_vm_s_pid() {
    let host = Host::new();
    vgpu_host(&host);
    // A VMM holding VF 1's group open, and a process holding something else.
    let proc_root = host.path("proc");
    for (pid, comm, target) in [
        ("4242", "qemu-system-x86", "/dev/vfio/71"),
        ("4243", "bash", "/dev/null"),
    ] {
        let fd = proc_root.join(pid).join("fd");
        std::fs::create_dir_all(&fd).unwrap();
        std::os::unix::fs::symlink(target, fd.join("3")).unwrap();
        std::fs::write(proc_root.join(pid).join("comm"), format!("{comm}\n")).unwrap();
    }
    let (code, document) = host.run(&["gpus"]);
    assert_eq!(code, 0, "{document}");
    let vfs = &document["gpus"][1]["sriov"]["vfs"];
    assert_eq!(
        vfs[0]["vfio_holders"],
        serde_json::Value::Null,
        "VF 0 has no IOMMU group"
    );
    assert_eq!(
        vfs[1]["vfio_holders"],
        serde_json::json!([{"pid": 4242, "name": "qemu-system-x86"}])
    );
    assert_eq!(document["vfio_holders_unreadable"], serde_json::Value::Null);
    assert!(text(&host).contains("VFIO group held by 4242 qemu-system-x86"));
}

#[test]
fn holders_that_cannot_be_told_are_said_unknown_never_none() {
    let host = Host::new();
    vgpu_host(&host);
    // A process whose fd list does not read (a file where the directory is).
    let proc_root = host.path("proc");
    std::fs::create_dir_all(proc_root.join("4242")).unwrap();
    std::fs::write(proc_root.join("4242/fd"), "").unwrap();
    let (code, document) = host.run(&["gpus"]);
    assert_eq!(code, 0, "{document}");
    assert!(
        document["vfio_holders_unreadable"]
            .as_str()
            .is_some_and(|why| why.contains("4242/fd")),
        "{document}"
    );
    assert_eq!(
        document["gpus"][1]["sriov"]["vfs"][1]["vfio_holders"],
        serde_json::Value::Null
    );
    assert!(text(&host).contains("who holds the VFs' VFIO groups is unknown"));
}

/// An MI300X-like host: eight GPUs in one XGMI hive, in CPX and NPS4 (the modes an MI300X in
/// NPS4 offers, `host-sync/tests/samples/amd/README.md`); the last one's compute file holds
/// what amdgpu never writes.
#[test]
fn gpus_shows_each_amd_gpu_s_compute_and_memory_partition_and_its_hive() {
    use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
    let host = Host::new();
    for bus in 0..8u8 {
        host.sysfs
            .amd_instinct(
                &format!("0000:{:02x}:00.0", 0x05 + bus * 0x10),
                "0x74a1",
                (C::Cpx, &[C::Qpx, C::Cpx]),
                Some((M::Nps4, &[M::Nps1, M::Nps4])),
                Some(12_386_496_430_428_395_541),
            )
            .unwrap();
    }
    // (A GPU in reset answers EPERM, which a plain file cannot.)
    std::fs::write(
        host.sysfs
            .device_dir("0000:75:00.0")
            .join("current_compute_partition"),
        "XPX\n",
    )
    .unwrap();
    insta::assert_snapshot!("gpus_amd_text", text(&host));
    let (code, document) = host.run(&["gpus"]);
    assert_eq!(code, 0);
    let first = &document["gpus"][0];
    assert_eq!(
        first["amd_partitions"],
        serde_json::json!({
            "compute": "CPX",
            "available_compute": ["QPX", "CPX"],
            "memory": "NPS4",
            "available_memory": ["NPS1", "NPS4"],
            "hive": "12386496430428395541",
            "requested_memory": null,
            "partition_mode": "enabled"
        })
    );
    assert!(
        document["gpus"][7]["amd_partitions_unreadable"]
            .as_str()
            .unwrap()
            .contains("\"XPX\\n\" is not a compute partition"),
        "{document:#}"
    );
}
