//! The writes of an AMD partition layout: what carries them ([`PartitionWrites`]), and the real
//! kernel's side ([`SysfsAmdgpu`]) — a mode written to the GPU's `current_compute_partition` or
//! `current_memory_partition` in one `write(2)` (the kernel's refusal is the write's errno), and
//! the driver reloaded by `modprobe -r amdgpu` then `modprobe amdgpu`, each run through the
//! runner ([`Modprobe`]: its trust check, a deadline, the caller's cancel). The trait sits beside
//! its real implementation, below every crate that writes (the sync, which only reads, never
//! sees it).

use super::DRIVER;
use super::modes::{ComputePartition, MemoryPartition};
use crate::run::{RunResult, RunSpec};
use crate::{Cancel, Program};
use gpu_partition_types::Bdf;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// What carries the writes of an AMD partition layout: the two partition files and the driver's
/// reload. The real kernel's side is [`SysfsAmdgpu`] (the files under the host's sysfs,
/// `modprobe` through the runner); a simulated amdgpu answers as the kernel does
/// (`host_sync::fake_amdgpu`, feature `sim`). Each write's refusal is the kernel's errno
/// (`EINVAL` a mode not offered, `EBUSY` a ROCm process on the GPU, `EPERM` the GPU in reset).
pub trait PartitionWrites: Send + Sync {
    /// `mode` written to `current_compute_partition` of `device` under `sysfs_root`: it takes
    /// effect at once.
    fn write_compute(
        &self,
        sysfs_root: &Path,
        device: Bdf,
        mode: ComputePartition,
    ) -> std::io::Result<()>;

    /// `mode` written to `current_memory_partition` of `device`: only a request, for the GPU's
    /// whole XGMI hive, that the next driver reload carries out.
    fn request_memory(
        &self,
        sysfs_root: &Path,
        device: Bdf,
        mode: MemoryPartition,
    ) -> std::io::Result<()>;

    /// The driver unloaded and loaded again (`modprobe -r amdgpu`, `modprobe amdgpu`): every
    /// request holds, and each GPU's compute partition is set anew by the driver. `cancel` ends
    /// a run that has not finished.
    fn reload_driver(&self, cancel: Option<&crate::Cancel>) -> Result<(), ReloadError>;
}

impl<T: PartitionWrites + ?Sized> PartitionWrites for &T {
    fn write_compute(
        &self,
        sysfs_root: &Path,
        device: Bdf,
        mode: ComputePartition,
    ) -> std::io::Result<()> {
        (**self).write_compute(sysfs_root, device, mode)
    }

    fn request_memory(
        &self,
        sysfs_root: &Path,
        device: Bdf,
        mode: MemoryPartition,
    ) -> std::io::Result<()> {
        (**self).request_memory(sysfs_root, device, mode)
    }

    fn reload_driver(&self, cancel: Option<&crate::Cancel>) -> Result<(), ReloadError> {
        (**self).reload_driver(cancel)
    }
}

/// Why the driver's reload did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// The unload (`modprobe -r amdgpu`) ended otherwise than with exit 0: the driver is as it
    /// was, its requests still waiting.
    #[error("`{command}` {result}{}", said(stderr))]
    Unload {
        /// The command, for people.
        command: String,
        /// How it ended.
        result: crate::run::RunResult,
        /// What it wrote on standard error, trimmed.
        stderr: String,
    },
    /// The load (`modprobe amdgpu`) ended otherwise than with exit 0, after the unload: the
    /// requests went to the firmware, and the GPUs may have no driver now.
    #[error("`{command}` {result}{} (after the unload)", said(stderr))]
    Load {
        /// The command, for people.
        command: String,
        /// How it ended.
        result: crate::run::RunResult,
        /// What it wrote on standard error, trimmed.
        stderr: String,
    },
}

impl ReloadError {
    /// The command that did not complete, how it ended, and what it said on standard error.
    pub fn run(&self) -> (&str, &RunResult, &str) {
        match self {
            Self::Unload {
                command,
                result,
                stderr,
            }
            | Self::Load {
                command,
                result,
                stderr,
            } => (command, result, stderr),
        }
    }

    /// Whether the driver was unloaded before it (the load failed): every memory request went
    /// to the firmware then, and the GPUs may have no driver now.
    pub fn unloaded(&self) -> bool {
        matches!(self, Self::Load { .. })
    }
}

fn said(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

/// Where `modprobe` is on a Debian host (merged `/usr` or not: kmod's own path).
pub const DEFAULT_MODPROBE: &str = "/sbin/modprobe";

/// How the driver is reloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modprobe {
    /// The program: the machine's own at [`DEFAULT_MODPROBE`] by default, which a host whose
    /// roots are not the machine's never runs; like every program root runs, it must be one
    /// nobody else can change.
    pub program: Program,
    /// How long each run (the unload, the load) may take (default 5 minutes: an unload with a
    /// memory partition request sends it to the firmware of every GPU of the hive, and AMD's
    /// `amd-smi` waits up to 140 s for a memory partition change).
    pub deadline: Duration,
}

impl Default for Modprobe {
    fn default() -> Self {
        Self {
            program: Program::installed("modprobe", DEFAULT_MODPROBE),
            deadline: Duration::from_secs(300),
        }
    }
}

impl Modprobe {
    /// `modprobe` at `path`, named by the caller (a fake for the host it built, a wrapper),
    /// with the default deadline.
    pub fn at(path: impl Into<std::path::PathBuf>) -> Self {
        let default = Self::default();
        Self {
            program: default.program.at(path),
            ..default
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
        let mut spec = RunSpec::new(self.modprobe.program.path(), self.modprobe.deadline)
            .args(args.iter().map(|arg| (*arg).to_owned()));
        if let Some(cancel) = cancel {
            spec = spec.cancel(cancel.clone());
        }
        let run = crate::run::run(&spec);
        if run.result == RunResult::Exited(0) {
            return Ok(());
        }
        Err(failed(
            format!(
                "{} {}",
                self.modprobe.program.path().display(),
                args.join(" ")
            ),
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

impl PartitionWrites for SysfsAmdgpu {
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
        self.run(&["-r", DRIVER], cancel, |command, result, stderr| {
            ReloadError::Unload {
                command,
                result,
                stderr,
            }
        })?;
        self.run(&[DRIVER], cancel, |command, result, stderr| {
            ReloadError::Load {
                command,
                result,
                stderr,
            }
        })
    }
}
