//! AMD Instinct partitions: the modes, and the kernel's rules for which may be set together.
//! Pure; `host_sync::amd` reads the modes from sysfs, and a layout's plan judges by these
//! rules. Each rule names its source (the project's `docs/amd.md` has them all):
//!
//! - How many partitions a compute mode makes of a GPU of N XCCs, and which modes a GPU of N
//!   XCCs supports: `__aqua_vanjaram_get_xcc_per_xcp` and `__aqua_vanjaram_update_supported_modes`
//!   (`drivers/gpu/drm/amd/amdgpu/aqua_vanjaram.c`): 8 XCCs (MI300X, MI325X, MI350X, MI355X)
//!   SPX, DPX, QPX, CPX; 6 (MI300A) SPX, TPX, CPX; 4 SPX, DPX, CPX; 2 or 1 SPX, CPX.
//! - Which memory modes each compute mode may run with: `__aqua_vanjaram_get_px_mode_info` and
//!   `__aqua_vanjaram_is_valid_mode` (mainline, 2025): SPX with NPS1; DPX with NPS1 or NPS2;
//!   TPX, QPX and CPX with NPS1 or NPS4. It agrees with AMD's MI300X rule that a GPU has no
//!   more memory partitions than compute partitions (SPX with NPS4 is invalid; ROCm/amdgpu-docs,
//!   `docs/gpu-partitioning/mi300x/overview.rst`).
//!
//! What a given GPU offers depends on its part and VBIOS as well: a plan reads the GPU's
//! `available_*` files and never assumes a mode these rules allow is offered.

use gpu_partition_types::Token;
use serde::{Deserialize, Serialize};

gpu_partition_types::token_enum! {
    /// A compute (accelerator) partition mode: how many logical GPUs the GPU is shown as, as
    /// the kernel writes it (ordered as the kernel lists them).
    pub enum ComputePartition: "compute partition" {
        /// One partition of every XCC.
        Spx = "SPX",
        /// Two partitions.
        Dpx = "DPX",
        /// Three partitions (a part of 6 XCCs: MI300A).
        Tpx = "TPX",
        /// Four partitions.
        Qpx = "QPX",
        /// One partition per XCC.
        Cpx = "CPX",
    }
}

gpu_partition_types::token_enum! {
    /// A memory partition mode: how many NUMA partitions the GPU's memory is split into, as
    /// the kernel writes it (ordered as the kernel lists them).
    pub enum MemoryPartition: "memory partition" {
        /// One.
        Nps1 = "NPS1",
        /// Two.
        Nps2 = "NPS2",
        /// Three.
        Nps3 = "NPS3",
        /// Four.
        Nps4 = "NPS4",
        /// Six.
        Nps6 = "NPS6",
        /// Eight.
        Nps8 = "NPS8",
    }
}

impl ComputePartition {
    /// The compute modes the kernel supports on a GPU of `xccs` XCCs
    /// (`__aqua_vanjaram_update_supported_modes`).
    pub fn supported(xccs: u32) -> &'static [ComputePartition] {
        use ComputePartition::{Cpx, Dpx, Qpx, Spx, Tpx};
        match xccs {
            8 => &[Spx, Dpx, Qpx, Cpx],
            6 => &[Spx, Tpx, Cpx],
            4 => &[Spx, Dpx, Cpx],
            1 | 2 => &[Spx, Cpx],
            _ => &[],
        }
    }

    /// How many partitions (logical GPUs) the mode makes of a GPU of `xccs` XCCs; `None` where
    /// the kernel does not support the mode there.
    pub fn partitions(self, xccs: u32) -> Option<u32> {
        if !Self::supported(xccs).contains(&self) {
            return None;
        }
        Some(match self {
            Self::Spx => 1,
            Self::Dpx => 2,
            Self::Tpx => 3,
            Self::Qpx => 4,
            Self::Cpx => xccs,
        })
    }

    /// The memory modes the kernel lets this compute mode run with
    /// (`__aqua_vanjaram_get_px_mode_info`).
    pub fn memory_modes(self) -> &'static [MemoryPartition] {
        use MemoryPartition::{Nps1, Nps2, Nps4};
        match self {
            Self::Spx => &[Nps1],
            Self::Dpx => &[Nps1, Nps2],
            Self::Tpx | Self::Qpx | Self::Cpx => &[Nps1, Nps4],
        }
    }

    /// Whether the kernel lets this compute mode run with `memory`.
    pub fn runs_with(self, memory: MemoryPartition) -> bool {
        self.memory_modes().contains(&memory)
    }
}

impl MemoryPartition {
    /// How many memory partitions the mode makes.
    pub fn count(self) -> u32 {
        match self {
            Self::Nps1 => 1,
            Self::Nps2 => 2,
            Self::Nps3 => 3,
            Self::Nps4 => 4,
            Self::Nps6 => 6,
            Self::Nps8 => 8,
        }
    }
}

/// What a GPU is wanted (or declared) to be: its compute partition and its memory partition.
/// The one vocabulary of an AMD layout: a plan wants it, a declaration keeps it, a sync compares
/// the GPU with it ([`crate::DeclaredGpu::amd_drift`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AmdWant {
    /// The compute partition.
    pub compute: ComputePartition,
    /// The memory partition.
    pub memory: MemoryPartition,
}

impl AmdWant {
    /// `compute` with `memory`.
    pub fn new(compute: ComputePartition, memory: MemoryPartition) -> Self {
        Self { compute, memory }
    }

    /// Whether the GPU is divided so: more than one compute partition or more than one memory
    /// partition (SPX with NPS1 is one GPU, undivided).
    pub fn is_divided(self) -> bool {
        self.compute != ComputePartition::Spx || self.memory != MemoryPartition::Nps1
    }
}

impl std::fmt::Display for AmdWant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}+{}", self.compute, self.memory)
    }
}

/// What a GPU holds now, as amdgpu shows it, for a comparison with what it is declared to be
/// ([`crate::DeclaredGpu::amd_drift`]); `host_sync::amd` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdHeld {
    /// The compute partition now.
    pub compute: ComputePartition,
    /// The memory partition now; `None` where the kernel has no such file.
    pub memory: Option<MemoryPartition>,
    /// A memory partition requested of the GPU (by this host's record: the kernel shows none)
    /// that waits for a driver reload.
    pub requested: Option<MemoryPartition>,
}

impl AmdHeld {
    /// A GPU in `compute` with `memory`, `requested` waiting for a reload.
    pub fn new(
        compute: ComputePartition,
        memory: Option<MemoryPartition>,
        requested: Option<MemoryPartition>,
    ) -> Self {
        Self {
            compute,
            memory,
            requested,
        }
    }
}

/// What amdgpu showed of a GPU for a comparison: what it holds, or why it did not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AmdRead {
    /// Its partitions.
    Held(AmdHeld),
    /// They did not read (the GPU in reset, the kernel's `UNKNOWN`, a file that did not read):
    /// why, for people.
    Unreadable(String),
    /// It shows no partition files: a part amdgpu cannot partition.
    NotPartitionable,
}

/// The names of `modes`, as the kernel lists them (`SPX, CPX`).
pub fn list<T: Token>(modes: &[T]) -> String {
    modes
        .iter()
        .map(|mode| mode.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
