//! The PCI backend's overhead around a reset: a whole `--method pci` run (lock, journal,
//! sysfs reads, the holders of the VFIO group looked for in the real `/proc`, the kernel log,
//! the child that writes `1` to `reset`, the verification) against a built sysfs tree whose
//! `reset` is a FIFO held for 20 ms, as the kernel holds the write while it resets. The figure
//! is the wall time minus the hold.

use criterion::{Criterion, criterion_group, criterion_main};
use gpu_host_probe::Holder;
use gpu_partition_types::Bdf;
use host_sync::fake_sysfs::FakeSysfs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use warm_reset::PciBackend;
use warm_reset::io::KernelLogSource;
use warm_reset::pci::{FunctionState, PciHost, SysfsHost};
use warm_reset::{
    BackendError, Host, MachineConfig, Method, ResetEnd, ResetOutcome, ResetRun, ResetTarget,
    execute,
};

/// How long the FIFO holds the write.
const HOLD: Duration = Duration::from_millis(20);

const GPU: &str = "0000:3b:00.0";

/// The real sysfs host, run as if by root (the benchmark measures the work, not the refusal).
struct Rooted(SysfsHost);

impl PciHost for Rooted {
    fn is_root(&mut self) -> bool {
        true
    }
    fn kernel_log(&mut self) -> &mut dyn KernelLogSource {
        self.0.kernel_log()
    }
    fn check_writer(&mut self) -> Result<(), BackendError> {
        self.0.check_writer()
    }
    fn function(&mut self, bdf: Bdf) -> Result<Option<FunctionState>, BackendError> {
        self.0.function(bdf)
    }
    fn bus_functions(&mut self, bdf: Bdf) -> Result<Vec<Bdf>, BackendError> {
        self.0.bus_functions(bdf)
    }
    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        self.0.holders(files)
    }
    fn write_reset(&mut self, bdf: Bdf, within: Duration) -> ResetEnd {
        self.0.write_reset(bdf, within)
    }
}

/// Whether a process's command line names `path` (the child writing `reset`).
fn writer_of(path: &Path) -> bool {
    let wanted = path.to_string_lossy().into_owned();
    std::fs::read_dir("/proc").is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(&wanted))
        })
    })
}

/// Holds each write to the FIFO for [`HOLD`], then reads it.
fn serve(fifo: PathBuf, watched: PathBuf, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        if !writer_of(&watched) {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        std::thread::sleep(HOLD);
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&fifo) {
            let _ = file.read_to_string(&mut text);
        }
        while writer_of(&watched) {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn overhead(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let Ok(sysfs) = FakeSysfs::new(dir.path().join("sys")) else {
        return;
    };
    if sysfs
        .function(GPU, "0x10de", "0x2330", "0x030200", Some("vfio-pci"))
        .is_err()
    {
        return;
    }
    let device = sysfs.device_dir(GPU);
    let ready = std::fs::write(device.join("reset_method"), "flr\n")
        .and_then(|()| {
            std::os::unix::fs::symlink(
                "../../../kernel/iommu_groups/12",
                device.join("iommu_group"),
            )
        })
        .and_then(|()| std::fs::write(dir.path().join("kmsg"), "6,1,1,-;booted\n"));
    let fifo = device.join("reset");
    if ready.is_err()
        || nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).is_err()
    {
        return;
    }
    let watched = sysfs.root().join("bus/pci/devices").join(GPU).join("reset");
    let stop = Arc::new(AtomicBool::new(false));
    let server = {
        let (fifo, watched, stop) = (fifo.clone(), watched.clone(), stop.clone());
        std::thread::spawn(move || serve(fifo, watched, stop))
    };
    // The built tree's host: its lock is kept beside the tree, never among the machine's.
    let host = Host::new(dir.path().join("state")).with_sysfs_root(sysfs.root());
    let target = ResetTarget::device(Bdf::on_bus(0x3b));
    let config = MachineConfig::new(target).method(Method::Pci);
    let mut group = c.benchmark_group("warm_reset_pci");
    group.sample_size(30);
    group.bench_function("reset_overhead_beyond_a_20ms_hold", |b| {
        b.iter_custom(|iterations| {
            let mut spent = Duration::ZERO;
            for _ in 0..iterations {
                let mut backend = PciBackend::of(Rooted(SysfsHost::new(
                    sysfs.root(),
                    "/proc",
                    dir.path().join("kmsg"),
                )));
                let started = Instant::now();
                let report = execute(ResetRun::new(&config, &host, &mut backend));
                let took = started.elapsed();
                assert!(
                    report
                        .as_ref()
                        .is_ok_and(|r| r.outcome == ResetOutcome::Done),
                    "{report:?}"
                );
                spent += took.saturating_sub(HOLD);
            }
            spent
        })
    });
    group.finish();
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
