//! The executor's overhead around a warm reset, measured with the simulator on the real clock:
//! a reset that takes 500 ms, polled every second as the procedure does. The figure to read is
//! the total minus 500 ms (target: under one poll interval plus 200 ms): once with GPUs listed
//! back as soon as `mx-smi -r` returns, once with GPUs back 300 ms later (one more poll).

use criterion::{Criterion, criterion_group, criterion_main};
use gpu_host_probe::SystemClock;
use gpu_partition_types::Bdf;
use std::sync::Arc;
use std::time::Duration;
use warm_reset::sim::{SimMetax, SimNvidia, SimPci};
use warm_reset::{Host, MachineConfig, Method, ResetOutcome, ResetRun, ResetTarget, execute};

/// The simulated PCI host's GPU, 0000:3b:00.0.
const GPU_3B: Bdf = Bdf::on_bus(0x3b);

fn overhead(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    // A built tree's host: its lock is kept beside the tree, never among the machine's.
    let host = Host::new(dir.path()).with_sysfs_root(dir.path().join("sys"));
    let config = MachineConfig::new(ResetTarget::index(1));
    let mut group = c.benchmark_group("warm_reset_simulated");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    for recovery_ms in [0, 300] {
        let name = format!("reset_500ms_back_after_{recovery_ms}ms_poll_1s");
        group.bench_function(name, |b| {
            b.iter(|| {
                let clock = Arc::new(SystemClock::new());
                let mut sim = SimMetax::new(clock.clone(), &[2, 2]);
                sim.host_mut().reset_duration = Duration::from_millis(500);
                sim.host_mut().recovery = Duration::from_millis(recovery_ms);
                let report = execute(ResetRun::new(&config, &host, &mut sim).clock(clock.as_ref()));
                assert!(report.is_ok_and(|report| report.outcome == ResetOutcome::Done));
            })
        });
    }
    // The same for the other methods: `nvidia-smi --gpu-reset` and the sysfs write, each 500 ms,
    // their GPUs back 300 ms after it ends.
    let nvidia = MachineConfig::new(ResetTarget::index(0)).method(Method::Nvidia);
    group.bench_function("nvidia_reset_500ms_back_after_300ms", |b| {
        b.iter(|| {
            let clock = Arc::new(SystemClock::new());
            let mut sim = SimNvidia::new(clock.clone(), 2, &[]);
            sim.host_mut().reset_duration = Duration::from_millis(500);
            sim.host_mut().recovery = Duration::from_millis(300);
            let report = execute(ResetRun::new(&nvidia, &host, &mut sim).clock(clock.as_ref()));
            assert!(report.is_ok_and(|report| report.outcome == ResetOutcome::Done));
        })
    });
    let pci = MachineConfig::new(ResetTarget::device(GPU_3B)).method(Method::Pci);
    group.bench_function("pci_reset_500ms_back_after_300ms", |b| {
        b.iter(|| {
            let clock = Arc::new(SystemClock::new());
            let mut sim = SimPci::new(clock.clone());
            sim.host_mut().reset_duration = Duration::from_millis(500);
            sim.host_mut().recovery = Duration::from_millis(300);
            let report = execute(ResetRun::new(&pci, &host, &mut sim).clock(clock.as_ref()));
            assert!(report.is_ok_and(|report| report.outcome == ResetOutcome::Done));
        })
    });
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
