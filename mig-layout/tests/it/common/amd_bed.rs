//! The AMD executor's test bed: eight GPUs of a part in a fake amdgpu (the kernel's rules, in
//! one process) on a host built over a test tree, the fake's writers handed to every run.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::assert_outcome;
use gpu_host_probe::amdgpu::MemoryPartition as M;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_partition_types::Bdf;
use host_sync::fake_amdgpu::{AmdPart, FakeAmdgpu, SharedAmdgpu};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{AfterBoot, Host, MemoryStore, Pool};
use mig_layout::amd::{AmdWith, DcmDocument, apply_amd};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyReport, ApplyRun, Method, ResetWith, Restore, restore,
};

use warm_reset::SysfsBackend;

pub const PROFILES: &str = r#"{
  "gpu-config-profiles": {
    "cpx-nps4": {"profiles": [{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]},
    "spx-nps4": {"profiles": [{"computePartition": "SPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]},
    "qpx-nps1": {"profiles": [{"computePartition": "QPX", "memoryPartition": "NPS1", "numGPUsAssigned": 8}]},
    "spx-nps1": {"profiles": [{"computePartition": "SPX", "memoryPartition": "NPS1", "numGPUsAssigned": 8}]}
  },
  "gpuClientSystemdServices": {"names": ["amd-metrics-exporter"]}
}"#;

pub fn bdf(index: usize) -> String {
    format!("0000:{:02x}:00.0", 0x05 + index * 0x10)
}

pub fn at(index: usize) -> Bdf {
    bdf(index).parse().unwrap()
}

pub struct Bed {
    pub dir: tempfile::TempDir,
    pub host: Host,
    pub fake: SharedAmdgpu,
    pub store: MemoryStore,
    pub helper: Helper,
    pub services: Vec<String>,
    pub hooks: mig_layout::Hooks,
}

impl Bed {
    /// A host of eight GPUs of `part` in one XGMI hive, in NPS1 (SPX, as a load in NPS1 sets).
    pub fn new(part: AmdPart) -> Bed {
        Self::hives(part, |_| 42)
    }

    /// Eight GPUs of `part`, each in the hive `hive` gives its index.
    pub fn hives(part: AmdPart, hive: fn(usize) -> u64) -> Bed {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
        let mut fake = FakeAmdgpu::new(sysfs.clone());
        for index in 0..8 {
            fake.gpu(&bdf(index), part, M::Nps1, Some(hive(index)))
                .unwrap();
        }
        let boot = dir.path().join("proc/sys/kernel/random");
        std::fs::create_dir_all(&boot).unwrap();
        std::fs::write(boot.join("boot_id"), "boot-1\n").unwrap();
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_proc_root(dir.path().join("proc"))
            .with_lock_dir(dir.path().join("locks"));
        // No helper on this host: an AMD apply never runs it.
        let helper = Helper::new(HelperConfig::new(dir.path().join("no-helper")));
        Bed {
            dir,
            host,
            fake: SharedAmdgpu::new(fake),
            store: MemoryStore::default(),
            helper,
            services: vec!["amd-metrics-exporter".to_owned()],
            hooks: mig_layout::Hooks::none(),
        }
    }

    pub fn options(&self) -> ApplyOptions {
        ApplyOptions::new(Pool::Enabled).hooks(self.hooks.clone())
    }

    pub fn run<R>(&mut self, go: impl FnOnce(ApplyRun<'_>, &ApplyOptions) -> R) -> R {
        let options = self.options();
        let mut backend = SysfsBackend::of(warm_reset::pci::SysfsHost::new(
            self.host.sysfs_root(),
            self.host.proc_root(),
            "/nonexistent/kmsg",
        ));
        let reset = ResetWith::new(Method::Pci, &mut backend);
        let with = AmdWith {
            writes: Some(&self.fake),
            client_services: self.services.clone(),
            ..AmdWith::default()
        };
        let run = ApplyRun::new(&self.host, &self.helper, &mut self.store, reset).amd(with);
        go(run, &options)
    }

    pub fn apply(&mut self, profile: &str) -> ApplyReport {
        self.apply_from(PROFILES, profile)
    }

    pub fn apply_from(&mut self, profiles: &str, profile: &str) -> ApplyReport {
        let document = DcmDocument::from_text(profiles).unwrap();
        let profile_of = document.profile(profile).unwrap().clone();
        self.run(|run, options| apply_amd(run, profile, &profile_of, options).unwrap())
    }

    pub fn restore(&mut self) -> Restore {
        self.run(|run, options| restore(run, options).unwrap())
    }

    pub fn sync(&mut self, after_boot: AfterBoot) -> host_sync::SyncReport {
        super::sync_enabled(&self.host, &self.helper, &mut self.store, after_boot)
    }

    pub fn log(&self) -> Vec<String> {
        self.fake.lock().unwrap().log.clone()
    }

    pub fn reloads(&self) -> usize {
        self.fake.lock().unwrap().reloads()
    }

    /// A process (`pid`, named `name`) holding `file` open.
    pub fn holder(&self, pid: u32, name: &str, file: &str) {
        let fd = self.dir.path().join(format!("proc/{pid}/fd"));
        std::fs::create_dir_all(&fd).unwrap();
        std::os::unix::fs::symlink(file, fd.join("3")).unwrap();
        std::fs::write(
            self.dir.path().join(format!("proc/{pid}/comm")),
            format!("{name}\n"),
        )
        .unwrap();
    }

    /// The systemd service `amd-metrics-exporter` running as `pid` (its cgroup's processes),
    /// or stopped (`None`); answers its cgroup's `cgroup.procs`.
    pub fn exporter_running(&self, pid: Option<u32>) -> std::path::PathBuf {
        let cgroup = self
            .host
            .sysfs_root()
            .join("fs/cgroup/system.slice/amd-metrics-exporter.service");
        std::fs::create_dir_all(&cgroup).unwrap();
        let procs = cgroup.join("cgroup.procs");
        let text = pid.map_or_else(String::new, |pid| format!("{pid}\n"));
        std::fs::write(&procs, text).unwrap();
        procs
    }

    /// A new boot of the machine: the fake's reboot and a new boot ID.
    pub fn reboot(&self) {
        self.fake.lock().unwrap().reboot().unwrap();
        std::fs::write(
            self.dir.path().join("proc/sys/kernel/random/boot_id"),
            "boot-2\n",
        )
        .unwrap();
    }
}

pub fn reason(report: &ApplyReport) -> Option<&str> {
    report.outcome.reason()
}

/// That `report` ended `outcome`, its detail saying `says`.
pub fn assert_ends(report: &ApplyReport, outcome: ApplyOutcome, says: &str) {
    assert_outcome(report, outcome);
    let detail = report.detail.as_deref().unwrap_or_default();
    assert!(detail.contains(says), "{detail}");
}
