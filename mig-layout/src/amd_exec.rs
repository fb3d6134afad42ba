//! The AMD side's own I/O, each piece on the real host:
//!
//! - [`SysfsAmdgpu`]: the kernel's side of an AMD layout's writes — a mode written to the
//!   GPU's `current_compute_partition` or `current_memory_partition` in one `write(2)` (the
//!   kernel's refusal is the write's errno), and the driver reloaded by `modprobe -r amdgpu`
//!   then `modprobe amdgpu`, each run through the runner ([`Modprobe`]: its trust check, a
//!   deadline, the caller's cancel);
//! - [`running_services`]: which of the GPU's client services (Device Config Manager's
//!   `gpuClientSystemdServices`) have processes now, from their systemd cgroups.
//!
//! The sources of each rule are in the project's `docs/amd.md`.

use gpu_host_probe::Cancel;
use gpu_host_probe::run::{RunResult, RunSpec};
use gpu_partition_types::Bdf;
use host_sync::amd::{AmdgpuWrites, ReloadError};
use layout_model::amd::{ComputePartition, MemoryPartition};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use warm_reset::amd::AMDGPU;

/// Where `modprobe` is on a Debian host (merged `/usr` or not: kmod's own path).
pub const DEFAULT_MODPROBE: &str = "/sbin/modprobe";

/// How the driver is reloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modprobe {
    /// The program ([`DEFAULT_MODPROBE`] by default); like every program root runs, it must be
    /// one nobody else can change.
    pub path: PathBuf,
    /// How long each run (the unload, the load) may take (default 5 minutes: an unload with a
    /// memory partition request sends it to the firmware of every GPU of the hive, and AMD's
    /// `amd-smi` waits up to 140 s for a memory partition change).
    pub deadline: Duration,
}

impl Default for Modprobe {
    fn default() -> Self {
        Self {
            path: PathBuf::from(DEFAULT_MODPROBE),
            deadline: Duration::from_secs(300),
        }
    }
}

/// The kernel's files under the host's sysfs, and `modprobe`: what every real host uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SysfsAmdgpu {
    /// How the driver is reloaded.
    pub modprobe: Modprobe,
}

impl SysfsAmdgpu {
    /// The kernel's files, the driver reloaded by `modprobe`.
    pub fn new(modprobe: Modprobe) -> Self {
        Self { modprobe }
    }

    /// One run of `modprobe` with `args`, or how it ended otherwise than with exit 0 (as
    /// `failed` makes the error).
    fn run(
        &self,
        args: &[&str],
        cancel: Option<&Cancel>,
        failed: fn(String, RunResult, String) -> ReloadError,
    ) -> Result<(), ReloadError> {
        let mut spec = RunSpec::new(&self.modprobe.path, self.modprobe.deadline)
            .args(args.iter().map(|arg| (*arg).to_owned()));
        if let Some(cancel) = cancel {
            spec = spec.cancel(cancel.clone());
        }
        let run = gpu_host_probe::run::run(&spec);
        if run.result == RunResult::Exited(0) {
            return Ok(());
        }
        Err(failed(
            format!("{} {}", self.modprobe.path.display(), args.join(" ")),
            run.result,
            String::from_utf8_lossy(&run.stderr).trim().to_owned(),
        ))
    }
}

/// `text` written to the file `name` of the GPU `device` in one `write(2)`, as `echo` does.
fn write_mode(sysfs_root: &Path, device: Bdf, name: &str, text: &str) -> std::io::Result<()> {
    let path = sysfs_root
        .join("bus/pci/devices")
        .join(device.to_string())
        .join(name);
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.write_all(format!("{text}\n").as_bytes())
}

impl AmdgpuWrites for SysfsAmdgpu {
    fn write_compute(
        &self,
        sysfs_root: &Path,
        device: Bdf,
        mode: ComputePartition,
    ) -> std::io::Result<()> {
        write_mode(
            sysfs_root,
            device,
            "current_compute_partition",
            &mode.to_string(),
        )
    }

    fn request_memory(
        &self,
        sysfs_root: &Path,
        device: Bdf,
        mode: MemoryPartition,
    ) -> std::io::Result<()> {
        write_mode(
            sysfs_root,
            device,
            "current_memory_partition",
            &mode.to_string(),
        )
    }

    fn reload_driver(&self, cancel: Option<&Cancel>) -> Result<(), ReloadError> {
        self.run(&["-r", AMDGPU], cancel, |command, result, stderr| {
            ReloadError::Unload {
                command,
                result,
                stderr,
            }
        })?;
        self.run(&[AMDGPU], cancel, |command, result, stderr| {
            ReloadError::Load {
                command,
                result,
                stderr,
            }
        })
    }
}

/// The systemd unit of the service `name` (a bare name, as Device Config Manager's
/// `gpuClientSystemdServices` gives them, is a `.service`), or `None` where `name` is no
/// unit's: empty, a character a unit name never has (outside `A-Za-z0-9:-_.\@`), a leading dot,
/// or `..` — never a path of its own under the cgroup tree. The one rule of a client service's
/// name: the Device Config Manager reader, mxctl's config and [`running_services`] call it.
pub fn service_unit(name: &str) -> Option<String> {
    let unit_text = !name.is_empty()
        && !name.starts_with('.')
        && !name.contains("..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b":-_.\\@".contains(&b));
    if !unit_text {
        return None;
    }
    Some(if name.ends_with(".service") {
        name.to_owned()
    } else {
        format!("{name}.service")
    })
}

/// A client service of the GPUs that has processes now.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunningService {
    /// Its unit (`amd-metrics-exporter.service`).
    pub unit: String,
    /// Its processes, by pid.
    pub pids: Vec<u32>,
}

impl std::fmt::Display for RunningService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pids: Vec<String> = self.pids.iter().map(ToString::to_string).collect();
        write!(f, "{} is running (pid {})", self.unit, pids.join(", "))
    }
}

/// Which of `services` (systemd units, [`service_unit`]) have processes now: the
/// `cgroup.procs` of the unit's cgroup under `<sysfs>/fs/cgroup` — the unified hierarchy's
/// `system.slice/<unit>/`, or the legacy one's `systemd/system.slice/<unit>/` —; a unit with
/// neither is not running. A name that is no unit's is an error naming it.
pub fn running_services(
    sysfs_root: &Path,
    services: &[String],
) -> std::io::Result<Vec<RunningService>> {
    let mut running = Vec::new();
    for service in services {
        let unit = service_unit(service).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{service:?} is no systemd service's name"),
            )
        })?;
        let cgroup = sysfs_root.join("fs/cgroup");
        let places = [
            cgroup.join("system.slice").join(&unit).join("cgroup.procs"),
            cgroup
                .join("systemd/system.slice")
                .join(&unit)
                .join("cgroup.procs"),
        ];
        for place in places {
            let text = match std::fs::read_to_string(&place) {
                Ok(text) => text,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(error),
            };
            let mut pids = Vec::new();
            for line in text.lines() {
                let pid = line.trim().parse::<u32>().map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{}: {line:?} is not a pid", place.display()),
                    )
                })?;
                pids.push(pid);
            }
            if !pids.is_empty() {
                running.push(RunningService {
                    unit: unit.clone(),
                    pids,
                });
            }
            break;
        }
    }
    Ok(running)
}
