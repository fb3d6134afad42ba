//! A GPU rebound while the sync runs (a pass-through rebind's udev events start a sync, and one
//! started while this one runs is merged into it by systemd): the sync runs again, so what it
//! stores is the host after the change.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::{Act, FakeHelper};
use host_sync::{AfterBoot, GpuReason, MemoryStore, NotRead, SyncOptions, SyncWarning, sync};

#[test]
fn a_gpu_moved_to_vfio_pci_during_the_sync_is_stored_with_vfio_pci() {
    let dir = tempfile::tempdir().unwrap();
    let (sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0", "0000:3c:00.0"]);
    let link = sysfs.device_dir("0000:3c:00.0").join("driver");
    let marker = dir.path().join("moved");
    // The first read of the first card moves the second card to vfio-pci, as a rebind does.
    let helper = FakeHelper::new(dir.path())
        .on(
            "0000:3b:00.0",
            Act::Shell(format!(
                "if [ ! -e {marker} ]; then : > {marker}; mkdir -p {drivers}; rm -f {link}; ln -s ../../../bus/pci/drivers/vfio-pci {link}; fi",
                marker = marker.display(),
                drivers = sysfs.root().join("bus/pci/drivers/vfio-pci").display(),
                link = link.display(),
            )),
        )
        .write()
        .unwrap();
    let mut store = MemoryStore::default();
    let report = sync(
        &host,
        &Helper::new(HelperConfig::new(helper)),
        &mut store,
        &SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    assert!(marker.exists(), "the rebind did not happen");
    let moved = &store.state.unwrap().gpus[&"0000:3c:00.0".parse().unwrap()];
    assert_eq!(moved.driver.as_deref(), Some("vfio-pci"));
    assert_eq!(
        moved.reason,
        Some(GpuReason::NotRead(NotRead::driver("vfio-pci")))
    );
    assert!(
        report.warnings.contains(&SyncWarning::GpusChanged {
            gpus: vec!["0000:3c:00.0".parse().unwrap()]
        }),
        "{:?}",
        report.warnings
    );
}

#[test]
fn a_sync_over_gpus_that_stay_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0"]);
    let helper = FakeHelper::new(dir.path()).write().unwrap();
    let report = sync(
        &host,
        &Helper::new(HelperConfig::new(&helper)),
        &mut MemoryStore::default(),
        &SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    let reads = FakeHelper::calls(dir.path())
        .iter()
        .filter(|call| call.starts_with("read"))
        .count();
    assert_eq!(reads, 1);
}
