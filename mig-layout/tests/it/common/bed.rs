//! The executor's test bed: A100-SXM4-40GB cards (MIG off, a mode change waits for a reset),
//! each bound to `nvidia` in a built sysfs, with the real helper over the fake NVML (its state
//! in a file, so consecutive runs see each other's writes) and the fake's reset backend on a
//! virtual clock.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::{Device, FakeNvmlBackend, MigMode, Scenario, StateFile, scenarios};
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::{Clock, VirtualClock};
use gpu_partition_types::Bdf;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{Host, MemoryStore, Pool, StateStore};
use mig_layout::{
    ApplyOptions, ApplyReport, ApplyRun, Document, Method, Progress, ResetWith, Restore, apply,
    restore,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub const FIRST: &str = "0000:3b:00.0";
pub const SECOND: &str = "0000:3c:00.0";

/// The layouts the tests apply.
pub const LAYOUTS: &str = r#"version: v1
mig-configs:
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
  first-3g:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        "3g.20gb": 1
  first-on:
    - devices: [0]
      mig-enabled: true
      mig-devices: {}
  too-many:
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.5gb": 8
  all-disabled:
    - devices: all
      mig-enabled: false
  gpu-7:
    - devices: [7]
      mig-enabled: true
      mig-devices:
        "1g.5gb": 7
"#;

pub fn bdf(text: &str) -> Bdf {
    text.parse().unwrap()
}

/// A host of A100-SXM4-40GB cards (MIG off, a mode change waits for a reset), each bound to
/// `nvidia` in a built sysfs, with the real helper over the fake NVML and the fake's reset
/// backend on a virtual clock.
pub struct Bed {
    pub dir: tempfile::TempDir,
    pub host: Host,
    pub helper: Helper,
    pub state: PathBuf,
    pub store: MemoryStore,
    pub clock: Arc<VirtualClock>,
    pub backend: FakeNvmlBackend,
}

impl Bed {
    pub fn new(cards: &[(&str, &str)], nvlink: &[&[&str]]) -> Bed {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
        for (bus_id, _) in cards {
            sysfs
                .function(bus_id, "0x10de", "0x20b0", "0x030200", Some("nvidia"))
                .unwrap();
        }
        let mut scenario: serde_json::Value =
            serde_json::from_str(&fake_nvml::support::scenario_of(cards).unwrap()).unwrap();
        scenario["nvlink"] = serde_json::json!(nvlink);
        let nvml = dir.path().join("nvml");
        std::fs::create_dir_all(&nvml).unwrap();
        let (wrapper, state) =
            fake_nvml::support::stateful_helper_wrapper(&nvml, &scenario.to_string(), None)
                .unwrap();
        let host = super::booted_host(dir.path(), sysfs.root());
        let clock = Arc::new(VirtualClock::new(1_800_000_000_000));
        let backend = fake_nvml::backend(&state, clock.clone());
        Bed {
            host,
            helper: Helper::new(HelperConfig::new(wrapper)),
            state,
            store: MemoryStore::default(),
            clock,
            backend,
            dir,
        }
    }

    pub fn two_a100s() -> Bed {
        Self::new(
            &[
                (FIRST, scenarios::A100_MIG_OFF),
                (SECOND, scenarios::A100_MIG_OFF),
            ],
            &[],
        )
    }

    /// Declares, under the host lock, that `bus_id` is owned by `ownership`.
    pub fn owned_by(&mut self, bus_id: &str, ownership: gpu_host_probe::Ownership) {
        let lock = self.host.lock(Duration::from_secs(5)).unwrap();
        host_sync::set_ownership(&lock, &mut self.store, bdf(bus_id), ownership).unwrap();
    }

    /// Changes the fake's state as another NVML client (or the world) would.
    pub fn change(&self, change: impl FnOnce(&mut Scenario)) {
        change_state(&self.state, change);
    }

    pub fn card(&self, bus_id: &str) -> Device {
        let scenario = StateFile::new(&self.state).read().unwrap();
        scenario.device_at(bus_id).unwrap().clone()
    }

    /// An apply of the layout `label` of [`LAYOUTS`], the pool on.
    pub fn options(&self, label: &'static str) -> Labelled {
        Labelled {
            label,
            options: ApplyOptions::new(Pool::Enabled),
        }
    }

    pub fn apply(&mut self, options: &Labelled) -> ApplyReport {
        self.apply_observed(options, &mut |_| {})
    }

    pub fn apply_observed(
        &mut self,
        options: &Labelled,
        observe: &mut dyn FnMut(&Progress),
    ) -> ApplyReport {
        let document = Document::from_text(LAYOUTS).unwrap();
        let specs = document.label(options.label).unwrap().to_vec();
        let clock: &dyn Clock = &*self.clock;
        let reset = ResetWith::new(Method::Nvidia, &mut self.backend)
            .window(Duration::from_secs(90))
            .clock(clock);
        let run = ApplyRun::new(&self.host, &self.helper, &mut self.store, reset).observe(observe);
        apply(run, options.label, &specs, &options.options).unwrap()
    }

    pub fn restore(&mut self, options: &ApplyOptions) -> Restore {
        let clock: &dyn Clock = &*self.clock;
        let reset = ResetWith::new(Method::Nvidia, &mut self.backend)
            .window(Duration::from_secs(90))
            .clock(clock);
        restore(
            ApplyRun::new(&self.host, &self.helper, &mut self.store, reset),
            options,
        )
        .unwrap()
    }

    /// The stored layout record's outcome and reason tokens.
    pub fn recorded(&mut self) -> (String, Option<String>) {
        let layout = self.store.load().unwrap().unwrap().layout.unwrap();
        let json = serde_json::to_value(&layout).unwrap();
        (
            json["outcome"].as_str().unwrap().to_owned(),
            json["reason"].as_str().map(str::to_owned),
        )
    }
}

pub fn change_state(state: &std::path::Path, change: impl FnOnce(&mut Scenario)) {
    StateFile::new(state)
        .change(|scenario| {
            change(scenario);
            Ok::<(), ()>(())
        })
        .unwrap();
}

pub fn device_mut<'a>(scenario: &'a mut Scenario, bus_id: &str) -> &'a mut Device {
    scenario.device_at_mut(bus_id).unwrap()
}

pub fn mig(device: &Device) -> (u32, u32) {
    match device.mig_mode {
        MigMode::Mode { current, pending } => (current, pending),
        _ => panic!("no MIG"),
    }
}

/// An apply's options with the label of [`LAYOUTS`] it applies.
pub struct Labelled {
    pub label: &'static str,
    pub options: ApplyOptions,
}

impl Labelled {
    pub fn cancel(mut self, cancel: gpu_host_probe::Cancel) -> Self {
        self.options = self.options.cancel(cancel);
        self
    }

    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.options = self.options.dry_run(dry_run);
        self
    }

    pub fn hooks(mut self, hooks: mig_layout::Hooks) -> Self {
        self.options = self.options.hooks(hooks);
        self
    }

    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.options = self.options.lock_wait(wait);
        self
    }

    pub fn pool(mut self, pool: Pool) -> Self {
        self.options.pool = pool;
        self
    }
}
