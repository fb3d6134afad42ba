//! The fake amdgpu answers partition writes by the kernel's rules, and what it shows reads
//! back through `gpu_host_probe::amdgpu` as a real GPU's files do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::amdgpu::read_partitions;
use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use host_sync::fake_amdgpu::{FakeAmdgpu, MI300A, MI300X, MI355X};
use host_sync::fake_sysfs::FakeSysfs;
use nix::errno::Errno;

fn hive_of_eight(sysfs: &FakeSysfs) -> FakeAmdgpu {
    let mut amd = FakeAmdgpu::new(sysfs.clone());
    for index in 0..8 {
        amd.gpu(&bdf(index), MI300X, M::Nps1, Some(7)).unwrap();
    }
    amd
}

fn bdf(index: usize) -> String {
    format!("0000:{:02x}:00.0", 0x05 + index * 0x10)
}

fn read(sysfs: &FakeSysfs, index: usize) -> gpu_host_probe::amdgpu::AmdPartitions {
    read_partitions(sysfs.root(), bdf(index).parse().unwrap())
        .unwrap()
        .unwrap()
}

#[test]
fn a_driver_load_in_nps1_sets_spx_and_offers_what_the_kernel_allows() {
    let (_dir, sysfs) = common::fake_sysfs();
    let _amd = hive_of_eight(&sysfs);
    let read = read(&sysfs, 0);
    assert_eq!(
        (read.compute, read.memory, read.hive),
        (C::Spx, Some(M::Nps1), Some(7))
    );
    assert_eq!(read.available_compute, [C::Spx, C::Dpx, C::Qpx, C::Cpx]);
    assert_eq!(read.available_memory, [M::Nps1, M::Nps2, M::Nps4]);
}

#[test]
fn a_memory_write_waits_for_the_reload_and_reaches_the_whole_hive() {
    let (_dir, sysfs) = common::fake_sysfs();
    let mut amd = hive_of_eight(&sysfs);
    amd.write_memory(&bdf(0), "NPS4\n").unwrap();
    assert_eq!(
        read(&sysfs, 0).memory,
        Some(M::Nps1),
        "shown before the reload"
    );
    amd.reload_driver().unwrap();
    for index in 0..8 {
        let read = read(&sysfs, index);
        assert_eq!(
            (read.memory, read.compute),
            (Some(M::Nps4), C::Cpx),
            "GPU {index}"
        );
        assert_eq!(read.available_compute, [C::Qpx, C::Cpx]);
    }
}

#[test]
fn compute_writes_follow_the_kernels_rules() {
    let (_dir, sysfs) = common::fake_sysfs();
    let mut amd = hive_of_eight(&sysfs);
    assert_eq!(amd.write_compute(&bdf(0), "cpx\n"), Ok(()));
    assert_eq!(read(&sysfs, 0).compute, C::Cpx);
    assert_eq!(amd.write_compute(&bdf(0), "XPX"), Err(Errno::EINVAL));
    assert_eq!(
        amd.write_compute(&bdf(0), "TPX"),
        Err(Errno::EINVAL),
        "an 8-XCC part"
    );
    amd.write_memory(&bdf(0), "NPS4").unwrap();
    amd.reload_driver().unwrap();
    assert_eq!(
        amd.write_compute(&bdf(0), "SPX"),
        Err(Errno::EINVAL),
        "SPX with NPS4"
    );
    amd.gpus[1].held = true;
    assert_eq!(amd.write_compute(&bdf(1), "QPX"), Err(Errno::EBUSY));
    assert_eq!(
        amd.write_compute(&bdf(1), "CPX"),
        Ok(()),
        "the mode it has: no change"
    );
    assert!(amd.reload_driver().is_err(), "a held GPU keeps the driver");
    amd.gpus[2].in_reset = true;
    assert_eq!(amd.write_compute(&bdf(2), "QPX"), Err(Errno::EPERM));
}

#[test]
fn a_memory_partition_the_part_does_not_offer_is_einval() {
    let (_dir, sysfs) = common::fake_sysfs();
    let mut amd = FakeAmdgpu::new(sysfs.clone());
    amd.gpu(&bdf(0), MI355X, M::Nps1, None).unwrap();
    amd.gpu(&bdf(1), MI300A, M::Nps1, None).unwrap();
    assert_eq!(amd.write_memory(&bdf(0), "NPS4"), Err(Errno::EINVAL));
    assert_eq!(amd.write_memory(&bdf(0), "NPS2"), Ok(()));
    assert_eq!(amd.write_memory(&bdf(1), "NPS2"), Err(Errno::EINVAL));
    assert!(read(&sysfs, 1).available_memory.is_empty());
    assert_eq!(read(&sysfs, 1).available_compute, [C::Spx, C::Tpx, C::Cpx]);
}

#[test]
fn a_reboot_loses_the_compute_partition_and_keeps_the_memory_partition_unless_told() {
    let (_dir, sysfs) = common::fake_sysfs();
    let mut amd = hive_of_eight(&sysfs);
    amd.write_memory(&bdf(0), "NPS2").unwrap();
    amd.reload_driver().unwrap();
    amd.write_compute(&bdf(0), "DPX").unwrap();
    amd.write_memory(&bdf(0), "NPS4").unwrap();
    amd.reboot().unwrap();
    let read0 = read(&sysfs, 0);
    assert_eq!(
        (read0.memory, read0.compute),
        (Some(M::Nps2), C::Dpx),
        "the request is gone"
    );
    amd.gpus[0].memory_at_boot = Some(M::Nps1);
    amd.reboot().unwrap();
    assert_eq!(read(&sysfs, 0).memory, Some(M::Nps1));
}
