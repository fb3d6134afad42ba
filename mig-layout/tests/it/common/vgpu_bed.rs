//! The vGPU bed: an A100-PCIE-40GB and an H100 80GB of the fake, each with SR-IOV, the real
//! helper over the fake NVML, the fake's `sriov-manage` and its VF type writes, the fake's reset
//! backend on a virtual clock; the configs file the tests apply, and where a write shows in the
//! fake's call log.

use fake_nvml::support::{ProcRoot, VgpuHost, vgpu_host};
use fake_nvml::{FakeNvmlBackend, scenarios};
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::vf::VgpuTypes;
use gpu_host_probe::{Clock, VirtualClock};
use gpu_partition_types::Bdf;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::sriov::read_sriov;
use host_sync::{AfterBoot, Host, MemoryStore, Pool, StateStore};
use layout_model::Holding;
use mig_layout::vgpu::{SriovManage, VgpuDocument, VgpuWith, apply_vgpu, leave_vgpu};
use mig_layout::{ApplyOptions, ApplyReport, ApplyRun, Method, ResetWith, Restore, restore};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub const A100: &str = "0000:3b:00.0";
pub const H100: &str = "0000:3c:00.0";

pub const CONFIGS: &str = r#"version: v1
vgpu-configs:
  A100-1-5C:
    - devices: [0]
      vgpu-devices:
        A100-1-5C: 7
  A100-10C:
    - devices: [0]
      vgpu-devices:
        A100-10C: 4
  A100-two-time-sliced:
    - devices: [0]
      vgpu-devices:
        A100-10C: 2
        A100-20C: 1
  A100-too-many:
    - devices: [0]
      vgpu-devices:
        A100-1-5C: 8
  A100-does-not-fit:
    - devices: [0]
      vgpu-devices:
        A100-3-20C: 2
        A100-4-20C: 1
  H100-mixed:
    - devices: [1]
      vgpu-devices:
        H100XM-1-10C: 2
        H100XM-2-20C: 1
        H100XM-3-40C: 1
  H100-without-3-40C:
    - devices: [1]
      vgpu-devices:
        H100XM-1-10C: 2
        H100XM-2-20C: 1
"#;

pub struct Bed {
    pub dir: tempfile::TempDir,
    pub host: Host,
    pub helper: Helper,
    pub fake: VgpuHost,
    pub sysfs: FakeSysfs,
    pub log: PathBuf,
    pub store: MemoryStore,
    pub clock: Arc<VirtualClock>,
    pub backend: FakeNvmlBackend,
}

/// A sysfs in `dir` with an A100 PCIe at `at` bound to `nvidia`, its SR-IOV capability
/// offering 16 VFs, none enabled: the card every vGPU bed starts from.
pub fn sysfs_with_sriov_a100(dir: &std::path::Path, at: &str) -> FakeSysfs {
    let sysfs = FakeSysfs::new(dir.join("sys")).unwrap();
    sysfs
        .function(at, "0x10de", "0x20f1", "0x030200", Some("nvidia"))
        .unwrap()
        .sriov(at, 16)
        .unwrap();
    sysfs
}

impl Bed {
    pub fn new() -> Bed {
        Bed::with(|_| {})
    }

    /// A bed whose scenario `change` alters first.
    pub fn with(change: impl FnOnce(&mut serde_json::Value)) -> Bed {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = sysfs_with_sriov_a100(dir.path(), A100);
        sysfs
            .function(H100, "0x10de", "0x2330", "0x030200", Some("nvidia"))
            .unwrap()
            .sriov(H100, 20)
            .unwrap();
        let mut scenario: serde_json::Value = serde_json::from_str(
            &fake_nvml::support::scenario_of(&[
                (A100, scenarios::PART_A100_PCIE_40GB),
                (H100, scenarios::PART_H100_80GB),
            ])
            .unwrap(),
        )
        .unwrap();
        // The H100's VF count is this test's (no capture of an H100's sriov_totalvfs is in our
        // sources); 20 is what its catalogue's smallest type allows (H100XM-4C: 20).
        scenario["devices"][1]["sriov"] = serde_json::json!({"total_vfs": 20});
        change(&mut scenario);
        let nvml = dir.path().join("nvml");
        std::fs::create_dir_all(&nvml).unwrap();
        let log = dir.path().join("calls.log");
        let fake = vgpu_host(&nvml, &scenario.to_string(), Some(&log), sysfs.root()).unwrap();
        let host = super::booted_host(dir.path(), sysfs.root());
        let clock = Arc::new(VirtualClock::new(1_800_000_000_000));
        let backend = fake_nvml::backend(fake.state.path(), clock.clone());
        Bed {
            helper: Helper::new(HelperConfig::new(fake.helper.clone())),
            dir,
            host,
            fake,
            sysfs,
            log,
            store: MemoryStore::default(),
            clock,
            backend,
        }
    }

    /// An apply, a leave or a restore of this bed (the pool on), given its run.
    pub fn with_run<R>(&mut self, go: impl FnOnce(ApplyRun<'_>, &ApplyOptions) -> R) -> R {
        let types = self.fake.types.clone();
        self.with_types(&types, go)
    }

    /// The same, a VF's type written through `types` instead of the fake's driver.
    pub fn with_types<R>(
        &mut self,
        types: &dyn VgpuTypes,
        go: impl FnOnce(ApplyRun<'_>, &ApplyOptions) -> R,
    ) -> R {
        let options = ApplyOptions::new(Pool::Enabled);
        let clock: &dyn Clock = &*self.clock;
        let reset = ResetWith::new(Method::Nvidia, &mut self.backend)
            .window(Duration::from_secs(90))
            .clock(clock);
        let with = VgpuWith {
            sriov_manage: SriovManage::at(self.fake.sriov_manage.clone()),
            types,
        };
        let run = ApplyRun::new(&self.host, &self.helper, &mut self.store, reset).vgpu(with);
        go(run, &options)
    }

    pub fn run(&mut self, config: Option<&str>) -> ApplyReport {
        self.with_run(|run, options| match config {
            Some(label) => {
                let document = VgpuDocument::from_text(CONFIGS).unwrap();
                let specs = document.config(label).unwrap().to_vec();
                apply_vgpu(run, label, &specs, options).unwrap()
            }
            None => leave_vgpu(run, options).unwrap(),
        })
    }

    /// The writes of the log, in order: the mode, `sriov-manage`, GPU and compute instances made
    /// and destroyed, types.
    pub fn writes(&self) -> Vec<String> {
        super::logged(&self.log, |line| {
            [
                "nvmlDeviceSetMigMode",
                "sriov-manage",
                "nvmlDeviceCreateGpuInstance",
                "nvmlGpuInstanceCreateComputeInstance",
                "nvmlComputeInstanceDestroy",
                "nvmlGpuInstanceDestroy",
                "nvmlDeviceSetVgpuHeterogeneousMode",
                "current_vgpu_type",
            ]
            .iter()
            .any(|write| line.starts_with(write))
        })
    }

    pub fn types_on(&self, gpu: &str) -> Vec<u32> {
        let bdf: Bdf = gpu.parse().unwrap();
        let sriov = read_sriov(self.host.sysfs_root(), bdf).unwrap().unwrap();
        sriov
            .vfs
            .iter()
            .filter_map(|vf| vf.vgpu.as_ref()?.current_type.map(|id| id.0.get()))
            .collect()
    }

    /// A reboot of the fake (a new boot ID, no VF, no GPU instance).
    pub fn reboot(&self) {
        let proc_root = ProcRoot::at(self.dir.path().join("proc"));
        fake_nvml::support::reboot(
            &self.fake.state,
            &proc_root,
            "99999999-2222-3333-4444-555555555555",
        )
        .unwrap();
    }

    pub fn restore(&mut self) -> Restore {
        self.with_run(|run, options| restore(run, options).unwrap())
    }

    pub fn sync(&mut self, after_boot: AfterBoot) -> host_sync::SyncReport {
        super::sync_enabled(&self.host, &self.helper, &mut self.store, after_boot)
    }

    pub fn holding(&mut self) -> Holding {
        let state = self.store.load().unwrap().unwrap();
        state.declared.unwrap().holding(&self.host.now())
    }

    /// A VM (pid 4242, `qemu-kvm`) holding the VFIO group of the A100's VF 0.
    pub fn vm_on_vf0(&self) {
        self.sysfs.iommu_group("0000:3b:00.4", 71).unwrap();
        let fd = self.dir.path().join("proc/4242/fd");
        std::fs::create_dir_all(&fd).unwrap();
        std::os::unix::fs::symlink("/dev/vfio/71", fd.join("30")).unwrap();
        std::fs::write(self.dir.path().join("proc/4242/comm"), "qemu-kvm\n").unwrap();
    }

    pub fn card(&self, gpu: &str) -> fake_nvml::Device {
        self.fake
            .state
            .read()
            .unwrap()
            .device_at(gpu)
            .unwrap()
            .clone()
    }
}

/// Where in `writes` the first line starting with `prefix` is.
/// What each write is: the call or file its log line starts with.
pub fn kinds(writes: &[String]) -> Vec<&str> {
    writes
        .iter()
        .map(|line| line.split_whitespace().next().unwrap_or_default())
        .collect()
}

pub fn first(writes: &[String], prefix: &str) -> usize {
    writes
        .iter()
        .position(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {writes:#?}"))
}

pub fn last(writes: &[String], prefix: &str) -> usize {
    writes
        .iter()
        .rposition(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {writes:#?}"))
}
