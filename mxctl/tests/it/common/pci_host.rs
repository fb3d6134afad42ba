//! A host for `mxctl reset --method pci`: a sysfs tree whose function's `reset` file is a FIFO
//! the test serves (so a reset can succeed, hang, or break the device), a `<proc-root>` with fd
//! links, a kernel log file and a state directory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::machine::Machine;
use std::io::Read;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const GPU: &str = "0000:3b:00.0";
pub const AUDIO: &str = "0000:3b:00.1";

machine_host!(PciHost);

impl PciHost {
    /// A GPU at [`GPU`] bound to `vfio-pci` (FLR first, then bus) and its audio function at
    /// [`AUDIO`] bound to `vfio-pci`, both in IOMMU group 12; the GPU's `reset` is a FIFO.
    pub fn new() -> PciHost {
        let host = PciHost {
            machine: Machine::new(),
        };
        host.sysfs
            .function(GPU, "0x10de", "0x2330", "0x030200", Some("vfio-pci"))
            .unwrap();
        host.sysfs
            .function(AUDIO, "0x10de", "0x22a3", "0x040300", Some("vfio-pci"))
            .unwrap();
        host.set_methods(GPU, "flr bus");
        host.set_methods(AUDIO, "flr");
        for bdf in [GPU, AUDIO] {
            symlink(
                "../../../kernel/iommu_groups/12",
                host.sysfs.device_dir(bdf).join("iommu_group"),
            )
            .unwrap();
        }
        nix::unistd::mkfifo(
            &host.sysfs.device_dir(GPU).join("reset"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        host.write_kmsg("6,1,100,-;vfio-pci 0000:3b:00.0: enabling device\n");
        host
    }

    pub fn set_methods(&self, bdf: &str, methods: &str) {
        std::fs::write(
            self.sysfs.device_dir(bdf).join("reset_method"),
            format!("{methods}\n"),
        )
        .unwrap();
    }

    /// Binds `bdf` to `driver` instead.
    pub fn bind(&self, bdf: &str, driver: &str) {
        let link = self.sysfs.device_dir(bdf).join("driver");
        std::fs::remove_file(&link).unwrap();
        symlink(format!("../../../bus/pci/drivers/{driver}"), link).unwrap();
    }

    /// A process `pid` named `comm` holding `file` open.
    pub fn holder(&self, pid: u32, comm: &str, file: &str) {
        self.machine.holder(pid, comm, file, 5);
    }

    pub fn write_kmsg(&self, text: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path("kmsg"))
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    /// `mxctl --json reset --method pci --kmsg … ARGS…`.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = self.mxctl(&["reset", "--method", "pci", "--kmsg"]);
        command.arg(self.path("kmsg")).args(args);
        command
    }

    pub fn reset(&self, args: &[&str]) -> (i32, serde_json::Value) {
        super::run_json(self.command(args))
    }

    /// Serves the GPU's `reset` FIFO: each time a writer appears, `during` runs (the device
    /// changes while the kernel resets it), then the `1` is read.
    pub fn serve(&self, during: impl Fn() + Send + 'static) -> ResetFile {
        ResetFile::serve(
            self.reset_file(),
            self.sysfs.device_dir(GPU).join("reset"),
            Box::new(during),
        )
    }

    /// The GPU's `reset` file as the backend names it (through `bus/pci/devices`).
    pub fn reset_file(&self) -> PathBuf {
        self.sysfs
            .root()
            .join("bus/pci/devices")
            .join(GPU)
            .join("reset")
    }

    /// Watches the `reset` FIFO without ever reading it: a writer blocks until it is killed.
    pub fn never_serve(&self) -> ResetFile {
        ResetFile::watch(self.reset_file())
    }
}

/// Whether a process is writing (or trying to open) `path`: its command line names it.
fn writer_of(path: &Path) -> Option<u32> {
    let wanted = path.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(&wanted) {
            return Some(pid);
        }
    }
    None
}

/// Whether `pid` sleeps inside `open`/`openat` (x86-64 numbers 2 and 257): a writer blocked on
/// the FIFO, its path already resolved.
fn blocked_in_open(pid: u32) -> bool {
    let syscall = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
    let number = syscall.split_whitespace().next().unwrap_or("");
    matches!(number, "2" | "257")
}

/// A served (or watched) `reset` FIFO: how many resets were written to it, how many writers
/// came.
pub struct ResetFile {
    stop: Arc<AtomicBool>,
    resets: Arc<AtomicUsize>,
    writers: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl ResetFile {
    /// Watches for writers naming `path`; serving, reads the FIFO at `fifo` (the same file,
    /// reached without the link a test may remove).
    fn start(path: PathBuf, fifo: PathBuf, serve: Option<Box<dyn Fn() + Send>>) -> ResetFile {
        let stop = Arc::new(AtomicBool::new(false));
        let resets = Arc::new(AtomicUsize::new(0));
        let writers = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stop, resets, writers) = (stop.clone(), resets.clone(), writers.clone());
            std::thread::spawn(move || {
                let mut seen = None;
                while !stop.load(Ordering::Relaxed) {
                    let Some(pid) = writer_of(&path) else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    if seen != Some(pid) {
                        seen = Some(pid);
                        writers.fetch_add(1, Ordering::Relaxed);
                        if let Some(during) = &serve {
                            // The kernel changes the device while the write is under way.
                            within(Duration::from_secs(120), || blocked_in_open(pid));
                            during();
                            let mut text = String::new();
                            std::fs::File::open(&fifo)
                                .unwrap()
                                .read_to_string(&mut text)
                                .unwrap();
                            if text.trim() == "1" {
                                resets.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        ResetFile {
            stop,
            resets,
            writers,
            thread: Some(thread),
        }
    }

    fn serve(path: PathBuf, fifo: PathBuf, during: Box<dyn Fn() + Send>) -> ResetFile {
        Self::start(path, fifo, Some(during))
    }

    fn watch(path: PathBuf) -> ResetFile {
        Self::start(path.clone(), path, None)
    }

    /// Stops serving; answers (resets read, writers seen).
    pub fn finish(mut self) -> (usize, usize) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        (
            self.resets.load(Ordering::Relaxed),
            self.writers.load(Ordering::Relaxed),
        )
    }
}

impl Drop for ResetFile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Waits until `done`, at most `limit`.
pub fn within(limit: Duration, done: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}
