//! A difference's facts as data ([`Fact`], with the compute instances found and wanted of an
//! instance, [`ComputeFound`] and [`Filling`]), and the kind each fact is of.

use super::kind::DifferenceKind;
use crate::board::BoardChange;
use crate::card::{ProfileRef, ReplyMember};
use crate::vendor::Vendor;
use crate::vf::DeclaredVf;
use crate::want::ProfileKey;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_partition_types::{Placement, UnreadableReason, VgpuTypeId};
use serde::{Deserialize, Serialize};

/// A compute instance as a card holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ComputeFound {
    /// Its ID in its GPU instance.
    pub id: u32,
    /// Its compute instance profile's ID.
    pub profile_id: u32,
    /// Where it sits, in compute slices.
    pub placement: Placement,
}

impl ComputeFound {
    /// The compute instance `id` of `profile_id` at `placement`.
    pub fn new(id: u32, profile_id: u32, placement: Placement) -> Self {
        Self {
            id,
            profile_id,
            placement,
        }
    }
}

/// The compute instance that fills a GPU instance: its profile and placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Filling {
    /// The compute instance profile's ID.
    pub profile_id: u32,
    /// Its placement, in compute slices.
    pub placement: Placement,
}

impl Filling {
    /// The compute instance of `profile_id` at `placement`.
    pub fn new(profile_id: u32, placement: Placement) -> Self {
        Self {
            profile_id,
            placement,
        }
    }
}

/// What differs, as facts (`kind` and the facts' members in `--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Fact {
    /// The MIG mode found and wanted.
    Mode {
        /// Whether the card has a MIG mode at all.
        capable: bool,
        /// MIG on now.
        current: bool,
        /// The mode after the next reset, when it differs from now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pending: Option<bool>,
        /// The mode wanted.
        wanted: bool,
    },
    /// A profile the layout names that the card's catalogue does not have.
    Profile {
        /// The profile as the layout names it.
        profile: ProfileKey,
    },
    /// How many GPU instances of a profile, found and wanted.
    InstanceCount {
        /// The profile.
        profile: ProfileRef,
        /// How many the card has.
        found: u32,
        /// How many are wanted.
        wanted: u32,
    },
    /// No GPU instance of a profile at a placement where the layout places one.
    InstanceMissing {
        /// The profile.
        profile: ProfileRef,
        /// Where the layout places it.
        placement: Placement,
    },
    /// A GPU instance the layout does not name.
    InstanceExtra {
        /// Its ID.
        gpu_instance_id: u32,
        /// Its profile.
        profile: ProfileRef,
        /// Where it sits.
        placement: Placement,
    },
    /// A GPU instance at another placement than the layout's for it.
    InstanceMoved {
        /// Its ID.
        gpu_instance_id: u32,
        /// Its profile.
        profile: ProfileRef,
        /// Where it sits.
        found: Placement,
        /// Where the layout places it.
        wanted: Placement,
    },
    /// A GPU instance at none of its profile's placements.
    InstanceMisplaced {
        /// Its ID.
        gpu_instance_id: u32,
        /// Its profile.
        profile: ProfileRef,
        /// Where it sits.
        placement: Placement,
    },
    /// A GPU instance whose compute instances are not exactly the one that fills it.
    ComputeInstances {
        /// The GPU instance's ID.
        gpu_instance_id: u32,
        /// Its profile.
        profile: ProfileRef,
        /// The compute instances it has.
        found: Vec<ComputeFound>,
        /// The one that fills it, when the card says how many compute slices its profile has.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wanted: Option<Filling>,
    },
    /// Another board in the slot than the declared one.
    Board(BoardChange),
    /// No GPU is at the address any more; the layout was declared on one.
    GpuGone,
    /// The card could not be read (an assert's read failed).
    Unread {
        /// Why, as the helper protocol's reason.
        #[serde(with = "token_text")]
        reason: UnreadableReason,
        /// What happened, for people (the run, the helper's words).
        detail: String,
    },
    /// A member of the card's reply the comparison depends on did not read.
    Unreadable {
        /// Which.
        what: ReplyMember,
    },
    /// No virtual function is enabled, and vGPUs are declared on them.
    VfsGone {
        /// How many vGPUs are declared.
        declared: u32,
    },
    /// How many VFs hold a declared vGPU type, found and declared (a declaration by counts).
    VgpuCount {
        /// The type's ID.
        type_id: VgpuTypeId,
        /// Its name, as the config gave it.
        name: String,
        /// How many VFs hold it.
        found: u32,
        /// How many are declared.
        wanted: u32,
    },
    /// VFs hold a vGPU type the declaration does not name.
    VgpuExtra {
        /// The type's ID.
        type_id: VgpuTypeId,
        /// How many VFs hold it.
        found: u32,
    },
    /// A virtual function's vGPU type, found and declared.
    VfType {
        /// The VF's number (`virtfn<index>`).
        index: u32,
        /// The type it holds (`None`: none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        found: Option<VgpuTypeId>,
        /// The type declared on it, with its name (`None`: none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wanted: Option<DeclaredVf>,
    },
    /// A GPU of another vendor than the declared one.
    Vendor {
        /// The vendor found.
        found: Vendor,
        /// The vendor declared.
        wanted: Vendor,
    },
    /// The GPU's SR-IOV state did not read (what the reader said).
    VfsUnreadable {
        /// Why.
        why: String,
    },
    /// A vGPU config the card cannot hold as asked: why, as the catalogue's check said.
    VgpuType {
        /// Why (naming the type).
        why: String,
    },
    /// An AMD GPU's compute partition, found and wanted.
    ComputePartition {
        /// The partition now.
        found: ComputePartition,
        /// The partition wanted.
        wanted: ComputePartition,
    },
    /// An AMD GPU's memory partition, found (and requested, waiting for a driver reload) and
    /// wanted.
    MemoryPartition {
        /// The partition now (`None`: the kernel shows no memory partition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        found: Option<MemoryPartition>,
        /// A partition requested of the GPU that waits for a driver reload (this host's own
        /// record: the kernel shows none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested: Option<MemoryPartition>,
        /// The partition wanted.
        wanted: MemoryPartition,
    },
    /// An AMD GPU's partitions did not read: why.
    PartitionsUnread {
        /// Why.
        why: String,
    },
}

/// A reason written as its token and read back from it.
mod token_text {
    use gpu_partition_types::UnreadableReason;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        reason: &UnreadableReason,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(reason)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<UnreadableReason, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Fact {
    /// Its kind.
    pub fn kind(&self) -> DifferenceKind {
        match self {
            Self::Mode { .. } => DifferenceKind::Mode,
            Self::Profile { .. } => DifferenceKind::Profile,
            Self::InstanceCount { .. } => DifferenceKind::InstanceCount,
            Self::InstanceMissing { .. } => DifferenceKind::InstanceMissing,
            Self::InstanceExtra { .. } => DifferenceKind::InstanceExtra,
            Self::InstanceMoved { .. } => DifferenceKind::InstanceMoved,
            Self::InstanceMisplaced { .. } => DifferenceKind::InstanceMisplaced,
            Self::ComputeInstances { .. } => DifferenceKind::ComputeInstances,
            Self::Board(_) => DifferenceKind::Board,
            Self::GpuGone => DifferenceKind::GpuGone,
            Self::Unread { .. } => DifferenceKind::Unread,
            Self::Unreadable { .. } => DifferenceKind::Unreadable,
            Self::VfsGone { .. } => DifferenceKind::VfsGone,
            Self::VgpuCount { .. } => DifferenceKind::VgpuCount,
            Self::VgpuExtra { .. } => DifferenceKind::VgpuExtra,
            Self::VfType { .. } => DifferenceKind::VfType,
            Self::Vendor { .. } => DifferenceKind::Vendor,
            Self::VfsUnreadable { .. } => DifferenceKind::VfsUnreadable,
            Self::VgpuType { .. } => DifferenceKind::VgpuType,
            Self::ComputePartition { .. } => DifferenceKind::ComputePartition,
            Self::MemoryPartition { .. } => DifferenceKind::MemoryPartition,
            Self::PartitionsUnread { .. } => DifferenceKind::PartitionsUnread,
        }
    }
}
