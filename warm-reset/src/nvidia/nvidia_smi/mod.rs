//! Reading what `nvidia-smi` and the NVIDIA driver print, written against published outputs
//! (kept with their sources in `warm-reset/tests/data/nvidia-smi/`), failing closed on what they
//! do not know.
//!
//! - [`parse_bus_id`]: `00000000:1A:00.0` (current drivers) or `0000:1a:00.0` (older ones).
//! - [`parse_gpus`]: `--query-gpu=index,pci.bus_id,uuid,name --format=csv,noheader`.
//! - [`parse_nvlinks`]: `topo -m`, whose `NV<n>` cells join GPUs by NVLink.
//! - [`parse_compute_apps`]: `--query-compute-apps=pid,gpu_bus_id --format=csv,noheader`.
//! - [`read_reset_output`]: what `--gpu-reset` printed: the GPUs it reset, the GPUs it found in
//!   use.
//! - [`device_minor`]: `/proc/driver/nvidia/gpus/<bdf>/information` → `/dev/nvidia<minor>`.

mod bus_id;
mod compute_apps;
mod gpus;
mod information;
mod reset_output;
mod topology;

pub(crate) use crate::parse_error::ParseError;
pub use bus_id::parse_bus_id;
pub use compute_apps::{ComputeApp, parse_compute_apps};
pub use gpus::{NvidiaGpu, parse_gpus};
pub use information::device_minor;
pub use reset_output::{ResetSaid, read_reset_output};
pub use topology::{NvLinks, parse_nvlinks};
