//! mxctl's default writers — the kernel's files, no seam — against drivers' files that answer
//! as the drivers do (`fake_driver_files`: a FUSE mount of the host's tree whose VF, PF and
//! amdgpu files answer from the fakes' one state): a vGPU type written through a VF's file
//! reaches the state NVML answers from, a refusal is the driver's errno, and `mxctl amd apply`
//! runs without `--simulate`, the driver reloaded by a `modprobe` that unloads the fake.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::vgpu::{A100, VgpuMxHost};

use common::machine::Machine;
use fake_driver_files::{Drivers, ServedSysfs, modprobe_script};
use fake_nvml::StateFile;
use gpu_host_probe::amdgpu::MemoryPartition;
use host_sync::fake_amdgpu::{FakeAmdgpu, FakeAmdgpuFile, MI300X};
use serde_json::Value;

/// The mount of `machine`'s tree at `<machine>/served-sys`, with `drivers`; mxctl is given it.
pub(crate) fn serve(machine: &mut Machine, drivers: Drivers) -> ServedSysfs {
    let at = machine.path("served-sys");
    std::fs::create_dir_all(&at).unwrap();
    let served = ServedSysfs::mount(machine.sysfs.root(), &at, drivers).unwrap();
    machine.served = Some(at);
    served
}

fn errno(result: std::io::Result<()>) -> Option<i32> {
    result.err().and_then(|error| error.raw_os_error())
}

#[test]
#[ignore = "needs root and /dev/fuse (a FUSE mount); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_time_sliced_vgpu_apply_writes_the_types_through_the_drivers_files_into_the_state() {
    let mut host = VgpuMxHost::new();
    let state = StateFile::new(&host.host.state).with_sysfs(host.host.sysfs.root());
    let nvidia = Some(state.clone());
    let served = serve(
        &mut host.host.machine,
        Drivers {
            nvidia,
            amdgpu: None,
        },
    );
    let (code, report) = host.apply("A100-10C");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(host.types_on(A100), vec![471; 4]);
    // The types are the driver's state, which NVML answers from (not files beside it).
    let card = state.read().unwrap();
    let vfs = &card.device_at(A100).unwrap().sriov.as_ref().unwrap().vfs;
    let written: Vec<Option<u32>> = vfs.iter().map(|vf| vf.type_id).collect();
    assert_eq!(written[..4], [Some(471); 4]);
    assert!(written[4..].iter().all(Option::is_none));
    // Four A100-10C are the type's most: a free VF offers nothing more.
    let vf = |index: u32, file: &str| {
        served.root().join(format!(
            "bus/pci/devices/{A100}/virtfn{index}/nvidia/{file}"
        ))
    };
    assert_eq!(
        std::fs::read_to_string(vf(5, "creatable_vgpu_types")).unwrap(),
        "ID    : vGPU Name\n"
    );
    // A second type on another VF: the driver cannot create it, and says so with EIO.
    assert_eq!(
        errno(std::fs::write(vf(5, "current_vgpu_type"), "468\n")),
        Some(nix::libc::EIO)
    );
    // Another writer of the state leaves the types as they are: the next assert holds.
    state.write(&state.read().unwrap()).unwrap();
    let (code, asserted) = host.assert("A100-10C");
    assert_eq!(code, 0, "{asserted:#}");
}

const PROFILES: &str = r#"{
  "gpu-config-profiles": {
    "cpx-nps4": {"profiles": [{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]},
    "qpx-nps4": {"profiles": [{"computePartition": "QPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]}
  }
}"#;

/// Eight MI300X in one hive, in NPS1, their files served by the fake amdgpu; a `modprobe`
/// that reloads it. The mount is dropped (unmounted) before the machine's directory goes.
struct AmdHost {
    _served: ServedSysfs,
    amdgpu: FakeAmdgpuFile,
    machine: Machine,
}

impl AmdHost {
    fn new() -> AmdHost {
        let mut machine = Machine::new();
        let mut fake = FakeAmdgpu::new(machine.sysfs.clone());
        for index in 0..8 {
            let bdf = format!("0000:{:02x}:00.0", 0x05 + index * 0x10);
            fake.gpu(&bdf, MI300X, MemoryPartition::Nps1, Some(42))
                .unwrap();
        }
        let amdgpu = FakeAmdgpuFile::new(machine.path("amdgpu.json"), machine.sysfs.root());
        amdgpu.save(&fake).unwrap();
        machine.write("dcm.json", PROFILES);
        let served = serve(
            &mut machine,
            Drivers {
                nvidia: None,
                amdgpu: Some(amdgpu.clone()),
            },
        );
        let script = modprobe_script(served.root());
        machine.program("bin/modprobe", &script);
        AmdHost {
            _served: served,
            amdgpu,
            machine,
        }
    }

    /// `mxctl --json amd apply` of `profile`, the kernel's files written (no `--simulate`).
    fn apply(&self, profile: &str) -> (i32, Value) {
        let mut command = self.machine.mxctl(&["amd", "apply", "--dcm-config"]);
        command
            .arg(self.machine.path("dcm.json"))
            .args(["--profile", profile, "--pool", "enabled", "--modprobe"])
            .arg(self.machine.path("bin/modprobe"));
        common::run_json(command)
    }

    fn log(&self) -> Vec<String> {
        self.amdgpu.load().unwrap().log
    }
}

#[test]
#[ignore = "needs root and /dev/fuse (a FUSE mount); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn amd_apply_without_simulate_takes_an_eight_gpu_hive_to_cpx_nps4_with_one_reload() {
    let host = AmdHost::new();
    let (code, report) = host.apply("cpx-nps4");
    assert_eq!(code, 0, "{report:#}");
    let fake = host.amdgpu.load().unwrap();
    assert_eq!(fake.reloads(), 1, "{:#?}", fake.log);
    assert!(
        fake.gpus
            .iter()
            .all(|gpu| gpu.memory == MemoryPartition::Nps4)
    );
    let cpx = gpu_host_probe::amdgpu::ComputePartition::Cpx;
    assert!(fake.gpus.iter().all(|gpu| gpu.compute == Some(cpx)));
}

#[test]
#[ignore = "needs root and /dev/fuse (a FUSE mount); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn amd_apply_meets_the_kernels_ebusy_from_the_file_of_a_gpu_a_process_holds() {
    let host = AmdHost::new();
    let (code, _) = host.apply("cpx-nps4");
    assert_eq!(code, 0);
    host.amdgpu.change(|fake| fake.gpus[3].held = true).unwrap();
    let before = host.log().len();
    let (code, report) = host.apply("qpx-nps4");
    assert_ne!(code, 0, "{report:#}");
    // The GPU's report carries the kernel's refusal: the file and its errno.
    let held = "0000:35:00.0";
    let refused: Vec<&Value> = report["gpus"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|gpu| gpu["failure"]["by"] == "kernel")
        .collect();
    assert_eq!(refused.len(), 1, "{report:#}");
    assert_eq!(
        refused[0]["failure"]["errno"],
        nix::libc::EBUSY,
        "{report:#}"
    );
    let file = refused[0]["failure"]["file"].as_str().unwrap_or_default();
    assert!(
        file.ends_with(&format!("{held}/current_compute_partition")),
        "{report:#}"
    );
    // The write the kernel refused is in the driver's log with its errno; nothing was reloaded.
    let after = host.log();
    assert!(
        after[before..].iter().any(|line| line.ends_with("EBUSY")),
        "{after:#?}"
    );
    assert_eq!(host.amdgpu.load().unwrap().reloads(), 1);
}
