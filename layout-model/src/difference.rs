//! [`Difference`]: one way a card differs from what it should be, as data — its kind
//! ([`DifferenceKind`], a listable set) and its facts ([`Fact`]: the mode found and wanted, a
//! profile's count found and wanted, the placement of an instance missing, the ID and placement
//! of an extra one, where one moved from and to, …) — with the message for people derived from
//! them. It serializes (and is stored) flat: `device`, `kind`, the facts, and `message`.

use crate::board::BoardChange;
use crate::card::{At, ProfileRef, ReplyMember};
use crate::declared::Vendor;
use crate::vgpu::DeclaredVf;
use crate::want::ProfileKey;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_partition_types::{Bdf, Placement, Token, UnreadableReason, VgpuTypeId};
use serde::{Deserialize, Serialize};
use std::fmt;

gpu_partition_types::token_enum! {
    /// What a difference is about. The set is listable ([`Token::ALL`]): a metric by kind or an
    /// embedder that acts on some kinds names every one.
    #[non_exhaustive]
    pub enum DifferenceKind: "difference" {
        /// The MIG mode (now, or pending), or a card with no MIG mode where MIG is wanted.
        Mode = "mode",
        /// A profile of the layout the card's catalogue does not have.
        Profile = "profile",
        /// How many GPU instances of a profile (where the placements are not decided).
        InstanceCount = "instance_count",
        /// No GPU instance at a placement where the layout places one.
        InstanceMissing = "instance_missing",
        /// A GPU instance the layout does not name.
        InstanceExtra = "instance_extra",
        /// A GPU instance at another placement than the one the layout places it at.
        InstanceMoved = "instance_moved",
        /// A GPU instance at none of its profile's placements.
        InstanceMisplaced = "instance_misplaced",
        /// A GPU instance whose compute instances are not the one that fills it.
        ComputeInstances = "compute_instances",
        /// Another board in the slot than the one declared.
        Board = "board",
        /// No GPU at the address any more.
        GpuGone = "gpu_gone",
        /// The card could not be read at all.
        Unread = "unread",
        /// The card's reply did not read whole.
        Unreadable = "unreadable",
        /// No virtual function is enabled where vGPUs are declared on them.
        VfsGone = "vfs_gone",
        /// How many VFs hold a declared vGPU type: fewer (a type gone) or more.
        VgpuCount = "vgpu_count",
        /// VFs hold a vGPU type the declaration does not name (a type changed).
        VgpuExtra = "vgpu_extra",
        /// A virtual function whose vGPU type is not its declared one (none found, none
        /// declared, or another type), naming the VF.
        VfType = "vf_type",
        /// A GPU of another vendor than the declared one in its slot.
        Vendor = "vendor",
        /// The GPU's SR-IOV state did not read.
        VfsUnreadable = "vfs_unreadable",
        /// A vGPU type the config names that the card cannot hold as asked (not in its
        /// catalogue, more than it holds, not sized by it).
        VgpuType = "vgpu_type",
        /// An AMD GPU's compute partition (SPX … CPX).
        ComputePartition = "compute_partition",
        /// An AMD GPU's memory partition (NPS1 … NPS8), now or requested.
        MemoryPartition = "memory_partition",
        /// An AMD GPU's partitions did not read (in reset, no mode set, no partition files).
        PartitionsUnread = "partitions_unread",
    }
}

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

fn on(on: bool) -> &'static str {
    if on { "on" } else { "off" }
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

impl fmt::Display for Fact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Mode {
                capable: false,
                wanted,
                ..
            } => write!(
                f,
                "the card has no MIG mode; the layout wants MIG {}",
                on(*wanted)
            ),
            Self::Mode {
                current,
                pending: Some(pending),
                wanted,
                ..
            } => write!(
                f,
                "MIG is {} now, {} after the next reset; the layout wants it {}",
                on(*current),
                on(*pending),
                on(*wanted)
            ),
            Self::Mode {
                current,
                pending: None,
                wanted,
                ..
            } => write!(
                f,
                "MIG is {}; the layout wants it {}",
                on(*current),
                on(*wanted)
            ),
            Self::Profile { profile } => write!(f, "the card has no profile {profile}"),
            Self::InstanceCount {
                profile,
                found,
                wanted,
            } => write!(
                f,
                "{found} GPU instance(s) of {profile}, the layout wants {wanted}"
            ),
            Self::InstanceMissing { profile, placement } => write!(
                f,
                "no GPU instance of {profile} at {}, where the layout places one",
                At(*placement)
            ),
            Self::InstanceExtra {
                gpu_instance_id,
                profile,
                placement,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} ({profile}) at {} is not in the layout",
                At(*placement)
            ),
            Self::InstanceMoved {
                gpu_instance_id,
                profile,
                found,
                wanted,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} ({profile}) sits at {}; the layout places it at {}",
                At(*found),
                At(*wanted)
            ),
            Self::InstanceMisplaced {
                gpu_instance_id,
                profile,
                placement,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} ({profile}) sits at {}, none of its profile's \
                 placements",
                At(*placement)
            ),
            Self::ComputeInstances {
                gpu_instance_id,
                profile,
                found,
                wanted,
            } => {
                let has = if found.is_empty() {
                    "no compute instance".to_owned()
                } else {
                    let each: Vec<String> = found
                        .iter()
                        .map(|ci| {
                            format!(
                                "{} (profile {} at {})",
                                ci.id,
                                ci.profile_id,
                                At(ci.placement)
                            )
                        })
                        .collect();
                    format!("compute instance(s) {}", each.join(", "))
                };
                let wants = wanted.map_or_else(
                    || "its filling compute instance".to_owned(),
                    |filling| {
                        format!(
                            "one compute instance of profile {} at {}",
                            filling.profile_id,
                            At(filling.placement)
                        )
                    },
                );
                write!(
                    f,
                    "GPU instance {gpu_instance_id} ({profile}) has {has}; the layout wants {wants}"
                )
            }
            Self::Board(change) => write!(f, "{change}"),
            Self::GpuGone => {
                f.write_str("no GPU is at this address any more; the layout was declared on one")
            }
            Self::Unread { reason, detail } => {
                write!(f, "the card did not read ({reason}): {detail}")
            }
            Self::Unreadable { what } => {
                write!(f, "{what} did not read, so nothing can be compared over it")
            }
            Self::VfsGone { declared } => write!(
                f,
                "no virtual function is enabled; {declared} vGPU(s) are declared on them"
            ),
            Self::VgpuCount {
                type_id,
                name,
                found,
                wanted,
            } => write!(
                f,
                "{found} virtual function(s) hold vGPU type {name} ({type_id}), the \
                 declaration wants {wanted}"
            ),
            Self::VgpuExtra { type_id, found } => write!(
                f,
                "{found} virtual function(s) hold vGPU type {type_id}, which the declaration \
                 does not name"
            ),
            Self::VfType {
                index,
                found,
                wanted,
            } => {
                match found {
                    Some(found) => write!(f, "virtual function {index} holds vGPU type {found}")?,
                    None => write!(f, "virtual function {index} holds no vGPU")?,
                }
                match wanted {
                    Some(wanted) => write!(
                        f,
                        "; the declaration puts {} ({}) on it",
                        wanted.name, wanted.type_id
                    ),
                    None => f.write_str("; the declaration puts none on it"),
                }
            }
            Self::Vendor { found, wanted } => write!(
                f,
                "the GPU here is of vendor {}; the declaration is of a GPU of vendor {}",
                found.as_str(),
                wanted.as_str()
            ),
            Self::VfsUnreadable { why } => write!(f, "its virtual functions did not read: {why}"),
            Self::VgpuType { why } => f.write_str(why),
            Self::ComputePartition { found, wanted } => write!(
                f,
                "the compute partition is {found}; the layout wants {wanted}"
            ),
            Self::MemoryPartition {
                found,
                requested,
                wanted,
            } => {
                match found {
                    Some(found) => write!(f, "the memory partition is {found}")?,
                    None => f.write_str("the GPU shows no memory partition")?,
                }
                if let Some(requested) = requested {
                    write!(f, ", {requested} requested and waiting for a driver reload")?;
                }
                write!(f, "; the layout wants {wanted}")
            }
            Self::PartitionsUnread { why } => write!(f, "its partitions did not read: {why}"),
        }
    }
}

/// What brings a difference back, where something of the declaration can (a typed hint: the
/// library names no command of a program).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Remedy {
    /// Applying the declaration again (a restore) brings it back.
    Restore,
    /// The declaration cannot be applied to what is there (another model, a profile the card
    /// lacks): a new layout for it is needed.
    NewLayout,
    /// Nothing of ours: the GPU is gone, or the card must be read first.
    None,
}

/// One way a card differs from what it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Difference {
    /// The card.
    pub device: Bdf,
    /// What differs.
    pub fact: Fact,
}

impl Difference {
    /// `fact` on `device`.
    pub fn new(device: Bdf, fact: Fact) -> Self {
        Self { device, fact }
    }

    /// Its kind.
    pub fn kind(&self) -> DifferenceKind {
        self.fact.kind()
    }

    /// What differs, for people (derived from the facts).
    pub fn message(&self) -> String {
        self.fact.to_string()
    }

    /// What brings it back.
    pub fn remedy(&self) -> Remedy {
        match &self.fact {
            Fact::Mode { capable: false, .. } | Fact::Profile { .. } => Remedy::NewLayout,
            Fact::Board(BoardChange::OtherModel { .. })
            | Fact::VgpuType { .. }
            | Fact::Vendor { .. } => Remedy::NewLayout,
            Fact::Mode { .. }
            | Fact::InstanceCount { .. }
            | Fact::InstanceMissing { .. }
            | Fact::InstanceExtra { .. }
            | Fact::InstanceMoved { .. }
            | Fact::InstanceMisplaced { .. }
            | Fact::ComputeInstances { .. }
            | Fact::Board(BoardChange::OtherBoard { .. })
            | Fact::VfsGone { .. }
            | Fact::VgpuCount { .. }
            | Fact::VgpuExtra { .. }
            | Fact::VfType { .. }
            | Fact::ComputePartition { .. }
            | Fact::MemoryPartition { .. } => Remedy::Restore,
            Fact::GpuGone
            | Fact::Unread { .. }
            | Fact::Unreadable { .. }
            | Fact::VfsUnreadable { .. }
            | Fact::PartitionsUnread { .. } => Remedy::None,
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.device,
            self.kind().as_str(),
            self.fact
        )
    }
}

/// The stored and printed form: `device`, the facts with their `kind`, and `message`.
#[derive(Serialize)]
struct Written<'a> {
    device: &'a Bdf,
    #[serde(flatten)]
    fact: &'a Fact,
    message: String,
}

#[derive(Deserialize)]
struct Read {
    device: Bdf,
    #[serde(flatten)]
    fact: Fact,
}

impl Serialize for Difference {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Written {
            device: &self.device,
            fact: &self.fact,
            message: self.message(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Difference {
    /// The facts are read; `message` is derived again from them, not read.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = Read::deserialize(deserializer)?;
        Ok(Self {
            device: read.device,
            fact: read.fact,
        })
    }
}
