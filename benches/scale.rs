//! Partitioning 1, 2, 4 and 8 A100-SXM4-40GB cards at a real card's pace: the fake NVML's
//! cost model (`costs` of the scenario) makes each GPU-instance create take 100 ms, each
//! compute-instance create 50 ms, the mode change 50 ms, the driver's answer to a card's
//! handle 20 ms (it stands for a read's latency), and a GPU reset 1 s on the real clock.
//! NVIDIA publishes no such figures: these are ours, and what the benchmark shows is the ratio
//! of N cards to one.
//!
//! - `apply`: MIG off to seven `1g.5gb` on every card (each mode change waits for a reset).
//! - `restore`: after a reboot (the Ampere mode kept, the instances gone), the declared layout
//!   back.
//! - `assert`: every card read and compared with the layout.
//!
//! `cargo bench -p benches --bench scale`

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use fake_nvml::{Scenario, StateFile};
use gpu_host_probe::helper::{Helper, HelperConfig};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{MemoryStore, Pool, StateStore};
use mig_layout::{ApplyOptions, ApplyRun, Document, Host, Method, ResetWith};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const LAYOUT: &str = "version: v1
mig-configs:
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices: {\"1g.5gb\": 7}
";

/// The cost model, with the driver's answer to a card's handle taking `read_ms`.
fn costs(read_ms: u64) -> serde_json::Value {
    serde_json::json!({"reset_ms": 1000, "calls_ms": {
        "nvmlDeviceCreateGpuInstanceWithPlacement": 100,
        "nvmlGpuInstanceCreateComputeInstanceWithPlacement": 50,
        "nvmlGpuInstanceCreateComputeInstance": 50,
        "nvmlDeviceSetMigMode": 50,
        "nvmlDeviceGetHandleByPciBusId_v2": read_ms}})
}

/// A host of `n` A100s bound to `nvidia`, the real helper over the fake, its state file.
struct Bed {
    _dir: tempfile::TempDir,
    host: Host,
    helper: Helper,
    state: PathBuf,
    fresh: Scenario,
}

impl Bed {
    fn new(n: u8, read_ms: u64) -> Option<Bed> {
        let dir = tempfile::tempdir().ok()?;
        let sysfs = FakeSysfs::new(dir.path().join("sys")).ok()?;
        let buses: Vec<String> = (0..n)
            .map(|i| format!("0000:{:02x}:00.0", 0x3b + i))
            .collect();
        for bus in &buses {
            sysfs
                .function(bus, "0x10de", "0x20b0", "0x030200", Some("nvidia"))
                .ok()?;
        }
        let cards: Vec<(&str, &str)> = buses
            .iter()
            .map(|bus| (bus.as_str(), fake_nvml::scenarios::A100_MIG_OFF))
            .collect();
        let mut scenario: serde_json::Value =
            serde_json::from_str(&fake_nvml::support::scenario_of(&cards).ok()?).ok()?;
        scenario["costs"] = costs(read_ms);
        let nvml = dir.path().join("nvml");
        std::fs::create_dir_all(&nvml).ok()?;
        let (wrapper, state) =
            fake_nvml::support::stateful_helper_wrapper(&nvml, &scenario.to_string(), None).ok()?;
        let proc_root = fake_nvml::support::ProcRoot::booted(
            dir.path().join("proc"),
            "11111111-2222-3333-4444-555555555555",
        )
        .ok()?;
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_proc_root(proc_root.path())
            .with_lock_dir(dir.path().join("locks"));
        let fresh = Scenario::from_json(scenario.to_string().as_bytes()).ok()?;
        Some(Bed {
            host,
            helper: Helper::new(HelperConfig::new(wrapper)),
            state,
            fresh,
            _dir: dir,
        })
    }

    /// Every card back to MIG off with nothing on it.
    fn reset_cards(&self) {
        let _ = StateFile::new(&self.state).write(&self.fresh);
    }

    /// What a reboot leaves of the cards: the Ampere mode kept, the instances gone.
    fn reboot(&self) {
        let _ = StateFile::new(&self.state).reboot();
    }

    fn apply(&self, store: &mut MemoryStore) -> bool {
        let Ok(document) = Document::from_text(LAYOUT) else {
            return false;
        };
        let Some(specs) = document.label("all-1g.5gb") else {
            return false;
        };
        self.with_run(store, |run| {
            mig_layout::apply(run, "all-1g.5gb", specs, &ApplyOptions::new(Pool::Enabled))
                .is_ok_and(|report| report.outcome == mig_layout::ApplyOutcome::Done)
        })
    }

    fn restore(&self, store: &mut MemoryStore) -> bool {
        self.with_run(store, |run| {
            matches!(
                mig_layout::restore(run, &ApplyOptions::new(Pool::Enabled)),
                Ok(mig_layout::Restore::Ran(report)) if report.outcome == mig_layout::ApplyOutcome::Done
            )
        })
    }

    /// `then` given a run over these cards whose resets go to the fake NVML on the real clock.
    fn with_run<T>(&self, store: &mut MemoryStore, then: impl FnOnce(ApplyRun<'_>) -> T) -> T {
        let clock: Arc<dyn mig_layout::Clock> = Arc::new(gpu_host_probe::SystemClock::new());
        let mut backend = fake_nvml::backend(&self.state, clock.clone());
        let reset = ResetWith::new(Method::Nvidia, &mut backend)
            .window(Duration::from_secs(30))
            .clock(&*clock);
        then(ApplyRun::new(&self.host, &self.helper, store, reset))
    }

    fn assert(&self) -> bool {
        let Ok(document) = Document::from_text(LAYOUT) else {
            return false;
        };
        let Some(specs) = document.label("all-1g.5gb") else {
            return false;
        };
        let mut store = host_sync::MemoryStore::default();
        mig_layout::assert_applied(
            mig_layout::AssertRun::new(&self.host, &self.helper, &mut store),
            "all-1g.5gb",
            specs,
            &ApplyOptions::new(Pool::Enabled),
        )
        .is_ok()
    }
}

const SIZES: [u8; 4] = [1, 2, 4, 8];

fn scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("a100s_at_card_costs");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(20));
    for n in SIZES {
        let Some(bed) = Bed::new(n, 20) else {
            eprintln!("cannot prepare {n} cards");
            return;
        };
        group.bench_with_input(BenchmarkId::new("apply", n), &bed, |b, bed| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    bed.reset_cards();
                    let mut store = MemoryStore::default();
                    let started = Instant::now();
                    assert!(bed.apply(&mut store), "the apply did not end done");
                    spent += started.elapsed();
                }
                spent
            })
        });
        group.bench_with_input(BenchmarkId::new("restore", n), &bed, |b, bed| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                bed.reset_cards();
                let mut store = MemoryStore::default();
                assert!(bed.apply(&mut store), "the apply did not end done");
                for _ in 0..iters {
                    bed.reboot();
                    let mut again = MemoryStore::default();
                    let Ok(Some(state)) = store.load() else { break };
                    let _ = again.save(&state);
                    let started = Instant::now();
                    assert!(bed.restore(&mut again), "the restore did not end done");
                    spent += started.elapsed();
                }
                spent
            })
        });
        // The read's latency swept: 20 ms and 100 ms a card (no figure is published).
        for read_ms in [20, 100] {
            let Some(bed) = Bed::new(n, read_ms) else {
                return;
            };
            bed.reset_cards();
            let mut store = MemoryStore::default();
            assert!(bed.apply(&mut store), "the apply did not end done");
            group.bench_with_input(
                BenchmarkId::new(format!("assert_read_{read_ms}ms"), n),
                &bed,
                |b, bed| b.iter(|| assert!(bed.assert())),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
