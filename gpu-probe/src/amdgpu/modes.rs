//! The partition modes as amdgpu writes them: the vocabulary every AMD side shares (the sysfs
//! reader and writer here, the rules of `layout_model::amd`, the plan, the fake amdgpu).

use gpu_partition_types::Token;

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

/// The names of `modes` as the kernel lists them in an `available_*` file (`SPX, CPX`).
pub fn list<T: Token>(modes: &[T]) -> String {
    modes
        .iter()
        .map(|mode| mode.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
