//! The parts the fake models, with their facts as AMD publishes them, and a part kept by its
//! name.

use MemoryPartition::{Nps1, Nps2, Nps4};
use gpu_host_probe::amdgpu::MemoryPartition;

/// A part's facts, as AMD publishes them (kept by its name in a
/// [`FakeAmdgpuFile`](super::FakeAmdgpuFile)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdPart {
    /// Its name.
    pub name: &'static str,
    /// Its PCI device ID (`0x74a1`).
    pub device_id: &'static str,
    /// Its XCC count.
    pub xccs: u32,
    /// The memory partitions its firmware offers (empty: one mode, NPS1, which cannot change).
    pub memory_offered: &'static [MemoryPartition],
}

/// MI300X: 8 XCCs (amd-smi's partitioning page); AMD validates SPX+NPS1, DPX+NPS2 and
/// CPX+NPS4 (the compatibility matrix of ROCm/amdgpu-docs `docs/gpu-partitioning/index.rst`),
/// on VBIOS 022.040.003.043 (its `requirements.rst`), so its firmware offers NPS1, NPS2, NPS4.
pub const MI300X: AmdPart = AmdPart {
    name: "MI300X",
    device_id: "0x74a1",
    xccs: 8,
    memory_offered: &[Nps1, Nps2, Nps4],
};

/// MI355X: 8 XCCs, partitioned by the same code (`aqua_vanjaram_init_soc_config` for GC
/// 9.5.0); AMD validates SPX+NPS1 and DPX+NPS2 and marks CPX+NPS4 not available (the same
/// matrix), so its firmware offers NPS1 and NPS2 here.
pub const MI355X: AmdPart = AmdPart {
    name: "MI355X",
    device_id: "0x75a3",
    xccs: 8,
    memory_offered: &[Nps1, Nps2],
};

/// MI300A: 6 XCCs; NPS1 only, fixed at boot (AMD's `mi300a/overview.rst`; no NPS switch on an
/// APU, `gmc_v9_0_init_nps_details`).
pub const MI300A: AmdPart = AmdPart {
    name: "MI300A",
    device_id: "0x74a0",
    xccs: 6,
    memory_offered: &[],
};

/// The parts the fake knows, by name.
pub const PARTS: [AmdPart; 3] = [MI300X, MI355X, MI300A];

/// A part kept by its name.
pub(super) mod part_by_name {
    use super::{AmdPart, PARTS};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(part: &AmdPart, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(part.name)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<AmdPart, D::Error> {
        let name = String::deserialize(deserializer)?;
        PARTS
            .into_iter()
            .find(|part| part.name == name)
            .ok_or_else(|| serde::de::Error::custom(format!("{name:?} is no part the fake knows")))
    }
}
