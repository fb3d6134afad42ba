//! A GPU's SR-IOV virtual functions and NVIDIA's per-VF vGPU files: the parsers on what real
//! hosts printed (`tests/samples/vgpu/`, sources in its README), failing closed on anything
//! else, and the reader on sysfs trees with the kernel's layout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_partition_types::Bdf;
use gpu_partition_types::VgpuTypeId;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::mdev::read_mdev_types;
use host_sync::sriov::{
    CreatableType, Sriov, SriovError, VfVgpu, VirtualFunction, parse_creatable_vgpu_types,
    parse_current_vgpu_type, read_sriov,
};
use proptest::prelude::*;
use std::path::Path;

fn sample(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/samples/vgpu")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn id(number: u32) -> VgpuTypeId {
    VgpuTypeId(std::num::NonZeroU32::new(number).unwrap())
}

fn ids_and_names(types: &[CreatableType]) -> Vec<(u32, &str)> {
    types
        .iter()
        .map(|t| (t.id.0.get(), t.name.as_str()))
        .collect()
}

fn bdf(text: &str) -> Bdf {
    text.parse().unwrap()
}

const AT: &str = "/sys/bus/pci/devices/0000:41:00.4/nvidia/creatable_vgpu_types";

#[test]
fn creatable_vgpu_types_as_an_l40s_prints_them_read_as_ids_and_names() {
    let types = parse_creatable_vgpu_types(
        &sample("creatable_vgpu_types-l40s-head-hypeman-327.txt"),
        Path::new(AT),
    )
    .unwrap();
    assert_eq!(
        ids_and_names(&types),
        [(1145, "NVIDIA L40S-1B"), (1147, "NVIDIA L40S-1Q")]
    );
}

#[test]
fn creatable_vgpu_types_of_every_published_capture_read_whole() {
    for (file, count, first) in [
        (
            "creatable_vgpu_types-rtx6000ada-nvidia-vgpu-rfc.txt",
            10,
            (941, "NVIDIA RTX6000-Ada-1Q"),
        ),
        (
            "creatable_vgpu_types-rtxpro6000-head-cubecos-312.txt",
            12,
            (1518, "NVIDIA RTX Pro 6000 Blackwell DC-2B"),
        ),
    ] {
        let types = parse_creatable_vgpu_types(&sample(file), Path::new(AT)).unwrap();
        assert_eq!(types.len(), count, "{file}");
        assert_eq!(ids_and_names(&types)[0], first, "{file}");
    }
}

#[test]
fn a_full_card_lists_only_the_header_and_nothing_is_creatable() {
    let types = parse_creatable_vgpu_types(
        &sample("creatable_vgpu_types-header-only-exhausted.txt"),
        Path::new(AT),
    )
    .unwrap();
    assert!(types.is_empty());
}

#[test]
fn creatable_vgpu_types_in_a_shape_the_driver_does_not_print_are_refused_naming_the_line() {
    for (text, problem, line) in [
        ("", "empty: no header line", 1),
        (
            "1145  : NVIDIA L40S-1B\n",
            "the first line is not the header `ID : vGPU Name`",
            1,
        ),
        (
            "ID    : vGPU Name\nNVIDIA L40S-1B\n",
            "a line without `:`",
            2,
        ),
        (
            "ID    : vGPU Name\nabc   : NVIDIA L40S-1B\n",
            "a type ID that is not a nonzero decimal number",
            2,
        ),
        (
            "ID    : vGPU Name\n0     : NVIDIA L40S-1B\n",
            "a type ID that is not a nonzero decimal number",
            2,
        ),
        (
            "ID    : vGPU Name\n1145  : NVIDIA L40S-1B\n+1147 : NVIDIA L40S-1Q\n",
            "a type ID that is not a nonzero decimal number",
            3,
        ),
        ("ID    : vGPU Name\n1145  : \n", "a type without a name", 2),
        (
            "ID    : vGPU Name\n1145  : NVIDIA L40S-1B\n1145  : NVIDIA L40S-1Q\n",
            "a type ID listed twice",
            3,
        ),
        (
            "ID    : vGPU Name\n\n1145  : NVIDIA L40S-1B\n",
            "an empty line",
            2,
        ),
        (
            "ID    : vGPU Name\n1145  : NVIDIA L40S-1B\r\n",
            "a carriage return, which the driver does not write",
            2,
        ),
    ] {
        match parse_creatable_vgpu_types(text, Path::new(AT)) {
            Err(SriovError::Unreadable {
                problem: said,
                path,
                line: at_line,
                ..
            }) => {
                assert_eq!((said, at_line), (problem, Some(line)), "{text:?}");
                assert_eq!(path, Path::new(AT));
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn the_last_line_s_newline_may_be_missing() {
    let types =
        parse_creatable_vgpu_types("ID    : vGPU Name\n1145  : NVIDIA L40S-1B", Path::new(AT))
            .unwrap();
    assert_eq!(ids_and_names(&types), [(1145, "NVIDIA L40S-1B")]);
}

#[test]
fn current_vgpu_type_reads_the_type_written_and_zero_as_none() {
    let at = Path::new("/sys/bus/pci/devices/0001:04:00.2/nvidia/current_vgpu_type");
    assert_eq!(
        parse_current_vgpu_type(
            &sample("current_vgpu_type-1561-rtxpro6000-cubecos-312.txt"),
            at
        )
        .unwrap(),
        Some(id(1561))
    );
    assert_eq!(
        parse_current_vgpu_type(
            &sample("current_vgpu_type-none-rtxpro6000-cubecos-312.txt"),
            at
        )
        .unwrap(),
        None
    );
    for bad in ["", "1561", "0x619\n", "-1\n", "1561\n\n", " 1561\n"] {
        assert!(
            matches!(
                parse_current_vgpu_type(bad, at),
                Err(SriovError::Unreadable { .. })
            ),
            "{bad:?}"
        );
    }
}

/// A GPU at `0000:41:00.0` that can have 16 VFs, with two enabled: VF 0 bound to `nvidia`
/// holding type 1561 on GPU instance 3, VF 1 bound to `vfio-pci` with no vGPU.
fn vgpu_host(sysfs: &FakeSysfs) {
    sysfs.nvidia("0000:41:00.0", Some("nvidia")).unwrap();
    sysfs.sriov("0000:41:00.0", 16).unwrap();
    sysfs
        .virtual_function("0000:41:00.4", "0000:41:00.0", Some("nvidia"))
        .unwrap();
    sysfs
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
        .unwrap();
    sysfs.iommu_group("0000:41:00.4", 70).unwrap();
    sysfs.iommu_group("0000:41:00.5", 71).unwrap();
}

type VfSummary = (
    u32,
    String,
    Option<String>,
    Option<u32>,
    Option<(Option<u32>, Vec<(u32, String)>, Option<u32>, Option<u32>)>,
);

/// What a test compares of a VF (the types are `non_exhaustive`: read, never built, outside).
fn summary(sriov: &Sriov) -> Vec<VfSummary> {
    sriov
        .vfs
        .iter()
        .map(|vf: &VirtualFunction| {
            (
                vf.index,
                vf.bdf.to_string(),
                vf.driver.clone(),
                vf.iommu_group,
                vf.vgpu.as_ref().map(|files: &VfVgpu| {
                    (
                        files.current_type.map(|t| t.0.get()),
                        files
                            .creatable
                            .iter()
                            .map(|t| (t.id.0.get(), t.name.clone()))
                            .collect(),
                        files.gpu_instance_id,
                        files.placement_id,
                    )
                }),
            )
        })
        .collect()
}

#[test]
fn a_gpu_s_virtual_functions_read_in_index_order_with_their_vgpu_files() {
    let (_dir, sysfs) = common::fake_sysfs();
    vgpu_host(&sysfs);
    let read = read_sriov(sysfs.root(), bdf("0000:41:00.0"))
        .unwrap()
        .expect("SR-IOV capable");
    assert_eq!(read.total_vfs, 16);
    assert_eq!(
        summary(&read),
        [
            (
                0,
                "0000:41:00.4".to_owned(),
                Some("nvidia".to_owned()),
                Some(70),
                Some((Some(1561), vec![], Some(3), Some(0))),
            ),
            (
                1,
                "0000:41:00.5".to_owned(),
                Some("vfio-pci".to_owned()),
                Some(71),
                Some((
                    None,
                    vec![
                        (1145, "NVIDIA L40S-1B".to_owned()),
                        (1147, "NVIDIA L40S-1Q".to_owned())
                    ],
                    None,
                    None
                )),
            ),
        ]
    );
}

#[test]
fn a_gpu_without_sr_iov_has_no_sriov_state() {
    let (_dir, sysfs) = common::one_nvidia("0000:3b:00.0");
    assert!(
        read_sriov(sysfs.root(), bdf("0000:3b:00.0"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn an_sr_iov_gpu_with_no_vf_enabled_has_none_and_says_how_many_it_could() {
    let (_dir, sysfs) = common::one_nvidia("0000:3b:00.0");
    sysfs.sriov("0000:3b:00.0", 48).unwrap();
    let read = read_sriov(sysfs.root(), bdf("0000:3b:00.0"))
        .unwrap()
        .unwrap();
    assert_eq!((read.total_vfs, read.vfs.len()), (48, 0));
}

#[test]
fn the_kernel_s_sriov_numbers_as_a_host_printed_them_read() {
    let (_dir, sysfs) = common::one_nvidia("0001:c8:00.0");
    let pf = sysfs.device_dir("0001:c8:00.0");
    std::fs::write(
        pf.join("sriov_totalvfs"),
        sample("sriov_totalvfs-48-rtxpro6000-cubecos-312.txt"),
    )
    .unwrap();
    // Zero enabled here (the capture's 48 would need 48 VFs built); the number's shape is
    // the capture's.
    std::fs::write(pf.join("sriov_numvfs"), "0\n").unwrap();
    let read = read_sriov(sysfs.root(), bdf("0001:c8:00.0"))
        .unwrap()
        .unwrap();
    assert_eq!(read.total_vfs, 48);
}

#[test]
fn virtfn_links_that_disagree_with_sriov_numvfs_are_refused_as_read_mid_change() {
    let (_dir, sysfs) = common::fake_sysfs();
    vgpu_host(&sysfs);
    let pf = sysfs.device_dir("0000:41:00.0");
    std::fs::write(pf.join("sriov_numvfs"), "3\n").unwrap();
    match read_sriov(sysfs.root(), bdf("0000:41:00.0")) {
        Err(SriovError::LinksDisagree { enabled, links, .. }) => {
            assert_eq!((enabled, links), (3, vec![0, 1]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn more_vfs_enabled_than_the_function_has_is_refused() {
    let (_dir, sysfs) = common::fake_sysfs();
    vgpu_host(&sysfs);
    let pf = sysfs.device_dir("0000:41:00.0");
    std::fs::write(pf.join("sriov_totalvfs"), "1\n").unwrap();
    assert!(matches!(
        read_sriov(sysfs.root(), bdf("0000:41:00.0")),
        Err(SriovError::MoreThanTotal {
            enabled: 2,
            total: 1,
            ..
        })
    ));
}

#[test]
fn a_vf_whose_physfn_leads_elsewhere_is_refused_naming_both() {
    let (_dir, sysfs) = common::fake_sysfs();
    vgpu_host(&sysfs);
    sysfs.nvidia("0000:42:00.0", Some("nvidia")).unwrap();
    let vf = sysfs.device_dir("0000:41:00.5");
    std::fs::remove_file(vf.join("physfn")).unwrap();
    std::os::unix::fs::symlink("../0000:42:00.0", vf.join("physfn")).unwrap();
    match read_sriov(sysfs.root(), bdf("0000:41:00.0")) {
        Err(error @ SriovError::NotItsParent { .. }) => {
            let text = error.to_string();
            assert!(
                text.contains("0000:42:00.0") && text.contains("0000:41:00.0"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_sriov_number_the_kernel_does_not_write_is_refused_naming_the_file() {
    let (_dir, sysfs) = common::fake_sysfs();
    vgpu_host(&sysfs);
    let pf = sysfs.device_dir("0000:41:00.0");
    std::fs::write(pf.join("sriov_totalvfs"), "sixteen\n").unwrap();
    match read_sriov(sysfs.root(), bdf("0000:41:00.0")) {
        Err(SriovError::Unreadable { path, .. }) => assert!(path.ends_with("sriov_totalvfs")),
        other => panic!("{other:?}"),
    }
}

proptest! {
    /// What the driver prints (`"%-5d : %s"` per type under the header) reads back as written.
    #[test]
    fn creatable_vgpu_types_round_trip_through_the_driver_s_format(
        types in proptest::collection::btree_map(1u32..100_000, "[A-Za-z0-9][A-Za-z0-9 .-]{0,30}[A-Za-z0-9]", 0..12)
    ) {
        let mut text = String::from("ID    : vGPU Name\n");
        for (id, name) in &types {
            text.push_str(&format!("{id:<5} : NVIDIA {name}\n"));
        }
        let read = parse_creatable_vgpu_types(&text, Path::new(AT)).unwrap();
        prop_assert!(read.iter().all(|t| t.id.to_string() == t.id.0.get().to_string()));
        let back: Vec<(u32, String)> = read.iter().map(|t| (t.id.0.get(), t.name.clone())).collect();
        let want: Vec<(u32, String)> = types.iter().map(|(id, name)| (*id, format!("NVIDIA {name}"))).collect();
        prop_assert_eq!(back, want);
    }
}

#[test]
fn an_mdev_parent_s_types_read_as_a_p40_shows_them() {
    let (_dir, sysfs) = common::one_nvidia("0000:01:00.0");
    sysfs
        .mdev_type(
            "0000:01:00.0",
            "nvidia-285",
            "GRID P40-8C",
            3,
            &["a297db4a-f4c2-11e6-90f6-d3b88d6c9525"],
        )
        .unwrap()
        .mdev_type("0000:01:00.0", "nvidia-156", "GRID P40-2B", 12, &[])
        .unwrap();
    // The files of nvidia-285 as the published host printed them.
    let at = sysfs
        .device_dir("0000:01:00.0")
        .join("mdev_supported_types/nvidia-285");
    std::fs::write(
        at.join("name"),
        sample("mdev-name-p40-8c-vgpu_unlock-101.txt"),
    )
    .unwrap();
    std::fs::write(
        at.join("available_instances"),
        sample("mdev-available_instances-p40-8c-vgpu_unlock-101.txt"),
    )
    .unwrap();
    let types = read_mdev_types(sysfs.root(), bdf("0000:01:00.0"))
        .unwrap()
        .expect("an mdev parent");
    let seen: Vec<(&str, &str, u32, Vec<String>)> = types
        .iter()
        .map(|t| {
            (
                t.id.as_str(),
                t.name.as_str(),
                t.available_instances,
                t.devices.clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("nvidia-156", "GRID P40-2B", 12, vec![]),
            (
                "nvidia-285",
                "GRID P40-8C",
                3,
                vec!["a297db4a-f4c2-11e6-90f6-d3b88d6c9525".to_owned()]
            ),
        ]
    );
}

#[test]
fn a_function_that_is_no_mdev_parent_has_no_mdev_types() {
    let (_dir, sysfs) = common::one_nvidia("0000:3b:00.0");
    assert!(
        read_mdev_types(sysfs.root(), bdf("0000:3b:00.0"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn an_mdev_count_the_kernel_does_not_write_is_refused_naming_the_file() {
    let (_dir, sysfs) = common::one_nvidia("0000:01:00.0");
    sysfs
        .mdev_type("0000:01:00.0", "nvidia-285", "GRID P40-8C", 3, &[])
        .unwrap();
    let at = sysfs
        .device_dir("0000:01:00.0")
        .join("mdev_supported_types/nvidia-285/available_instances");
    std::fs::write(at, "three\n").unwrap();
    match read_mdev_types(sysfs.root(), bdf("0000:01:00.0")) {
        Err(SriovError::Unreadable { path, .. }) => {
            assert!(
                path.ends_with("nvidia-285/available_instances"),
                "{}",
                path.display()
            );
        }
        other => panic!("{other:?}"),
    }
}
