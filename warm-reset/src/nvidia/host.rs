//! [`NvidiaHost`]: what the NVIDIA backend reads from a host — `nvidia-smi`'s outputs, the
//! driver's `information` files, who holds `/dev/nvidia<minor>`, the kernel log — and
//! [`NvidiaSmiHost`], the real one.

use super::error::NvidiaSmiError;
use super::nvidia_smi::NvidiaGpu;
use crate::backend::BackendError;
use crate::kmsg::KernelLog;
use crate::tool::{Exits, Tool, ToolEnd};
use gpu_host_probe::{Holder, holders};

use gpu_partition_types::Bdf;
use std::path::PathBuf;
use std::time::Duration;

/// Where `nvidia-smi` usually is, tried when none is configured; then `nvidia-smi` on `PATH`.
pub const NVIDIA_SMI_PLACES: [&str; 1] = ["/usr/bin/nvidia-smi"];

/// What `--gpu-reset -i` is given for `group`: the bus IDs as `nvidia-smi` printed them,
/// separated by commas (the tool's own list form).
pub fn reset_ids(group: &[NvidiaGpu]) -> String {
    group
        .iter()
        .map(|gpu| gpu.bus_id.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// An NVIDIA host as the backend reads it.
pub trait NvidiaHost {
    host_trait_basics!();
    /// Whether `nvidia-smi` is there (present and executable), or why not.
    fn find_nvidia_smi(&mut self) -> Result<(), BackendError>;
    /// `--query-gpu=index,pci.bus_id,uuid,name --format=csv,noheader`.
    fn query_gpus(&mut self) -> Result<String, BackendError>;
    /// `topo -m`.
    fn topology(&mut self) -> Result<String, BackendError>;
    /// `--query-compute-apps=pid,gpu_bus_id --format=csv,noheader`.
    fn compute_apps(&mut self) -> Result<String, BackendError>;
    /// `/proc/driver/nvidia/gpus/<bdf>/information`.
    fn information(&mut self, bdf: Bdf) -> Result<String, BackendError>;
    /// The processes holding one of `files`.
    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError>;
    /// `--gpu-reset -i <bus IDs>` of `group` (in one command), killed if it has not ended
    /// `within`.
    fn reset(&mut self, group: &[NvidiaGpu], within: Duration) -> ToolEnd;
}

/// The real NVIDIA host.
#[derive(Debug, Clone)]
pub struct NvidiaSmiHost {
    nvidia_smi: Tool,
    proc_root: PathBuf,
    kernel_log: KernelLog,
}

impl NvidiaSmiHost {
    /// A host using `nvidia_smi` (or the usual places when `None`), `<proc_root>` for the
    /// driver's files and the processes, and the kernel log at `kmsg`.
    pub fn new(
        nvidia_smi: Option<PathBuf>,
        proc_root: impl Into<PathBuf>,
        kmsg: impl Into<PathBuf>,
    ) -> Self {
        Self {
            nvidia_smi: Tool::new("nvidia-smi", nvidia_smi, &NVIDIA_SMI_PLACES),
            proc_root: proc_root.into(),
            kernel_log: KernelLog::new(kmsg),
        }
    }
}

impl NvidiaHost for NvidiaSmiHost {
    real_host_basics!();

    fn find_nvidia_smi(&mut self) -> Result<(), BackendError> {
        self.nvidia_smi.find_for::<NvidiaSmiError>()
    }

    fn query_gpus(&mut self) -> Result<String, BackendError> {
        self.nvidia_smi.query_for::<NvidiaSmiError>(&[
            "--query-gpu=index,pci.bus_id,uuid,name",
            "--format=csv,noheader",
        ])
    }

    fn topology(&mut self) -> Result<String, BackendError> {
        self.nvidia_smi.query_for::<NvidiaSmiError>(&["topo", "-m"])
    }

    fn compute_apps(&mut self) -> Result<String, BackendError> {
        self.nvidia_smi.query_for::<NvidiaSmiError>(&[
            "--query-compute-apps=pid,gpu_bus_id",
            "--format=csv,noheader",
        ])
    }

    fn information(&mut self, bdf: Bdf) -> Result<String, BackendError> {
        let path = self
            .proc_root
            .join("driver/nvidia/gpus")
            .join(bdf.to_string())
            .join("information");
        std::fs::read_to_string(&path).map_err(|source| {
            NvidiaSmiError::DriverFile {
                path,
                source: source.into(),
            }
            .into()
        })
    }

    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        Ok(holders(&self.proc_root, files)?)
    }

    fn reset(&mut self, group: &[NvidiaGpu], within: Duration) -> ToolEnd {
        let ids = reset_ids(group);
        self.nvidia_smi
            .reset::<NvidiaSmiError>(&["--gpu-reset", "-i", &ids], within, Exits::Any)
    }
}
