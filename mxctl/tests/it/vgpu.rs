//! `mxctl vgpu` through the real helper, the fake NVML and the fake sysfs: an H100 80GB
//! (a MIG mode change at once) and an A100-PCIE-40GB, each with SR-IOV; the fake's
//! `sriov-manage` (a real process, logged with the helper's NVML calls in one log) and the
//! kernel's own VF type write (mxctl's default) on the fake sysfs files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::PartitionHost;
use fake_nvml::support::{self, VgpuHost};
use fake_nvml::{StateFile, scenarios};
use host_sync::sriov::read_sriov;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const H100: &str = "0000:3b:00.0";
pub(crate) const A100: &str = "0000:3c:00.0";

const CONFIGS: &str = "version: v1
vgpu-configs:
  H100-mixed:
    - devices: [0]
      vgpu-devices:
        H100XM-1-10C: 2
        H100XM-2-20C: 1
  A100-10C:
    - devices: [1]
      vgpu-devices:
        A100-10C: 4
  A100-1-5C:
    - devices: [1]
      vgpu-devices:
        A100-1-5C: 7
";

pub(crate) struct VgpuMxHost {
    pub(crate) host: PartitionHost,
    pub(crate) fake: VgpuHost,
    config: PathBuf,
}

impl VgpuMxHost {
    pub(crate) fn new() -> VgpuMxHost {
        let with_sriov = |template: &str, total: u32| {
            let mut scenario: Value = serde_json::from_str(template).unwrap();
            scenario["devices"][0]["sriov"] = serde_json::json!({ "total_vfs": total });
            scenario.to_string()
        };
        // The H100's VF count is this test's: no capture of an H100's sriov_totalvfs is in our
        // sources (its catalogue's smallest type allows 20).
        let h100 = with_sriov(scenarios::PART_H100_80GB, 20);
        let a100 = scenarios::PART_A100_PCIE_40GB.to_owned();
        let host = PartitionHost::new(&[(H100, &h100, "0x2330"), (A100, &a100, "0x20f1")]);
        host.sysfs.sriov(H100, 20).unwrap().sriov(A100, 16).unwrap();
        // The same helper and state, now showing the VFs in the host's sysfs.
        let scenario = std::fs::read_to_string(host.path("nvml/scenario.json")).unwrap();
        let fake = support::vgpu_host(
            &host.path("nvml"),
            &scenario,
            Some(&host.log),
            host.sysfs.root(),
        )
        .unwrap();
        assert_eq!(fake.helper, host.helper);
        let config = host.path("vgpu.yaml");
        std::fs::write(&config, CONFIGS).unwrap();
        VgpuMxHost { host, fake, config }
    }

    fn vgpu(&self, args: &[&str]) -> Command {
        let mut command = self.host.mxctl(&["vgpu"]);
        command.args(args).arg("--helper").arg(&self.host.helper);
        if matches!(args.first(), Some(&("apply" | "leave" | "restore"))) {
            command
                .arg("--sriov-manage")
                .arg(&self.fake.sriov_manage)
                .arg("--nvidia-smi")
                .arg(self.host.path("bin/nvidia-smi"))
                .arg("--kmsg")
                .arg(self.host.path("kmsg"))
                .args(["--window", "5", "--pool", "enabled"]);
        }
        command
    }

    pub(crate) fn apply(&self, name: &str) -> (i32, Value) {
        let config = self.config.to_str().unwrap().to_owned();
        common::run_json(self.vgpu(&["apply", "--vgpu-config", &config, "--select", name]))
    }

    /// [`Self::apply`], which must exit 0 (its report in the failure): its report.
    #[track_caller]
    pub(crate) fn applied(&self, name: &str) -> Value {
        let (code, report) = self.apply(name);
        assert_eq!(code, 0, "{report:#}");
        report
    }

    /// Applies `name` again, after an apply that wrote `writes`: it must do no vGPU step and
    /// write nothing more. Its report.
    #[track_caller]
    fn assert_again_writes_nothing(&self, name: &str, writes: &[String]) -> Value {
        let again = self.applied(name);
        assert!(again["gpus"][0]["vgpu_done"].as_array().unwrap().is_empty());
        assert_eq!(self.writes(), writes, "a second apply wrote");
        again
    }

    pub(crate) fn assert(&self, name: &str) -> (i32, Value) {
        let config = self.config.to_str().unwrap().to_owned();
        common::run_json(self.vgpu(&["assert", "--vgpu-config", &config, "--select", name]))
    }

    /// The types the VFs of `gpu` show, in the tree mxctl is given.
    pub(crate) fn types_on(&self, gpu: &str) -> Vec<u32> {
        let root = self
            .host
            .served
            .as_deref()
            .unwrap_or(self.host.sysfs.root());
        let sriov = read_sriov(root, gpu.parse().unwrap()).unwrap().unwrap();
        let mut types: Vec<u32> = sriov
            .vfs
            .iter()
            .filter_map(|vf| vf.vgpu.as_ref()?.current_type.map(|id| id.0.get()))
            .collect();
        types.sort_unstable();
        types
    }

    /// The writes of the log, in order: the mode, `sriov-manage`, GPU instances made.
    pub(crate) fn writes(&self) -> Vec<String> {
        std::fs::read_to_string(&self.host.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| {
                [
                    "nvmlDeviceSetMigMode",
                    "sriov-manage",
                    "nvmlDeviceCreateGpuInstance",
                ]
                .iter()
                .any(|write| line.starts_with(write))
            })
            .map(str::to_owned)
            .collect()
    }

    fn sync_after_boot(&self) -> Value {
        let mut command = self.host.mxctl(&[]);
        command
            .args([
                "sync",
                "--after-boot",
                "yes",
                "--pool",
                "enabled",
                "--helper",
            ])
            .arg(&self.host.helper);
        common::run_json(command).1
    }
}

/// MIG on, then `sriov-manage -e`, then the GPU instances, as the driver forces.
fn assert_drivers_order(writes: &[String]) {
    assert!(position(writes, "nvmlDeviceSetMigMode 1") < position(writes, "sriov-manage -e"));
    assert!(
        position(writes, "sriov-manage -e") < position(writes, "nvmlDeviceCreateGpuInstance"),
        "{writes:#?}"
    );
}

fn position(writes: &[String], prefix: &str) -> usize {
    writes
        .iter()
        .position(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {writes:#?}"))
}

#[test]
fn a_mixed_mig_backed_config_applies_in_the_drivers_order_asserts_and_again_writes_nothing() {
    let host = VgpuMxHost::new();
    let report = host.applied("H100-mixed");
    assert_eq!(report["outcome"], "done", "{report:#}");
    let writes = host.writes();
    assert_drivers_order(&writes);
    assert_eq!(host.types_on(H100), vec![900001, 900001, 900004]);
    assert_eq!(report["host"]["reason"], "ready", "{report:#}");
    let done = report["gpus"][0]["vgpu_done"].as_array().unwrap();
    assert_eq!(done[0]["step"], "enable_vfs");
    assert_eq!(done.len(), 4, "{done:#?}");

    let (code, asserted) = host.assert("H100-mixed");
    assert_eq!(code, 0, "{asserted:#}");

    let again = host.assert_again_writes_nothing("H100-mixed", &writes);
    assert!(again["gpus"][0]["steps"].as_array().unwrap().is_empty());
}

#[test]
fn a_time_sliced_config_on_the_a100_leaves_mig_off_and_the_other_gpu_alone() {
    let host = VgpuMxHost::new();
    host.applied("A100-10C");
    assert_eq!(host.types_on(A100), vec![471; 4]);
    assert!(
        !host
            .writes()
            .iter()
            .any(|line| line.starts_with("nvmlDeviceSetMigMode"))
    );
    assert!(
        read_sriov(host.host.sysfs.root(), H100.parse().unwrap())
            .unwrap()
            .unwrap()
            .vfs
            .is_empty()
    );
    // A VF's type taken off by another hand: assert names it.
    std::fs::write(
        host.host
            .sysfs
            .root()
            .join("bus/pci/devices/0000:3c:00.0/virtfn1/nvidia/current_vgpu_type"),
        "0\n",
    )
    .unwrap();
    let (code, asserted) = host.assert("A100-10C");
    assert_eq!(code, 1, "{asserted:#}");
    assert_eq!(
        asserted["gpus"][0]["differences"][0]["kind"], "vgpu_count",
        "{asserted:#}"
    );
}

#[test]
fn after_a_reboot_the_sync_names_the_vfs_gone_and_vgpu_restore_brings_them_back() {
    let host = VgpuMxHost::new();
    host.applied("H100-mixed");
    let state = StateFile::new(&host.host.state).with_sysfs(host.host.sysfs.root());
    state.reboot().unwrap();
    host.host.boot("99999999-2222-3333-4444-555555555555");
    let sync = host.sync_after_boot();
    assert_eq!(sync["reason"], "layout_drifted", "{sync:#}");
    let kinds = common::field_of_each(&sync["drift"], "kind");
    assert!(kinds.contains(&"vfs_gone"), "{sync:#}");
    let status = host.host.status();
    assert_eq!(status["declared"]["holds"], "drifted", "{status:#}");
    assert!(
        host.host
            .metrics()
            .contains(&"mxctl_layout_drift{kind=\"vfs_gone\"} 1".to_owned()),
        "{:#?}",
        host.host.metrics()
    );
    assert!(
        host.host
            .labels()
            .contains(&"mxctl.feature.node.kubernetes.io/layout-state=drifted".to_owned())
    );

    let (code, restored) = common::run_json(host.vgpu(&["restore"]));
    assert_eq!(code, 0, "{restored:#}");
    assert_eq!(restored["outcome"], "done", "{restored:#}");
    assert_eq!(host.types_on(H100), vec![900001, 900001, 900004]);
    let status = host.host.status();
    assert_eq!(status["reason"], "ready", "{status:#}");
    assert_eq!(status["declared"]["holds"], "holds", "{status:#}");
    assert!(
        host.host
            .labels()
            .contains(&"mxctl.feature.node.kubernetes.io/layout-state=holds".to_owned())
    );
}

#[test]
fn a_vm_on_a_vf_blocks_apply_and_leave_before_any_write_naming_the_vf_and_the_pid() {
    let host = VgpuMxHost::new();
    host.applied("A100-10C");
    host.host.sysfs.iommu_group("0000:3c:00.4", 71).unwrap();
    host.host.holder(4242, "qemu-kvm", "/dev/vfio/71", 30);
    // Another config on the A100 would clear VF 0's type.
    let other = CONFIGS.replace("A100-10C: 4", "A100-20C: 2");
    std::fs::write(&host.config, other).unwrap();
    let before = host.writes();
    let config = host.config.to_str().unwrap().to_owned();
    for args in [
        vec!["apply", "--vgpu-config", &config, "--select", "A100-10C"],
        vec!["leave"],
    ] {
        let (code, report) = common::run_json(host.vgpu(&args));
        assert_eq!(code, 3, "{args:?}: {report:#}");
        assert_eq!(report["reason"], "gpu_busy", "{report:#}");
        let detail = report["detail"].as_str().unwrap();
        assert!(
            detail.contains("0000:3c:00.4 (virtual function 0 of 0000:3c:00.0)"),
            "{detail}"
        );
        assert!(detail.contains("pid 4242 (qemu-kvm)"), "{detail}");
        assert_eq!(host.writes(), before);
    }
    assert_eq!(host.types_on(A100), vec![471; 4]);
}

#[test]
fn leave_runs_sriov_manage_d_before_mig_off() {
    let host = VgpuMxHost::new();
    host.applied("H100-mixed");
    let applied = host.writes().len();
    let (code, report) = common::run_json(host.vgpu(&["leave"]));
    assert_eq!(code, 0, "{report:#}");
    let writes = host.writes()[applied..].to_vec();
    assert!(
        position(&writes, "sriov-manage -d") < position(&writes, "nvmlDeviceSetMigMode 0"),
        "{writes:#?}"
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a100_1_5c_seven_applies_with_its_reset_in_the_drivers_order_asserts_and_again_writes_nothing() {
    common::require_root();
    let host = VgpuMxHost::new();
    let report = host.applied("A100-1-5C");
    assert_eq!(report["outcome"], "done", "{report:#}");
    // MIG on waits for the A100's reset; the VFs come after it, the instances after them.
    let writes = host.writes();
    assert_drivers_order(&writes);
    assert_eq!(host.host.resets().len(), 1);
    assert_eq!(host.types_on(A100), vec![474; 7]);
    assert_eq!(host.assert("A100-1-5C").0, 0);
    host.assert_again_writes_nothing("A100-1-5C", &writes);
}

#[test]
fn an_exported_vgpu_config_and_the_declared_one_apply_back_as_zero_writes() {
    let host = VgpuMxHost::new();
    host.applied("H100-mixed");
    let writes = host.writes();

    let (code, exported) = common::run_json(host.vgpu(&["export"]));
    assert_eq!(code, 0, "{exported:#}");
    assert_eq!(
        exported["document"]["vgpu-configs"]["current"],
        serde_json::json!([{
            "devices": [0],
            "vgpu-devices": { "H100XM-1-10C": 2, "H100XM-2-20C": 1 }
        }]),
        "{exported:#}"
    );
    // The A100 has no VF: the format cannot say it (`{}` asks for VFs), so it is left out.
    assert_eq!(exported["warnings"][0]["kind"], "no_vfs", "{exported:#}");
    assert_eq!(exported["warnings"][0]["device"], A100, "{exported:#}");

    let printed = host
        .host
        .mxctl_configured(std::path::Path::new("/dev/null"))
        .args(["vgpu", "export", "--helper"])
        .arg(&host.host.helper)
        .output()
        .unwrap();
    assert!(printed.status.success(), "{printed:?}");
    let file = host.host.path("exported.yaml");
    std::fs::write(&file, &printed.stdout).unwrap();
    let file = file.to_str().unwrap().to_owned();
    let (code, again) = common::run_json(host.vgpu(&["apply", "-f", &file, "-c", "current"]));
    assert_eq!(code, 0, "{again:#}");
    assert_eq!(host.writes(), writes, "the exported config wrote");

    // The last apply declared the host, under the exported config's name.
    let (code, declared) = common::run_json(host.vgpu(&["export", "--declared"]));
    assert_eq!(code, 0, "{declared:#}");
    let document = &declared["document"]["vgpu-configs"]["current"];
    assert_eq!(
        document[0]["devices"],
        serde_json::json!([H100]),
        "{declared:#}"
    );
    let file = host.host.path("declared.json");
    std::fs::write(&file, declared["document"].to_string()).unwrap();
    let file = file.to_str().unwrap().to_owned();
    assert_eq!(
        document[0]["vgpu-devices"],
        serde_json::json!({ "H100XM-1-10C": 2, "H100XM-2-20C": 1 }),
        "{declared:#}"
    );
    let (code, again) = common::run_json(host.vgpu(&["apply", "-f", &file, "-c", "current"]));
    assert_eq!(code, 0, "{again:#}");
    assert_eq!(host.writes(), writes, "the declared config wrote");
}

#[test]
fn heterogeneous_mode_asked_with_mig_backed_types_is_refused_before_any_write_saying_why() {
    let host = VgpuMxHost::new();
    let config = host.config.to_str().unwrap().to_owned();
    let (code, report) = common::run_json(host.vgpu(&[
        "apply",
        "-f",
        &config,
        "-c",
        "H100-mixed",
        "--heterogeneous",
    ]));
    assert_ne!(code, 0, "{report:#}");
    assert_eq!(report["reason"], "layout_impossible", "{report:#}");
    assert!(
        report["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("heterogeneous vGPU mode was asked for with MIG-backed types"),
        "{report:#}"
    );
    assert!(host.writes().is_empty(), "{:#?}", host.writes());
}
