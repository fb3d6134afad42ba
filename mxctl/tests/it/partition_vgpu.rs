//! `mxctl partition create --vgpu`: a MIG-backed vGPU as one partition for its owner, on the
//! H100 (20 VFs) of the vGPU host, through the real helper, the fake NVML, the fake's
//! `sriov-manage` and the driver's VF files served (so the type written reaches the state, and
//! the VF shows the GPU instance it sits on); a time-sliced type refused with its token and its
//! facts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::served_drivers::serve;
use crate::vgpu::VgpuMxHost;
use fake_driver_files::{Drivers, ServedSysfs};
use fake_nvml::StateFile;

const H100: &str = "0000:3b:00.0";

/// The vGPU host with the H100's MIG on and nothing carved.
fn mig_on() -> VgpuMxHost {
    let mx = VgpuMxHost::new();
    let layout = "version: v1\nmig-configs:\n  on:\n    - devices: [0]\n      mig-enabled: true\n      mig-devices: {}\n";
    let (code, report) = mx.host.apply(layout, "on", &[]);
    assert_eq!(code, 0, "{report:#}");
    mx
}

/// The host's VF files served by the fake driver, from the state NVML answers from.
fn served(mx: &mut VgpuMxHost) -> ServedSysfs {
    let state = StateFile::new(&mx.host.state).with_sysfs(mx.host.sysfs.root());
    let drivers = Drivers {
        nvidia: Some(state),
        amdgpu: None,
    };
    serve(&mut mx.host.machine, drivers)
}

#[test]
#[ignore = "needs root and /dev/fuse (a FUSE mount); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_mig_backed_vgpu_created_for_its_owner_is_listed_on_its_vf_with_its_owner() {
    let mut mx = mig_on();
    let _served = served(&mut mx);
    let sriov_manage = mx.fake.sriov_manage.to_str().unwrap().to_owned();
    let (code, report) = mx.host.one(
        &[
            "create",
            "--vgpu",
            "H100XM-1-10C",
            "--owner",
            "vm-a",
            "--sriov-manage",
            &sriov_manage,
        ],
        H100,
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["partition"]["slot"]["kind"], "vf", "{report:#}");
    assert_eq!(report["partition"]["slot"]["index"], 0, "{report:#}");
    assert_eq!(report["partition"]["owner"], "vm-a", "{report:#}");
    assert_eq!(mx.types_on(H100), vec![900001]);
    let list = mx.host.list();
    let rows = list["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|gpu| gpu["device"] == H100)
        .unwrap()["partitions"]
        .as_array()
        .unwrap()
        .clone();
    let owners: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| {
            (
                row["slot"]["kind"].as_str().unwrap(),
                row["owner"].as_str().unwrap_or("nobody"),
            )
        })
        .collect();
    assert_eq!(
        owners,
        [("gpu_instance", "vm-a"), ("vf", "vm-a")],
        "{list:#}"
    );
}

#[test]
fn a_time_sliced_vgpu_type_is_refused_with_its_token_and_its_type_before_any_write() {
    let mx = mig_on();
    let before = mx.writes();
    let (code, report) = mx
        .host
        .one(&["create", "--vgpu", "H100XM-4C", "--owner", "vm-a"], H100);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["reason"], "time_sliced", "{report:#}");
    assert_eq!(report["vgpu_type"], "H100XM-4C", "{report:#}");
    assert_eq!(mx.writes(), before);
}
