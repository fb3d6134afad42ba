//! AMD Instinct partitions: the kernel's rules for which modes may be set together, what a
//! GPU is wanted to be and what it holds. Pure; the modes and their reader are
//! `gpu_host_probe::amdgpu`'s, and a layout's plan judges by these rules. Each rule names its source (the project's `docs/amd.md` has them all):
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

use crate::difference::{Difference, Fact};
use gpu_host_probe::amdgpu::{AmdError, AmdPartitions, ComputePartition, MemoryPartition};
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// The compute modes the kernel supports on a GPU of `xccs` XCCs
/// (`__aqua_vanjaram_update_supported_modes`).
pub fn compute_modes(xccs: u32) -> &'static [ComputePartition] {
    use ComputePartition::{Cpx, Dpx, Qpx, Spx, Tpx};
    match xccs {
        8 => &[Spx, Dpx, Qpx, Cpx],
        6 => &[Spx, Tpx, Cpx],
        4 => &[Spx, Dpx, Cpx],
        1 | 2 => &[Spx, Cpx],
        _ => &[],
    }
}

/// How many partitions (logical GPUs) `mode` makes of a GPU of `xccs` XCCs; `None` where the
/// kernel does not support the mode there.
pub fn partitions(mode: ComputePartition, xccs: u32) -> Option<u32> {
    if !compute_modes(xccs).contains(&mode) {
        return None;
    }
    Some(match mode {
        ComputePartition::Spx => 1,
        ComputePartition::Dpx => 2,
        ComputePartition::Tpx => 3,
        ComputePartition::Qpx => 4,
        ComputePartition::Cpx => xccs,
    })
}

/// The memory modes the kernel lets `compute` run with (`__aqua_vanjaram_get_px_mode_info`).
pub fn memory_modes(compute: ComputePartition) -> &'static [MemoryPartition] {
    use MemoryPartition::{Nps1, Nps2, Nps4};
    match compute {
        ComputePartition::Spx => &[Nps1],
        ComputePartition::Dpx => &[Nps1, Nps2],
        ComputePartition::Tpx | ComputePartition::Qpx | ComputePartition::Cpx => &[Nps1, Nps4],
    }
}

/// Whether the kernel lets `compute` run with `memory`.
pub fn runs_with(compute: ComputePartition, memory: MemoryPartition) -> bool {
    memory_modes(compute).contains(&memory)
}

/// The compute modes a GPU of `xccs` XCCs offers with `memory` as its memory partition, by
/// the kernel's rule (`__aqua_vanjaram_update_available_partition_mode`: the modes its XCC
/// count supports that run with the memory partition).
pub fn offered(xccs: u32, memory: MemoryPartition) -> Vec<ComputePartition> {
    compute_modes(xccs)
        .iter()
        .copied()
        .filter(|mode| runs_with(*mode, memory))
        .collect()
}

/// The XCC counts (1, 2, 4, 6, 8) a GPU that shows `read` can have: the sysfs files name no XCC
/// count, so a count is a candidate when its offering with the memory partition now is what
/// the GPU offers now (every count where the GPU shows no memory partition). The one owner of
/// the inference: a plan (what a GPU will offer after a reload) and the partitions of a GPU in
/// CPX mode (one per XCC) ask it.
pub fn xcc_candidates(read: &AmdPartitions) -> Vec<u32> {
    [1, 2, 4, 6, 8]
        .into_iter()
        .filter(|xccs| {
            read.memory
                .is_none_or(|now| offered(*xccs, now) == read.available_compute)
        })
        .collect()
}

/// What a GPU is wanted (or declared) to be: its compute partition and its memory partition.
/// The one vocabulary of an AMD layout: a plan wants it, a declaration keeps it, a sync compares
/// the GPU with it ([`AmdDeclared::drift`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AmdWant {
    /// The compute partition.
    pub compute: ComputePartition,
    /// The memory partition.
    pub memory: MemoryPartition,
}

impl AmdWant {
    /// One GPU, undivided: SPX with NPS1 (what leaving partitioning brings a GPU to).
    pub const UNDIVIDED: AmdWant = AmdWant {
        compute: ComputePartition::Spx,
        memory: MemoryPartition::Nps1,
    };

    /// `compute` with `memory`.
    pub fn new(compute: ComputePartition, memory: MemoryPartition) -> Self {
        Self { compute, memory }
    }

    /// Whether the GPU is divided so: more than one compute partition or more than one memory
    /// partition (SPX with NPS1 is one GPU, undivided).
    pub fn is_divided(self) -> bool {
        self != Self::UNDIVIDED
    }
}

impl std::fmt::Display for AmdWant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}+{}", self.compute, self.memory)
    }
}

/// An AMD GPU as declared: its partitions, and the systemd services that use it (Device Config
/// Manager's `gpuClientSystemdServices`, kept so a restore at boot, which reads no DCM file,
/// still refuses to write while one runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AmdDeclared {
    /// Its compute and memory partitions.
    #[serde(flatten)]
    pub want: AmdWant,
    /// The client services, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_services: Vec<String>,
}

impl AmdDeclared {
    /// A GPU declared in `want`, used by `client_services`.
    pub fn new(want: AmdWant, client_services: Vec<String>) -> Self {
        Self {
            want,
            client_services,
        }
    }

    /// How the GPU compares with its declaration: the compute partition, then the memory
    /// partition (a requested one waiting for a driver reload named with it; one requested for
    /// another mode differs even where the GPU is in the declared mode now: the next reload
    /// changes it), or why they did not read.
    pub fn drift(&self, device: Bdf, found: &AmdRead) -> Vec<Difference> {
        let want = self.want;
        let at = |fact| Difference::new(device, fact);
        let held = match found {
            AmdRead::Held(held) => held,
            AmdRead::Unreadable(why) => {
                return vec![at(Fact::PartitionsUnread { why: why.clone() })];
            }
            AmdRead::NotPartitionable => {
                return vec![at(Fact::PartitionsUnread {
                    why: "the GPU shows no partition files: amdgpu cannot partition it".to_owned(),
                })];
            }
        };
        let mut differences = Vec::new();
        if held.compute != want.compute {
            differences.push(at(Fact::ComputePartition {
                found: held.compute,
                wanted: want.compute,
            }));
        }
        // A request waiting for a reload differs too where it is for another mode: the next
        // reload carries it out, whatever the GPU is in now.
        let request_differs = held.requested.is_some_and(|mode| mode != want.memory);
        if held.memory != Some(want.memory) || request_differs {
            differences.push(at(Fact::MemoryPartition {
                found: held.memory,
                requested: held.requested,
                wanted: want.memory,
            }));
        }
        differences
    }
}

/// What a GPU holds now, as amdgpu shows it, for a comparison with what it is declared to be
/// ([`AmdDeclared::drift`]); `gpu_host_probe::amdgpu` reads it.
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
    /// What the GPU of `partitions` holds, with the memory partition requested of it and
    /// waiting for a driver reload (this host's record).
    pub fn of(partitions: &AmdPartitions, requested: Option<MemoryPartition>) -> Self {
        Self::new(partitions.compute, partitions.memory, requested)
    }

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

impl AmdRead {
    /// A GPU's read as a comparison takes it: what it holds (with `requested`), why it did not
    /// read, or that it shows no partition files.
    pub fn of(
        read: &Result<Option<AmdPartitions>, AmdError>,
        requested: Option<MemoryPartition>,
    ) -> Self {
        match read {
            Ok(Some(held)) => Self::Held(AmdHeld::of(held, requested)),
            Ok(None) => Self::NotPartitionable,
            Err(error) => Self::Unreadable(gpu_host_probe::chain::Chain(error).to_string()),
        }
    }
}
