//! AMD Instinct GPUs (MI300 on) through `amd-smi reset --gpureset` (the published help, warnings
//! and listings, with their sources, are in `warm-reset/tests/data/amd-smi/README.md`), with the
//! checks it leaves to its operator:
//!
//! - preflight: `amd-smi` present; the GPU named by its PCI address (in sysfs), or by an
//!   amd-smi ID or UUID (through `amd-smi list`), or `all`; its group is every AMD GPU of the
//!   host whose `xgmi_hive_info/xgmi_hive_id` is its own (a GPU in no hive is its own group),
//!   because the kernel resets a hive together (`amdgpu_device_gpu_recover` walks the hive) and
//!   amd-smi warns that resetting one GPU resets all of its hive; every GPU of the group bound
//!   to amdgpu (else `driver_not_loaded`) and out of reset; nobody holds `/dev/kfd` (a reset
//!   ends every process that does, whatever GPU it uses) or a named GPU's render node
//!   (`gpu_busy`), nor another GPU's of the hive (`group_in_use`).
//! - the reset: `amd-smi reset --gpureset --gpu <address>`, one GPU a hive, inside the window.
//!   An exit other than 0, or a line that says it could not reset (amd-smi says so with exit
//!   0), is `reset_error`.
//! - the verification: every GPU of the group present in sysfs with its IDs (`gpu_missing`),
//!   bound to amdgpu and out of reset, its partition files reading as before (amdgpu restores
//!   the compute partition after a reset; `EPERM` while in reset: `gpu_unavailable`), in the
//!   same hive (`topology_wrong`); then the kernel log, where amdgpu says a reset failed at
//!   information level.

pub mod amd_smi;
pub(crate) mod backend;
mod error;
mod host;
mod sysfs;
mod target;
mod verify;

pub use error::AmdSmiError;
pub use host::{AMD_SMI_PLACES, AmdHost, AmdSmiHost, reset_args};
pub use sysfs::{
    AmdGpuState, KFD, PartitionFile, is_amd_gpu, list_gpus, read_gpu, render_files, render_nodes,
};
pub use target::{AmdGpu, AmdTarget};
pub use verify::{amd_device_errors, is_amdgpu_reset_failure};
