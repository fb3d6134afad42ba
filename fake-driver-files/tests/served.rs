//! The served tree on a mount: an A100-PCIE-40GB with SR-IOV and two MI300X in one hive, each
//! driver's file written and read through the mount as a program on a host would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_driver_files::{Drivers, ServedSysfs, modprobe_script};
use fake_nvml::{Scenario, StateFile, scenarios};
use gpu_host_probe::amdgpu::MemoryPartition;
use host_sync::fake_amdgpu::{FakeAmdgpu, FakeAmdgpuFile, MI300X};
use host_sync::fake_sysfs::FakeSysfs;
use std::io::ErrorKind;
use std::path::PathBuf;

const A100: &str = "0000:3b:00.0";
const MI300X_GPUS: [&str; 2] = ["0000:05:00.0", "0000:26:00.0"];

/// The mount is dropped (unmounted) first, before the directory it is in goes.
struct Host {
    served: ServedSysfs,
    state: StateFile,
    amdgpu: FakeAmdgpuFile,
    _dir: tempfile::TempDir,
}

impl Host {
    fn new() -> Host {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let sysfs = FakeSysfs::new(&tree).unwrap();
        sysfs
            .nvidia(A100, Some("nvidia"))
            .unwrap()
            .sriov(A100, 16)
            .unwrap();
        let state = StateFile::new(dir.path().join("state.json")).with_sysfs(&tree);
        state
            .write(&Scenario::from_json(scenarios::PART_A100_PCIE_40GB.as_bytes()).unwrap())
            .unwrap();
        let mut fake = FakeAmdgpu::new(sysfs.clone());
        for gpu in MI300X_GPUS {
            fake.gpu(gpu, MI300X, MemoryPartition::Nps1, Some(7))
                .unwrap();
        }
        let amdgpu = FakeAmdgpuFile::new(dir.path().join("amdgpu.json"), &tree);
        amdgpu.save(&fake).unwrap();
        let at = dir.path().join("sys");
        std::fs::create_dir(&at).unwrap();
        let drivers = Drivers {
            nvidia: Some(state.clone()),
            amdgpu: Some(amdgpu.clone()),
        };
        let served = ServedSysfs::mount(&tree, &at, drivers).unwrap();
        Host {
            served,
            state,
            amdgpu,
            _dir: dir,
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.served.root().join(relative)
    }

    fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path(relative)).unwrap()
    }

    fn write(&self, relative: &str, text: &str) -> std::io::Result<()> {
        std::fs::write(self.path(relative), text)
    }

    fn vf(&self, index: u32, file: &str) -> String {
        format!("bus/pci/devices/{A100}/virtfn{index}/nvidia/{file}")
    }
}

fn errno(result: std::io::Result<()>) -> Option<i32> {
    result.err().and_then(|error| error.raw_os_error())
}

#[test]
#[ignore = "needs root and /dev/fuse (a FUSE mount); CI runs it as root: cargo test -p fake-driver-files -- --ignored"]
fn a_vgpu_type_written_through_the_file_reaches_the_state_and_a_second_type_fails_with_eio() {
    let host = Host::new();
    let numvfs = format!("bus/pci/devices/{A100}/sriov_numvfs");
    assert_eq!(host.read(&numvfs), "0\n");
    // The PF `nvidia` drives takes no raw count (`sriov_numvfs_store` without
    // `sriov_configure`); more than `sriov_totalvfs` is out of range first.
    assert_eq!(errno(host.write(&numvfs, "16\n")), Some(nix::libc::ENOENT));
    assert_eq!(errno(host.write(&numvfs, "17\n")), Some(nix::libc::ERANGE));
    // sriov-manage enables them (its rebind through pci-pf-stub); the file shows the state.
    host.state.sriov_manage(A100, true).unwrap();
    assert_eq!(host.read(&numvfs), "16\n");
    assert_eq!(
        std::fs::read_to_string(host.path(&host.vf(0, "gpu_instance_id")))
            .unwrap_err()
            .raw_os_error(),
        Some(nix::libc::ENXIO)
    );

    assert!(
        host.read(&host.vf(0, "creatable_vgpu_types"))
            .contains("471   : GRID A100-10C")
    );
    host.write(&host.vf(0, "current_vgpu_type"), "471\n")
        .unwrap();
    assert_eq!(host.read(&host.vf(0, "current_vgpu_type")), "471\n");
    let vfs = host.state.read().unwrap().devices[0]
        .sriov
        .clone()
        .unwrap()
        .vfs;
    assert_eq!(vfs[0].type_id, Some(471));
    // A time-sliced card takes one type: a second type on another VF is refused (`EIO`).
    assert_eq!(
        errno(host.write(&host.vf(1, "current_vgpu_type"), "468\n")),
        Some(nix::libc::EIO)
    );
    assert_eq!(host.read(&host.vf(1, "current_vgpu_type")), "0\n");
    // The VF with a vGPU lists nothing it could take; another lists the one type left.
    assert_eq!(
        host.read(&host.vf(0, "creatable_vgpu_types")),
        "ID    : vGPU Name\n"
    );
    assert_eq!(
        host.read(&host.vf(1, "creatable_vgpu_types")),
        "ID    : vGPU Name\n471   : GRID A100-10C\n"
    );
    // The state written whole by another process keeps the type: it is the state's.
    let state = host.state.read().unwrap();
    host.state.write(&state).unwrap();
    assert_eq!(host.read(&host.vf(0, "current_vgpu_type")), "471\n");
    // A type on a VF that has one is `EPERM`; a read-only file refuses a write.
    assert_eq!(
        errno(host.write(&host.vf(0, "current_vgpu_type"), "471\n")),
        Some(nix::libc::EPERM)
    );
    assert_eq!(
        std::fs::OpenOptions::new()
            .write(true)
            .open(host.path(&host.vf(0, "creatable_vgpu_types")))
            .unwrap_err()
            .kind(),
        ErrorKind::PermissionDenied
    );
}

#[test]
#[ignore = "needs root and /dev/fuse (a FUSE mount); CI runs it as root: cargo test -p fake-driver-files -- --ignored"]
fn amdgpus_partition_files_answer_with_the_kernels_errnos_and_a_reload_makes_a_request_hold() {
    let host = Host::new();
    let gpu = |file: &str| format!("bus/pci/devices/{}/{file}", MI300X_GPUS[0]);
    assert_eq!(host.read(&gpu("current_compute_partition")), "SPX\n");
    assert_eq!(
        errno(host.write(&gpu("current_compute_partition"), "XYZ\n")),
        Some(nix::libc::EINVAL)
    );
    host.write(&gpu("current_memory_partition"), "NPS4\n")
        .unwrap();
    // Only a request: the file shows the mode the memory is in until the reload.
    assert_eq!(host.read(&gpu("current_memory_partition")), "NPS1\n");
    let script = host.path("../modprobe");
    std::fs::write(&script, modprobe_script(host.served.root())).unwrap();
    let status = std::process::Command::new("sh")
        .arg(&script)
        .args(["-r", "amdgpu"])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(host.read(&gpu("current_memory_partition")), "NPS4\n");
    assert_eq!(host.read(&gpu("current_compute_partition")), "CPX\n");
    // Both GPUs of the hive moved.
    let other = format!(
        "bus/pci/devices/{}/current_memory_partition",
        MI300X_GPUS[1]
    );
    assert_eq!(host.read(&other), "NPS4\n");
    // A mode the memory partition does not allow is `EINVAL` (SPX in NPS4).
    assert_eq!(
        errno(host.write(&gpu("current_compute_partition"), "SPX\n")),
        Some(nix::libc::EINVAL)
    );
    // A GPU a process holds: a change of its compute partition is `EBUSY`, and so is the
    // reload.
    host.amdgpu.change(|fake| fake.gpus[0].held = true).unwrap();
    let offered = host.read(&gpu("available_compute_partition"));
    let other_mode = offered
        .trim_end()
        .split(", ")
        .find(|mode| *mode != "CPX")
        .expect("NPS4 on an MI300X offers a mode beside CPX");
    assert_eq!(
        errno(host.write(
            &gpu("current_compute_partition"),
            &format!("{other_mode}\n")
        )),
        Some(nix::libc::EBUSY)
    );
    let output = std::process::Command::new("sh")
        .arg(&script)
        .args(["-r", "amdgpu"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Module amdgpu is in use"));
}

#[test]
fn a_driver_that_would_show_its_state_through_the_mount_is_refused_before_mounting() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("sys");
    let state = StateFile::new(dir.path().join("state.json")).with_sysfs(at.join("bus"));
    let drivers = Drivers {
        nvidia: Some(state),
        amdgpu: None,
    };
    let refused = ServedSysfs::mount(&dir.path().join("tree"), &at, drivers).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidInput);
    assert!(
        refused.to_string().contains("through the mount"),
        "{refused}"
    );
}
