//! Why a partition request was refused before anything was written: the closed set
//! ([`PartitionRefusal`]), each with its facts and its token ([`PartitionRefusalKind`]).

use crate::vgpu::VgpuTypeName;
use gpu_partition_types::Bdf;
use layout_model::room::RoomRefusal;
use layout_model::{Owner, ProfileKey};
use std::fmt;

gpu_partition_types::token_enum! {
    /// Why a partition request was refused before anything was written, as a token.
    pub enum PartitionRefusalKind: "partition refusal" {
        /// [`PartitionRefusal::NotNvidia`].
        NotNvidia = "not_nvidia",
        /// [`PartitionRefusal::MigOff`].
        MigOff = "mig_off",
        /// [`PartitionRefusal::NotPlaced`].
        NotPlaced = "not_placed",
        /// [`PartitionRefusal::NoSriov`].
        NoSriov = "no_sriov",
        /// [`PartitionRefusal::VfsDisabled`].
        VfsDisabled = "vfs_disabled",
        /// [`PartitionRefusal::NoVgpuType`].
        NoVgpuType = "no_vgpu_type",
        /// [`PartitionRefusal::TimeSliced`].
        TimeSliced = "time_sliced",
        /// [`PartitionRefusal::NoFreeVf`].
        NoFreeVf = "no_free_vf",
        /// [`PartitionRefusal::LandsElsewhere`].
        LandsElsewhere = "vgpu_lands_elsewhere",
        /// [`PartitionRefusal::ProfileHoldsVgpu`].
        ProfileHoldsVgpu = "profile_holds_vgpu",
        /// [`PartitionRefusal::Unreadable`].
        Unreadable = "gpu_unreadable",
        /// [`PartitionRefusal::NoProfile`].
        NoProfile = "no_profile",
        /// [`PartitionRefusal::Room`].
        DoesNotFit = "does_not_fit",
        /// [`PartitionRefusal::NoRoom`].
        NoRoom = "no_room",
        /// [`PartitionRefusal::NoInstance`].
        NoInstance = "no_instance",
        /// [`PartitionRefusal::NoneOwned`].
        NoneOwned = "none_owned",
        /// [`PartitionRefusal::SeveralOwned`].
        SeveralOwned = "several_owned",
        /// [`PartitionRefusal::InUse`].
        InUse = "partition_in_use",
        /// [`PartitionRefusal::Inferred`].
        Inferred = "inferred",
        /// [`PartitionRefusal::CardDiffers`].
        CardDiffers = "card_differs",
        /// [`PartitionRefusal::NotOurs`].
        NotOurs = "gpu_not_ours",
    }
}

/// Why a partition request was refused before anything was written: a closed set, each with
/// its facts (a toolstack maps each to one API error of its own). Not `non_exhaustive`: a
/// reason added is a change a toolstack's match must see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionRefusal {
    /// The GPU is not an NVIDIA GPU of this host (an AMD GPU, or no GPU at that address).
    NotNvidia {
        /// The address.
        device: Bdf,
    },
    /// The GPU is declared with MIG off, or its card has MIG off: a layout turns MIG on first.
    MigOff {
        /// The GPU.
        device: Bdf,
    },
    /// The GPU's declaration gives counts only (GPU instances with no placement chosen yet,
    /// or vGPUs with no VF named, as an earlier schema kept them): a restore or an apply
    /// places them first.
    NotPlaced {
        /// The GPU.
        device: Bdf,
    },
    /// A vGPU was asked for, and the GPU offers no SR-IOV virtual functions (no
    /// `sriov_totalvfs`): a vGPU on a GPU instance sits on a VF.
    NoSriov {
        /// The GPU.
        device: Bdf,
    },
    /// A vGPU was asked for, the GPU's virtual functions are not enabled, and the card holds
    /// GPU instances: enabling the VFs (`sriov-manage -e`) wipes every GPU instance, more than
    /// one partition (on a card that holds none, they are enabled for the vGPU).
    VfsDisabled {
        /// The GPU.
        device: Bdf,
    },
    /// The card's vGPU catalogue has no such type.
    NoVgpuType {
        /// The GPU.
        device: Bdf,
        /// The type asked for.
        name: VgpuTypeName,
    },
    /// The type is time-sliced: it sits on no GPU instance, so it is no partition.
    TimeSliced {
        /// The GPU.
        device: Bdf,
        /// The type.
        name: VgpuTypeName,
    },
    /// Every enabled VF holds a type, or is declared to.
    NoFreeVf {
        /// The GPU.
        device: Bdf,
    },
    /// A GPU instance of the type's profile is on the card already: the driver places a
    /// MIG-backed vGPU on an instance of its profile with room, so the vGPU could land there
    /// (now, or when a restore makes the instances again) rather than on the partition made
    /// for it.
    LandsElsewhere {
        /// The GPU.
        device: Bdf,
        /// The GPU instance of the profile.
        gpu_instance_id: u32,
    },
    /// A vGPU partition's GPU instance is of this profile: a second instance of it would let a
    /// restore place that vGPU on either.
    ProfileHoldsVgpu {
        /// The GPU.
        device: Bdf,
        /// The GPU instance the vGPU sits on.
        gpu_instance_id: u32,
    },
    /// The card did not read (or not whole).
    Unreadable {
        /// The GPU.
        device: Bdf,
        /// Why, for people.
        why: String,
    },
    /// The card's catalogue has no such profile.
    NoProfile {
        /// The GPU.
        device: Bdf,
        /// The profile asked for.
        profile: ProfileKey,
    },
    /// It does not fit, by NVIDIA's placement rules ([`layout_model::room`]): the placement
    /// taken, not one of the profile's, the profile's count reached, or the bounds unknown.
    Room {
        /// The GPU.
        device: Bdf,
        /// The rule's refusal, with its facts.
        refused: RoomRefusal,
    },
    /// No placement of the profile fits now.
    NoRoom {
        /// The GPU.
        device: Bdf,
        /// The profile.
        profile: layout_model::ProfileRef,
    },
    /// No GPU instance of this ID on the card.
    NoInstance {
        /// The GPU.
        device: Bdf,
        /// The ID asked for.
        gpu_instance_id: u32,
    },
    /// The owner has no partition on the GPU.
    NoneOwned {
        /// The GPU.
        device: Bdf,
        /// The owner.
        owner: Owner,
    },
    /// The owner has several partitions on the GPU: name the slot.
    SeveralOwned {
        /// The GPU.
        device: Bdf,
        /// The owner.
        owner: Owner,
        /// Their GPU instance IDs.
        gpu_instance_ids: Vec<u32>,
    },
    /// The partition was created for another owner (xen-api's `GPU_PARTITION_IN_USE`): only
    /// its owner destroys it.
    InUse {
        /// The GPU.
        device: Bdf,
        /// The GPU instance.
        gpu_instance_id: u32,
        /// Its owner.
        owner: Owner,
    },
    /// The GPU is not ours (its ownership `dynamic` or `external`): nothing is read or
    /// written on it.
    NotOurs {
        /// The GPU.
        device: Bdf,
        /// Who owns it.
        ownership: gpu_host_probe::Ownership,
    },
    /// The card differs from the GPU's declaration (an instance declared and missing, one
    /// whose compute instances do not fill it, or one the declaration would destroy), so the
    /// request would write more than its one partition: a restore brings the card back first.
    CardDiffers {
        /// The GPU.
        device: Bdf,
    },
    /// The partition was found, not created through us (inferred): it is never destroyed
    /// one at a time.
    Inferred {
        /// The GPU.
        device: Bdf,
        /// The GPU instance.
        gpu_instance_id: u32,
    },
}

impl PartitionRefusal {
    /// Its token.
    pub fn kind(&self) -> PartitionRefusalKind {
        use PartitionRefusalKind as K;
        match self {
            Self::NotNvidia { .. } => K::NotNvidia,
            Self::MigOff { .. } => K::MigOff,
            Self::NotPlaced { .. } => K::NotPlaced,
            Self::NoSriov { .. } => K::NoSriov,
            Self::VfsDisabled { .. } => K::VfsDisabled,
            Self::NoVgpuType { .. } => K::NoVgpuType,
            Self::TimeSliced { .. } => K::TimeSliced,
            Self::NoFreeVf { .. } => K::NoFreeVf,
            Self::LandsElsewhere { .. } => K::LandsElsewhere,
            Self::ProfileHoldsVgpu { .. } => K::ProfileHoldsVgpu,
            Self::Unreadable { .. } => K::Unreadable,
            Self::NoProfile { .. } => K::NoProfile,
            Self::Room { .. } => K::DoesNotFit,
            Self::NoRoom { .. } => K::NoRoom,
            Self::NoInstance { .. } => K::NoInstance,
            Self::NoneOwned { .. } => K::NoneOwned,
            Self::SeveralOwned { .. } => K::SeveralOwned,
            Self::InUse { .. } => K::InUse,
            Self::Inferred { .. } => K::Inferred,
            Self::CardDiffers { .. } => K::CardDiffers,
            Self::NotOurs { .. } => K::NotOurs,
        }
    }
}

impl fmt::Display for PartitionRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotNvidia { device } => write!(f, "{device} is not an NVIDIA GPU of this host"),
            Self::MigOff { device } => write!(
                f,
                "{device} has MIG off: apply a layout that turns it on first"
            ),
            Self::NotPlaced { device } => write!(
                f,
                "{device} is declared by counts only: restore or apply it first, so its \
                 instances have placements"
            ),
            Self::NoSriov { device } => write!(
                f,
                "{device} offers no SR-IOV virtual functions, which a vGPU sits on"
            ),
            Self::VfsDisabled { device } => write!(
                f,
                "{device} has its virtual functions disabled and holds GPU instances: enabling \
                 the virtual functions would wipe them"
            ),
            Self::NoVgpuType { device, name } => {
                write!(f, "{device} has no vGPU type {name}")
            }
            Self::TimeSliced { device, name } => write!(
                f,
                "{name} is a time-sliced vGPU type on {device}: it sits on no GPU instance"
            ),
            Self::NoFreeVf { device } => write!(
                f,
                "every enabled virtual function of {device} holds a vGPU type or is declared to"
            ),
            Self::LandsElsewhere {
                device,
                gpu_instance_id,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} of {device} is of this vGPU type's profile, so the \
                 driver could place the vGPU there (now, or after a restore) rather than on a new \
                 partition"
            ),
            Self::ProfileHoldsVgpu {
                device,
                gpu_instance_id,
            } => write!(
                f,
                "a vGPU partition sits on GPU instance {gpu_instance_id} of {device}, of this \
                 profile: with a second instance of it, a restore could place that vGPU on either"
            ),
            Self::Unreadable { device, why } => write!(f, "{device} did not read: {why}"),
            Self::NoProfile { device, profile } => {
                write!(f, "{device} has no GPU instance profile {profile}")
            }
            Self::Room { device, refused } => write!(f, "{device}: {refused}"),
            Self::NoRoom { device, profile } => {
                write!(f, "no placement of {profile} fits on {device} now")
            }
            Self::NoInstance {
                device,
                gpu_instance_id,
            } => write!(f, "{device} has no GPU instance {gpu_instance_id}"),
            Self::NoneOwned { device, owner } => {
                write!(f, "{owner} has no partition on {device}")
            }
            Self::SeveralOwned {
                device,
                owner,
                gpu_instance_ids,
            } => write!(
                f,
                "{owner} has {} partitions on {device} (GPU instances {gpu_instance_ids:?}): \
                 name the one to destroy",
                gpu_instance_ids.len()
            ),
            Self::InUse {
                device,
                gpu_instance_id,
                owner,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} of {device} is in use by {owner}: only its owner \
                 destroys it"
            ),
            Self::NotOurs { device, ownership } => write!(
                f,
                "{device} is not ours (ownership {ownership}): nothing is written on it"
            ),
            Self::CardDiffers { device } => write!(
                f,
                "{device} differs from its declaration, so more than one partition would be \
                 written: restore it first (`mxctl partition restore`)"
            ),
            Self::Inferred {
                device,
                gpu_instance_id,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} of {device} was found, not created through us: it \
                 is never destroyed one at a time"
            ),
        }
    }
}
