//! AMD Instinct partitions: one MI300X against a hive of eight, each from SPX/NPS1 to CPX/NPS4
//! (a memory partition requested of every GPU, the driver reloaded, every GPU read back; the
//! reload's AUTO rule sets CPX for NPS4, so no compute write is needed), through the executor
//! and the fake amdgpu in one process. Each iteration goes back to SPX/NPS1 outside the timing.
//!
//! Modelled costs (the fake's `reload_cost`): a driver reload takes 140 ms — AMD's `amd-smi`
//! waits up to 140 s for a memory partition change to complete (its progress line "50/140
//! secs remain", ROCm/amdgpu-docs `mi300x/quick-start-guide.rst`), scaled by a thousandth so a
//! sample takes seconds — and costs the same for one GPU or eight: no source gives a reload's
//! time per GPU. A partition write costs nothing modelled: a memory write only caches a request
//! for the hive (amdgpu's `current_memory_partition_store`). The memory requests reach the hive
//! whole, and one reload carries them all out, so eight GPUs should take about one GPU's time
//! (the issue asks at most 1.3 times).

mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use gpu_host_probe::Host;
use gpu_host_probe::amdgpu::MemoryPartition;
use gpu_host_probe::helper::{Helper, HelperConfig};
use host_sync::fake_amdgpu::{FakeAmdgpu, MI300X, SharedAmdgpu};
use host_sync::{MemoryStore, Pool};
use mig_layout::amd::{AmdWith, DcmDocument, apply_amd};
use mig_layout::{ApplyOptions, ApplyOutcome, ApplyRun, Method, ResetWith};

use std::time::{Duration, Instant};

/// What one reload costs, modelled (see the module's comment).
const RELOAD: Duration = Duration::from_millis(140);

struct Bed {
    _dir: tempfile::TempDir,
    host: Host,
    helper: Helper,
    fake: SharedAmdgpu,
    document: DcmDocument,
}

impl Bed {
    fn new(gpus: usize) -> Option<Bed> {
        let (dir, sysfs) = common::scratch_with_sysfs()?;
        let mut fake = FakeAmdgpu::new(sysfs.clone());
        // Eight GPUs are one XGMI hive; one GPU is in none.
        let hive = (gpus > 1).then_some(42);
        for index in 0..gpus {
            let bdf = format!("0000:{:02x}:00.0", 0x05 + index * 0x10);
            fake.gpu(&bdf, MI300X, MemoryPartition::Nps1, hive).ok()?;
        }
        fake.reload_cost = RELOAD;
        let count = gpus;
        let document = DcmDocument::from_text(&format!(
            r#"{{"gpu-config-profiles": {{
                "cpx-nps4": {{"profiles": [{{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": {count}}}]}},
                "spx-nps1": {{"profiles": [{{"computePartition": "SPX", "memoryPartition": "NPS1", "numGPUsAssigned": {count}}}]}}
            }}}}"#
        ))
        .ok()?;
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_proc_root(dir.path().join("proc"))
            .with_lock_dir(dir.path().join("locks"));
        std::fs::create_dir_all(dir.path().join("proc")).ok()?;
        Some(Bed {
            helper: Helper::new(HelperConfig::new(dir.path().join("no-helper"))),
            _dir: dir,
            host,
            fake: SharedAmdgpu::new(fake),
            document,
        })
    }

    /// Applies CPX/NPS4 (timed), then SPX/NPS1 again (not timed).
    fn once(&mut self) -> Duration {
        let started = Instant::now();
        let outcome = self.apply("cpx-nps4");
        let took = started.elapsed();
        assert_eq!(outcome, ApplyOutcome::Done);
        assert_eq!(self.apply("spx-nps1"), ApplyOutcome::Done);
        took
    }

    fn apply(&mut self, name: &str) -> ApplyOutcome {
        let Some(profile) = self.document.profile(name) else {
            return ApplyOutcome::Blocked(mig_layout::ApplyReason::LayoutImpossible);
        };
        let mut store = MemoryStore::default();
        let mut backend = warm_reset::SysfsBackend::of(warm_reset::pci::SysfsHost::new(
            self.host.sysfs_root(),
            self.host.proc_root(),
            "/nonexistent/kmsg",
        ));
        let reset = ResetWith::new(Method::Pci, &mut backend);
        let with = AmdWith {
            writes: Some(&self.fake),
            ..AmdWith::default()
        };
        let run = ApplyRun::new(&self.host, &self.helper, &mut store, reset).amd(with);
        apply_amd(run, name, profile, &ApplyOptions::new(Pool::Enabled)).map_or(
            ApplyOutcome::Blocked(mig_layout::ApplyReason::GpuUnreadable),
            |report| report.outcome,
        )
    }
}

fn amd_partition(c: &mut Criterion) {
    common::one_against_eight(
        c,
        "amd_apply",
        "the fake amdgpu host",
        |gpus| Bed::new(usize::from(gpus)),
        Bed::once,
    );
}

criterion_group!(benches, amd_partition);
criterion_main!(benches);
