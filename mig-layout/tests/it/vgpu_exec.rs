//! The vGPU layer's writes on the fake's vGPU host: `sriov-manage` (the fake's, a real process
//! run through the runner) and a VF's type write (the fake driver's answer), each read back
//! from the fake sysfs the fake's state is shown in. The rules are the driver's, as
//! `fake_nvml`'s `rules::sriov` cites them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::support::{VgpuHost, vgpu_host};
use fake_nvml::{GpuInstance, MigMode, scenarios};
use gpu_host_probe::run::{RunResult, StartError};
use gpu_host_probe::{Clock, VirtualClock};
use gpu_partition_types::Bdf;
use gpu_partition_types::VgpuTypeId;
use host_sync::Host;
use host_sync::sriov::read_sriov;
use mig_layout::vgpu::{
    RunEnd, SriovManage, SriovManageError, SriovManageOn, TypeWriteError, VfTypeFile, VfsWanted,
    write_vgpu_type,
};
use std::num::NonZeroU32;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

const GPU: &str = "0000:3b:00.0";

/// An A100-PCIE-40GB (16 VFs, MIG off, VFs disabled) bound to `nvidia` in a fake sysfs.
struct VgpuBed {
    dir: tempfile::TempDir,
    host: Host,
    fake: VgpuHost,
    log: PathBuf,
    clock: VirtualClock,
}

impl VgpuBed {
    fn new(change: impl FnOnce(&mut serde_json::Value)) -> VgpuBed {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = crate::common::vgpu_bed::sysfs_with_sriov_a100(dir.path(), GPU);
        let mut scenario: serde_json::Value =
            serde_json::from_str(scenarios::PART_A100_PCIE_40GB).unwrap();
        change(&mut scenario["devices"][0]);
        let nvml = dir.path().join("nvml");
        std::fs::create_dir_all(&nvml).unwrap();
        let log = dir.path().join("calls.log");
        let fake = vgpu_host(&nvml, &scenario.to_string(), Some(&log), sysfs.root()).unwrap();
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_lock_dir(dir.path().join("locks"));
        VgpuBed {
            dir,
            host,
            fake,
            log,
            clock: VirtualClock::new(1_800_000_000_000),
        }
    }

    fn sriov_manage(&self) -> SriovManage {
        SriovManage::at(self.fake.sriov_manage.clone())
    }

    fn set_vfs(&self, wanted: VfsWanted) -> Result<mig_layout::vgpu::VfsSet, SriovManageError> {
        self.set_vfs_with(&self.sriov_manage(), wanted)
    }

    fn set_vfs_with(
        &self,
        how: &SriovManage,
        wanted: VfsWanted,
    ) -> Result<mig_layout::vgpu::VfsSet, SriovManageError> {
        let lock = self.host.lock(Duration::ZERO).unwrap();
        how.set_vfs(
            SriovManageOn {
                lock: &lock,
                sysfs_root: self.host.sysfs_root(),
                clock: &self.clock,
                cancel: None,
            },
            gpu(),
            wanted,
        )
    }

    fn write_type(&self, index: u32, id: u32) -> Result<(), TypeWriteError> {
        let lock = self.host.lock(Duration::ZERO).unwrap();
        write_vgpu_type(
            &lock,
            self.host.sysfs_root(),
            &self.fake.types,
            VfTypeFile { gpu: gpu(), index },
            NonZeroU32::new(id).map(VgpuTypeId),
        )
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.starts_with("sriov-manage") || line.starts_with("current_vgpu"))
            .map(str::to_owned)
            .collect()
    }

    fn creatable_on(&self, index: u32) -> Vec<u32> {
        let sriov = read_sriov(self.host.sysfs_root(), gpu()).unwrap().unwrap();
        let vf = sriov.vfs.iter().find(|vf| vf.index == index).unwrap();
        vf.vgpu
            .as_ref()
            .unwrap()
            .creatable
            .iter()
            .map(|kind| kind.id.0.get())
            .collect()
    }

    fn add_gpu_instance(&self, id: u32, profile_id: u32, start: u32) {
        let gi: GpuInstance = serde_json::from_value(serde_json::json!({
            "id": id, "profile_id": profile_id, "placement": {"start": start, "size": 1}
        }))
        .unwrap();
        self.fake
            .state
            .change(|state| {
                state.devices[0].gpu_instances.push(gi);
                Ok::<(), ()>(())
            })
            .unwrap();
    }
}

fn gpu() -> Bdf {
    GPU.parse().unwrap()
}

fn mig_on(card: &mut serde_json::Value) {
    card["mig_mode"] = serde_json::json!({"current": 1, "pending": 1});
}

#[test]
fn sriov_manage_e_enables_every_vf_the_gpu_has_and_the_read_back_sees_each_with_its_vgpu_files() {
    let bed = VgpuBed::new(|_| {});
    let set = bed.set_vfs(VfsWanted::Enabled).unwrap();
    assert_eq!(set.attempts, 1);
    assert_eq!(set.sriov.total_vfs, 16);
    assert_eq!(set.sriov.vfs.len(), 16);
    let first = &set.sriov.vfs[0];
    assert_eq!(first.bdf.to_string(), "0000:3b:00.4");
    let vgpu = first.vgpu.as_ref().unwrap();
    assert_eq!(vgpu.current_type, None);
    // MIG off: the time-sliced types of the catalogue (IDs 468–473).
    assert_eq!(bed.creatable_on(0), vec![468, 469, 470, 471, 472, 473]);
    assert_eq!(bed.calls(), vec![format!("sriov-manage -e {GPU}")]);
    assert_eq!(bed.clock.now(), Duration::ZERO);
}

#[test]
fn a_start_up_race_is_run_again_after_each_pause_until_the_vfs_are_there() {
    let bed = VgpuBed::new(|card| card["sriov"]["enable_failures"] = 2.into());
    let set = bed.set_vfs(VfsWanted::Enabled).unwrap();
    assert_eq!(set.attempts, 3);
    assert_eq!(set.sriov.vfs.len(), 16);
    // Two pauses of 3 s, on the injected clock.
    assert_eq!(bed.clock.now(), Duration::from_secs(6));
    assert_eq!(bed.calls().len(), 3);
}

#[test]
fn a_race_that_outlasts_every_run_fails_naming_the_runs_and_what_the_last_said() {
    let bed = VgpuBed::new(|card| card["sriov"]["enable_failures"] = 9.into());
    let error = bed.set_vfs(VfsWanted::Enabled).unwrap_err();
    let SriovManageError::Failed { attempts, last, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(*attempts, 5);
    assert!(matches!(
        last,
        RunEnd::Ran {
            result: RunResult::Exited(1),
            ..
        }
    ));
    let said = error.to_string();
    assert!(said.contains("-e 0000:3b:00.0 failed (5 runs)"), "{said}");
    assert!(said.contains("File exists"), "{said}");
    assert_eq!(
        read_sriov(bed.host.sysfs_root(), gpu())
            .unwrap()
            .unwrap()
            .vfs
            .len(),
        0
    );
}

#[test]
fn a_zero_exit_that_made_no_vf_is_caught_by_the_read_back_and_run_again() {
    let bed = VgpuBed::new(|card| card["sriov"]["silent_enable_failures"] = 1.into());
    let set = bed.set_vfs(VfsWanted::Enabled).unwrap();
    assert_eq!(set.attempts, 2);
    assert_eq!(set.sriov.vfs.len(), 16);
}

#[test]
fn zero_exits_that_never_make_a_vf_fail_with_the_count_sysfs_reads() {
    let bed = VgpuBed::new(|card| card["sriov"]["silent_enable_failures"] = 9.into());
    let error = bed.set_vfs(VfsWanted::Enabled).unwrap_err();
    assert!(
        matches!(
            error,
            SriovManageError::Failed {
                attempts: 5,
                last: RunEnd::Exited0 {
                    numvfs: 0,
                    total: 16
                },
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn a_sriov_manage_another_user_could_change_is_never_run_nor_tried_again() {
    let bed = VgpuBed::new(|_| {});
    let script = &bed.fake.sriov_manage;
    std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o775)).unwrap();
    let error = bed.set_vfs(VfsWanted::Enabled).unwrap_err();
    let SriovManageError::Failed {
        attempts: 1,
        last:
            RunEnd::Ran {
                result: RunResult::CouldNotStart(start),
                ..
            },
        ..
    } = &error
    else {
        panic!("{error}");
    };
    assert!(matches!(start, StartError::Untrusted { .. }), "{start:?}");
    assert!(bed.calls().is_empty());
}

#[test]
fn sriov_manage_d_takes_the_vfs_and_the_gpu_instances_with_them() {
    let bed = VgpuBed::new(mig_on);
    bed.set_vfs(VfsWanted::Enabled).unwrap();
    bed.add_gpu_instance(1, 19, 0);
    bed.write_type(0, 474).unwrap();
    let set = bed.set_vfs(VfsWanted::Disabled).unwrap();
    assert!(set.sriov.vfs.is_empty());
    let card = bed.fake.state.read().unwrap();
    assert!(card.devices[0].gpu_instances.is_empty());
    assert!(
        !bed.dir
            .path()
            .join("sys/bus/pci/devices/0000:3b:00.4")
            .exists()
    );
}

#[test]
fn a_type_written_is_read_back_and_the_creatable_list_shrinks_until_the_card_is_full() {
    let bed = VgpuBed::new(|_| {});
    bed.set_vfs(VfsWanted::Enabled).unwrap();
    // GRID A100-10C (471): at most 4 on the card; once one runs, only its type is creatable.
    bed.write_type(0, 471).unwrap();
    assert_eq!(bed.creatable_on(1), vec![471]);
    for index in 1..4 {
        bed.write_type(index, 471).unwrap();
    }
    assert_eq!(bed.creatable_on(4), Vec::<u32>::new());
    let error = bed.write_type(4, 471).unwrap_err();
    let TypeWriteError::Refused { source, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(source.raw_os_error(), Some(nix::libc::EIO));
}

#[test]
fn instances_made_before_the_vfs_are_wiped_by_sriov_manage_and_the_type_write_then_fails_with_eio()
{
    let bed = VgpuBed::new(mig_on);
    // The wrong order: a 1g.5gb instance first, then the VFs.
    bed.add_gpu_instance(1, 19, 0);
    bed.set_vfs(VfsWanted::Enabled).unwrap();
    assert_eq!(bed.creatable_on(0), Vec::<u32>::new());
    let error = bed.write_type(0, 474).unwrap_err();
    let said = error.to_string();
    assert!(
        said.contains("virtual function 0's current_vgpu_type: writing 474 failed"),
        "{said}"
    );
    assert!(
        said.contains("as when the instances were made before the VFs"),
        "{said}"
    );
    assert!(
        bed.calls().last().unwrap().ends_with("474 EIO"),
        "{:?}",
        bed.calls()
    );
}

#[test]
fn in_the_drivers_order_a_mig_backed_type_lands_on_the_instance_made_after_the_vfs() {
    let bed = VgpuBed::new(mig_on);
    bed.set_vfs(VfsWanted::Enabled).unwrap();
    bed.add_gpu_instance(3, 19, 2);
    // GRID A100-1-5C is creatable once a 1g.5gb instance is free.
    assert_eq!(bed.creatable_on(0), vec![474]);
    bed.write_type(0, 474).unwrap();
    let sriov = read_sriov(bed.host.sysfs_root(), gpu()).unwrap().unwrap();
    let vgpu = sriov.vfs[0].vgpu.as_ref().unwrap();
    assert_eq!(vgpu.current_type.map(|id| id.0.get()), Some(474));
    assert_eq!(vgpu.gpu_instance_id, Some(3));
    // The one instance is taken: nothing else is creatable.
    assert_eq!(bed.creatable_on(1), Vec::<u32>::new());
    let card = bed.fake.state.read().unwrap();
    assert_eq!(
        card.devices[0].mig_mode,
        MigMode::Mode {
            current: 1,
            pending: 1
        }
    );
}
