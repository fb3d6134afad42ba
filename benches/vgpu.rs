//! vGPU layouts: one H100 80GB against eight, each from no VF to `H100XM-1-10C: 4` (MIG on,
//! `sriov-manage -e`, four GPU instances, four type writes, each read back), through the
//! executor, the real helper, the fake NVML, the fake's `sriov-manage` and its driver's side of
//! the type writes. Each iteration leaves vGPU again outside the timing.
//!
//! Modelled costs (the fake's `costs`): `sriov-manage` takes 375 ms per card — a tenth of what
//! gpu-operator PR 2002 measured (8 GPUs, 160 VFs enabled in "30 s or more": 3.75 s per card of
//! 20 VFs), scaled so a sample takes seconds, not minutes — and creating a GPU instance 200 ms
//! (the figure `benches/partition.rs` uses; NVIDIA publishes none). Nothing published says the
//! driver serializes `sriov-manage` across cards (NVIDIA's script does one after another only
//! when given `ALL`), so the fake runs cards side by side, and so does the executor: eight GPUs
//! should take about one GPU's time. The fake keeps every card in one state file, written whole
//! and fsynced under one lock on each change: on a disk that alone serialized the eight cards
//! (2.6 times one card's time, measured), a cost no card has, so the bed lives on tmpfs.

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use fake_nvml::support::{self, ProcRoot, VgpuHost};
use fake_nvml::{FakeNvmlBackend, scenarios};
use gpu_host_probe::Host;
use gpu_host_probe::helper::{Helper, HelperConfig};
use host_sync::{MemoryStore, Pool};
use mig_layout::vgpu::{SriovManage, VgpuDocument, VgpuSpec, VgpuWith, apply_vgpu, leave_vgpu};
use mig_layout::{ApplyOptions, ApplyOutcome, ApplyRun, Method, ResetWith};
use std::time::{Duration, Instant};

const CONFIG: &str = "version: v1
vgpu-configs:
  four:
    - devices: all
      vgpu-devices:
        H100XM-1-10C: 4
";

struct Bed {
    _dir: tempfile::TempDir,
    host: Host,
    helper: Helper,
    fake: VgpuHost,
    backend: FakeNvmlBackend,
    specs: Vec<VgpuSpec>,
}

impl Bed {
    fn new(cards: u8) -> Option<Bed> {
        // The fake's state and sysfs on tmpfs where there is one: its state file is written
        // whole and fsynced on every change, a cost of the fake (one file for every card) that
        // no card has.
        let (dir, sysfs) = common::scratch_with_sysfs()?;
        let buses: Vec<String> = (0..cards)
            .map(|n| format!("0000:{:02x}:00.0", 0x3b + n))
            .collect();
        for bus in &buses {
            sysfs
                .function(bus, "0x10de", "0x2330", "0x030200", Some("nvidia"))
                .ok()?
                .sriov(bus, 20)
                .ok()?;
        }
        let pairs: Vec<(&str, &str)> = buses
            .iter()
            .map(|bus| (bus.as_str(), scenarios::PART_H100_80GB))
            .collect();
        let mut scenario: serde_json::Value =
            serde_json::from_str(&support::scenario_of(&pairs).ok()?).ok()?;
        for n in 0..usize::from(cards) {
            scenario["devices"][n]["sriov"] = serde_json::json!({"total_vfs": 20});
        }
        scenario["costs"] = serde_json::json!({
            "sriov_manage_ms": 375,
            "calls_ms": {"nvmlDeviceCreateGpuInstanceWithPlacement": 200}
        });
        let nvml = dir.path().join("nvml");
        std::fs::create_dir_all(&nvml).ok()?;
        let fake = support::vgpu_host(&nvml, &scenario.to_string(), None, sysfs.root()).ok()?;
        let proc_root = ProcRoot::booted(dir.path().join("proc"), "1").ok()?;
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_proc_root(proc_root.path())
            .with_lock_dir(dir.path().join("locks"));
        let clock = std::sync::Arc::new(gpu_host_probe::VirtualClock::new(0));
        let backend = fake_nvml::backend(fake.state.path(), clock);
        let specs = VgpuDocument::from_text(CONFIG)
            .ok()?
            .config("four")?
            .to_vec();
        Some(Bed {
            helper: Helper::new(HelperConfig::new(fake.helper.clone())),
            _dir: dir,
            host,
            fake,
            backend,
            specs,
        })
    }

    /// Applies the config (timed), then leaves vGPU (not timed).
    fn once(&mut self) -> Duration {
        let options = ApplyOptions::new(Pool::Enabled);
        let started = Instant::now();
        let outcome = self.run(&options, true);
        let took = started.elapsed();
        assert_eq!(outcome, ApplyOutcome::Done);
        assert_eq!(self.run(&options, false), ApplyOutcome::Done);
        took
    }

    fn run(&mut self, options: &ApplyOptions, apply: bool) -> ApplyOutcome {
        let mut store = MemoryStore::default();
        let reset = ResetWith::new(Method::Nvidia, &mut self.backend);
        let with = VgpuWith {
            sriov_manage: SriovManage::at(self.fake.sriov_manage.clone()),
            types: &self.fake.types,
        };
        let run = ApplyRun::new(&self.host, &self.helper, &mut store, reset).vgpu(with);
        let report = if apply {
            apply_vgpu(run, "four", &self.specs, options)
        } else {
            leave_vgpu(run, options)
        };
        report.map_or(
            ApplyOutcome::Blocked(mig_layout::ApplyReason::GpuUnreadable),
            |r| r.outcome,
        )
    }
}

fn vgpu_layout(c: &mut Criterion) {
    common::one_against_eight(c, "vgpu_apply", "the fake vGPU host", Bed::new, Bed::once);
}

criterion_group!(benches, vgpu_layout);
criterion_main!(benches);
