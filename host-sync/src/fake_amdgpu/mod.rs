//! A fake amdgpu: AMD Instinct GPUs that answer partition writes by the kernel's rules and
//! show their state in a [`FakeSysfs`] as the kernel does (`gpu_host_probe::amdgpu` reads it back).
//! Each rule names its source; all are in the project's `docs/amd.md`.
//!
//! - A compute write matches a mode's name case-insensitively on its first three characters
//!   (a newline is ignored); an unknown name is `EINVAL`, a mode the XCC count does not support
//!   or the memory partition does not allow is `EINVAL`, the GPU in reset is `EPERM`, a ROCm
//!   process holding it is `EBUSY`, and the mode already set is no change
//!   (`amdgpu_gfx_set_compute_partition`, `aqua_vanjaram_switch_partition_mode`,
//!   `amdgpu_xcp_switch_partition_mode`).
//! - A memory write is only a request, for the whole XGMI hive: `current_memory_partition`
//!   shows the old mode until [`FakeAmdgpu::reload_driver`]; a mode the GPU does not offer is
//!   `EINVAL`; the mode it is in is no request (`current_memory_partition_store`).
//! - A reload (`modprobe -r amdgpu`) fails while a ROCm process holds any GPU; it makes every
//!   request hold and sets each GPU's compute partition anew by the AUTO rule
//!   (`__aqua_vanjaram_get_auto_mode`: NPS1 gives SPX, NPS2 DPX, NPS4 CPX).
//! - A reboot sets the compute partition anew as a reload does and drops any request; the
//!   memory partition is kept unless the GPU is told otherwise
//!   ([`FakeAmdGpu::memory_at_boot`]): no source says what a cold boot does to it.
//!
//! Every write is logged ([`FakeAmdgpu::log`]: `current_compute_partition <gpu> CPX`,
//! `current_memory_partition <gpu> NPS4`, `modprobe -r amdgpu`, `modprobe amdgpu`, each
//! refused one with ` <errno>` after it), so a test counts the writes and reloads. The fake
//! carries an apply's writes ([`PartitionWrites`]) shared by one process's threads
//! ([`SharedAmdgpu`]), or kept in a file between processes ([`FakeAmdgpuFile`]: `mxctl`'s `--simulate`).
//!
//! [`FakeSysfs`]: crate::fake_sysfs::FakeSysfs
//! [`PartitionWrites`]: gpu_host_probe::amdgpu::PartitionWrites

mod carriers;
mod model;
mod parts;

pub use carriers::{FakeAmdgpuFile, FakeFileError, SharedAmdgpu};
pub use model::{FakeAmdGpu, FakeAmdgpu, ReloadRefused};
pub use parts::{AmdPart, MI300A, MI300X, MI355X, PARTS};
