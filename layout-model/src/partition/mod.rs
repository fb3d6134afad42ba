//! A GPU's partitions as rows ([`Partition`]), as a toolstack places VMs on them: each with its
//! slot (an NVIDIA GPU instance's ID, a virtual function's index, an AMD compute partition's
//! index), its profile, its placement, its ordinal among its profile's partitions on the GPU, and
//! whether the host's declaration records it or it was found ([`Origin`]). Built from what was
//! read of the card ([`nvidia`], [`amd`]); what a GPU was last read to hold, with its layout
//! generation, is a [`Division`].
//!
//! The ordinal is what a toolstack matches a row by across reads (xen-api's design: rows are
//! "matched by card, profile and ordinal rather than destroyed and recreated"): the partitions
//! of one profile on one GPU, counted from 0 in slot order (GPU instances by placement start,
//! VFs and AMD partitions by index).

mod admitted;
mod division;

use crate::amd::{AmdDeclared, partitions};
use crate::card::{Card, ProfileRef};
use crate::nvidia::NvidiaDeclared;
use crate::owner::Owner;
use crate::vgpu::{VfsRead, VgpuDeclared};
use crate::want::Placed;
use gpu_host_probe::amdgpu::{AmdPartitions, ComputePartition};
use gpu_partition_types::{Placement, Reply, VgpuTypeId};
use serde::{Deserialize, Serialize};
use std::fmt;

pub use admitted::unadmitted;
pub use division::{Division, Stale, StaleKind, Unread};

/// Where a partition sits on its GPU: the ID a vendor's tools name it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Slot {
    /// An NVIDIA GPU instance, by its ID (`nvidia-smi mig -lgi`'s `GPU instance ID`).
    GpuInstance {
        /// Its ID.
        id: u32,
    },
    /// An NVIDIA vGPU, by the virtual function that holds it (`virtfn<index>`).
    Vf {
        /// The VF's number.
        index: u32,
    },
    /// An AMD compute partition, by its index among the GPU's (the kernel's partition ID).
    AmdPartition {
        /// Its index, from 0.
        index: u32,
    },
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::GpuInstance { id } => write!(f, "GI {id}"),
            Self::Vf { index } => write!(f, "VF {index}"),
            Self::AmdPartition { index } => write!(f, "partition {index}"),
        }
    }
}

/// What a partition is made of: the profile (or vGPU type, or compute mode) it was made from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PartitionProfile {
    /// A GPU instance profile.
    Mig {
        /// The profile's ID.
        id: u32,
        /// Its name, when the card's catalogue gave it (`1g.10gb`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A vGPU type.
    Vgpu {
        /// The type's ID.
        type_id: VgpuTypeId,
        /// Its name, when the card's catalogue gave it (`NVIDIA H100-1-10C`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// One partition of an AMD GPU in this compute mode.
    Amd {
        /// The compute mode.
        compute: ComputePartition,
    },
}

/// A profile by what identifies it on the card: a GPU instance profile's ID, a vGPU type's ID,
/// an AMD compute mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProfileId {
    /// A GPU instance profile.
    Mig(u32),
    /// A vGPU type.
    Vgpu(VgpuTypeId),
    /// An AMD compute mode.
    Amd(ComputePartition),
}

impl PartitionProfile {
    /// What identifies it on the card (its name is for people, and a read may lose it).
    pub fn id(&self) -> ProfileId {
        match self {
            Self::Mig { id, .. } => ProfileId::Mig(*id),
            Self::Vgpu { type_id, .. } => ProfileId::Vgpu(*type_id),
            Self::Amd { compute } => ProfileId::Amd(*compute),
        }
    }
}

impl fmt::Display for PartitionProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mig {
                name: Some(name), ..
            }
            | Self::Vgpu {
                name: Some(name), ..
            } => f.write_str(name),
            Self::Mig { id, name: None } => write!(f, "profile {id}"),
            Self::Vgpu {
                type_id,
                name: None,
            } => write!(f, "vGPU type {type_id}"),
            Self::Amd { compute } => write!(f, "{compute}"),
        }
    }
}

gpu_partition_types::token_enum! {
    /// Whether the host's declaration records a partition or it was found.
    pub enum Origin: "partition origin" {
        /// The declaration names it: made through the crates (an apply, a restore), or adopted
        /// into the declaration by one.
        Recorded = "recorded",
        /// Found on the card, named by no declaration (made by hand, by another tool, or by a
        /// version that kept no declaration): a restore destroys it only where the GPU is
        /// declared to match its layout (`unnamed: match`, a layout apply's default); declared
        /// to adopt, never.
        Inferred = "inferred",
    }
}

/// One partition of a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Partition {
    /// Where it sits.
    pub slot: Slot,
    /// What it was made from.
    pub profile: PartitionProfile,
    /// Its placement (a GPU instance's memory slices); `None` where it has none of its own (a
    /// vGPU, an AMD partition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    /// A vGPU's GPU instance (by ID) when it is MIG-backed; `None` for any other partition and
    /// for a time-sliced vGPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<u32>,
    /// A GPU instance's compute instances, by ID (empty for any other partition).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compute: Vec<u32>,
    /// Its ordinal among the partitions of its profile on the GPU, from 0 in slot order.
    pub ordinal: u32,
    /// Recorded by the declaration, or found.
    pub origin: Origin,
    /// Who it is for, when it was created for an owner (a recorded GPU instance only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
}

impl Partition {
    /// A partition at `slot` made from `profile`, recorded or found (`origin`), with no
    /// placement, GPU instance or compute instance, ordinal 0 until [`ordered`] counts it.
    pub fn new(slot: Slot, profile: PartitionProfile, origin: Origin) -> Self {
        Self {
            slot,
            profile,
            placement: None,
            on: None,
            compute: Vec::new(),
            ordinal: 0,
            origin,
            owner: None,
        }
    }
}

/// The same partitions in slot order (GPU instances by placement start, then VFs, then AMD
/// partitions, each by index), each with its ordinal among its profile's.
pub fn ordered(mut partitions: Vec<Partition>) -> Vec<Partition> {
    partitions.sort_by_key(|partition| {
        let start = partition.placement.map(|placement| placement.start);
        (partition.slot_rank(), start, partition.slot)
    });
    let mut seen: std::collections::BTreeMap<ProfileId, u32> = std::collections::BTreeMap::new();
    for partition in &mut partitions {
        let next = seen.entry(partition.profile.id()).or_default();
        partition.ordinal = *next;
        *next += 1;
    }
    partitions
}

impl Partition {
    fn slot_rank(&self) -> u8 {
        match self.slot {
            Slot::GpuInstance { .. } => 0,
            Slot::Vf { .. } => 1,
            Slot::AmdPartition { .. } => 2,
        }
    }
}

/// An NVIDIA GPU's partitions: its GPU instances (none with MIG off), each with its compute
/// instances, then the vGPU on each of its virtual functions (`vfs`: `None` or unreadable, none
/// listed), each recorded where `declared` names it (a GPU instance by profile and placement;
/// one declared by count only, the first of its profile up to the count; a vGPU by VF and type);
/// a recorded vGPU's owner is the owner of the GPU instance it sits on.
pub fn nvidia(
    card: &Card,
    reply: &Reply,
    vfs: Option<&VfsRead>,
    declared: Option<&NvidiaDeclared>,
) -> Vec<Partition> {
    let mut found = Vec::new();
    let mut counted: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
    // By placement, as the planner keeps the first of a profile counted (declared by counts).
    let mut instances: Vec<&crate::card::CardInstance> = card.instances_now().iter().collect();
    instances.sort_by_key(|instance| (instance.placement.start, instance.placement.size));
    for instance in instances {
        let ProfileRef { id, name } = card.named(instance.profile_id);
        let recorded = declared.is_some_and(|declared| {
            declared.mig_enabled
                && match &declared.instances {
                    Some(placed) => {
                        placed.contains(&Placed::new(instance.profile_id, instance.placement))
                    }
                    None => {
                        let count = declared
                            .profiles
                            .iter()
                            .filter(|count| {
                                card.resolve(&count.profile)
                                    .is_some_and(|profile| profile.id == instance.profile_id)
                            })
                            .map(|count| count.count)
                            .sum::<u32>();
                        let taken = counted.entry(id).or_default();
                        *taken += 1;
                        *taken <= count
                    }
                }
        });
        let mut partition = Partition::new(
            Slot::GpuInstance { id: instance.id },
            PartitionProfile::Mig { id, name },
            origin(recorded),
        );
        partition.placement = Some(instance.placement);
        partition.compute = instance.compute.iter().map(|ci| ci.id).collect();
        partition.owner = declared
            .filter(|_| recorded)
            .and_then(|declared| {
                declared.owner_of(&Placed::new(instance.profile_id, instance.placement))
            })
            .cloned();
        found.push(partition);
    }
    // A vGPU's owner is its GPU instance's: one partition, made and destroyed together.
    let owners: std::collections::BTreeMap<u32, Owner> = found
        .iter()
        .filter_map(|partition| match (&partition.slot, &partition.owner) {
            (Slot::GpuInstance { id }, Some(owner)) => Some((*id, owner.clone())),
            _ => None,
        })
        .collect();
    if let Some(VfsRead::Read(vfs)) = vfs {
        let name_of = |type_id: VgpuTypeId| {
            reply
                .vgpu_types
                .read()
                .into_iter()
                .flatten()
                .filter_map(|entry| entry.read())
                .find(|known| known.id == type_id.get())
                .and_then(|known| known.name.read().cloned())
        };
        for vf in vfs {
            let Some(type_id) = vf.type_id else {
                continue;
            };
            let recorded = declared
                .and_then(|declared| declared.vgpu.as_ref())
                .is_some_and(|vgpu| match vgpu {
                    VgpuDeclared::On { types, .. } => types
                        .iter()
                        .any(|declared| declared.index == vf.index && declared.type_id == type_id),
                    VgpuDeclared::Counted { types, .. } => {
                        types.iter().any(|declared| declared.type_id == type_id)
                    }
                    VgpuDeclared::Off => false,
                });
            let mut partition = Partition::new(
                Slot::Vf { index: vf.index },
                PartitionProfile::Vgpu {
                    type_id,
                    name: name_of(type_id),
                },
                origin(recorded),
            );
            partition.on = vf.gpu_instance;
            partition.owner = vf
                .gpu_instance
                .filter(|_| recorded)
                .and_then(|id| owners.get(&id).cloned());
            found.push(partition);
        }
    }
    ordered(found)
}

/// Why an AMD GPU's partitions cannot be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AmdCountUnknown {
    /// In CPX mode a GPU has one partition per XCC, and the GPU's sysfs files name no XCC
    /// count: what it offers fits several counts (or none).
    #[error(
        "in {compute} mode the GPU has one partition per XCC, and what it offers fits {} XCC counts",
        candidates.len()
    )]
    XccCount {
        /// The mode.
        compute: ComputePartition,
        /// The XCC counts what it offers fits.
        candidates: Vec<u32>,
    },
}

/// An AMD GPU's compute partitions as read (`held`; none in SPX: the GPU is whole), recorded
/// where `declared` declares its compute mode. In CPX mode the count is the GPU's XCC count,
/// which only what it offers tells ([`crate::amd::xcc_candidates`]): where that fits more than
/// one count, the partitions are not known.
pub fn amd(
    held: &AmdPartitions,
    declared: Option<&AmdDeclared>,
) -> Result<Vec<Partition>, AmdCountUnknown> {
    let compute = held.compute;
    let count = match compute {
        ComputePartition::Spx => return Ok(Vec::new()),
        ComputePartition::Dpx => 2,
        ComputePartition::Tpx => 3,
        ComputePartition::Qpx => 4,
        ComputePartition::Cpx => {
            let candidates = crate::amd::xcc_candidates(held);
            match candidates.as_slice() {
                [xccs] => partitions(compute, *xccs).unwrap_or(*xccs),
                _ => {
                    return Err(AmdCountUnknown::XccCount {
                        compute,
                        candidates,
                    });
                }
            }
        }
    };
    let recorded = declared.is_some_and(|declared| declared.want.compute == compute);
    Ok(ordered(
        (0..count)
            .map(|index| {
                Partition::new(
                    Slot::AmdPartition { index },
                    PartitionProfile::Amd { compute },
                    origin(recorded),
                )
            })
            .collect(),
    ))
}

fn origin(recorded: bool) -> Origin {
    if recorded {
        Origin::Recorded
    } else {
        Origin::Inferred
    }
}
