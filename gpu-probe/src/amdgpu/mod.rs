//! amdgpu's sysfs interface for AMD Instinct partitions, the one place every AMD side reads and
//! writes it through: the modes as the kernel writes them ([`ComputePartition`],
//! [`MemoryPartition`]), a GPU's partitions read strictly from the kernel's show functions
//! ([`read_partitions`]: what is not their format is refused, naming the file and the text),
//! and what carries a layout's writes ([`PartitionWrites`], the kernel's being
//! [`SysfsAmdgpu`]). The rules and their sources are in the project's `docs/amd.md`; which modes
//! may be set together is `layout_model::amd`'s.

mod modes;
mod read;
mod write;

pub use modes::{ComputePartition, MemoryPartition, list};
pub use read::{
    AmdError, AmdPartitions, parse_available_compute, parse_available_memory,
    parse_current_compute, parse_current_memory, read_partitions,
};
pub use write::{DEFAULT_MODPROBE, Modprobe, PartitionWrites, ReloadError, SysfsAmdgpu};

/// The kernel driver of AMD GPUs: what `modprobe` loads and unloads, and what a GPU bound to it
/// names in its `driver` link.
pub const DRIVER: &str = "amdgpu";
