//! [`AmdHost`]: what the AMD backend reads from a host — `amd-smi list`, the GPUs in sysfs, who
//! holds `/dev/kfd` and the render nodes, the kernel log — and [`AmdSmiHost`], the real one.

use super::error::AmdSmiError;
use super::sysfs::{AmdGpuState, list_gpus, read_gpu};
use crate::backend::BackendError;
use crate::kmsg::KernelLog;
use crate::tool::{Exits, Tool, ToolEnd};
use gpu_host_probe::{Holder, holders};

use gpu_partition_types::Bdf;
use std::path::PathBuf;
use std::time::Duration;

/// Where `amd-smi` usually is, tried when none is configured; then `amd-smi` on `PATH`. ROCm
/// installs it in `/opt/rocm/bin`; distributions' `amd-smi` packages in `/usr/bin`.
pub const AMD_SMI_PLACES: [&str; 2] = ["/opt/rocm/bin/amd-smi", "/usr/bin/amd-smi"];

/// The arguments of the reset of `gpus` (by address, which `--gpu` takes as well as an ID or a
/// UUID; several in one command).
pub fn reset_args(gpus: &[Bdf]) -> Vec<String> {
    ["reset", "--gpureset", "--gpu"]
        .into_iter()
        .map(str::to_owned)
        .chain(gpus.iter().map(ToString::to_string))
        .collect()
}

/// An AMD host as the backend reads it.
pub trait AmdHost {
    host_trait_basics!();
    /// Whether `amd-smi` is there (present, executable, one root may run), or why not.
    fn find_amd_smi(&mut self) -> Result<(), BackendError>;
    /// `amd-smi list`.
    fn list(&mut self) -> Result<String, BackendError>;
    /// The addresses of every AMD GPU in sysfs now, sorted.
    fn gpus(&mut self) -> Result<Vec<Bdf>, BackendError>;
    /// The GPU at `bdf` now; `None` when it is not there.
    fn gpu(&mut self, bdf: Bdf) -> Result<Option<AmdGpuState>, BackendError>;
    /// The processes holding one of `files`.
    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError>;
    /// `amd-smi reset --gpureset --gpu <addresses>` of `gpus` (in one command), killed if it
    /// has not ended `within`.
    fn reset(&mut self, gpus: &[Bdf], within: Duration) -> ToolEnd;
}

/// The real AMD host: `amd-smi`, sysfs at `<sysfs-root>`, processes at `<proc-root>`, the
/// kernel log.
#[derive(Debug, Clone)]
pub struct AmdSmiHost {
    amd_smi: Tool,
    sysfs_root: PathBuf,
    proc_root: PathBuf,
    kernel_log: KernelLog,
}

impl AmdSmiHost {
    /// A host using `amd_smi` (or the usual places when `None`), sysfs at `sysfs_root`, procfs
    /// at `proc_root`, and the kernel log at `kmsg`.
    pub fn new(
        amd_smi: Option<PathBuf>,
        sysfs_root: impl Into<PathBuf>,
        proc_root: impl Into<PathBuf>,
        kmsg: impl Into<PathBuf>,
    ) -> Self {
        Self {
            amd_smi: Tool::new("amd-smi", amd_smi, &AMD_SMI_PLACES),
            sysfs_root: sysfs_root.into(),
            proc_root: proc_root.into(),
            kernel_log: KernelLog::new(kmsg),
        }
    }

    fn devices(&self) -> PathBuf {
        self.sysfs_root.join("bus/pci/devices")
    }
}

impl AmdHost for AmdSmiHost {
    real_host_basics!();

    fn find_amd_smi(&mut self) -> Result<(), BackendError> {
        self.amd_smi.find_for::<AmdSmiError>()
    }

    fn list(&mut self) -> Result<String, BackendError> {
        self.amd_smi.query_for::<AmdSmiError>(&["list"])
    }

    fn gpus(&mut self) -> Result<Vec<Bdf>, BackendError> {
        Ok(list_gpus(&self.devices())?)
    }

    fn gpu(&mut self, bdf: Bdf) -> Result<Option<AmdGpuState>, BackendError> {
        Ok(read_gpu(&self.devices().join(bdf.to_string()), bdf)?)
    }

    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        Ok(holders(&self.proc_root, files)?)
    }

    fn reset(&mut self, gpus: &[Bdf], within: Duration) -> ToolEnd {
        let args = reset_args(gpus);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.amd_smi.reset::<AmdSmiError>(&args, within, Exits::Any)
    }
}
