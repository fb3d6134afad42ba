//! One partition at a time, for an owner: a GPU instance — or a MIG-backed vGPU on a GPU
//! instance made for it — created ([`create`]) or destroyed ([`destroy`]) on one NVIDIA GPU,
//! through the same executor as a layout (the host lock, the record of writes, the hooks, the
//! read-back, the closing sync), writing only that partition and updating the GPU's
//! declaration (the others' stay). A vGPU's steps run in the driver's order: the GPU instance,
//! then the type on its VF; the type cleared, then the GPU instance destroyed. Every refusal
//! comes before any write: the request's own ([`PartitionRefusal`], each with its facts and a
//! token), then the executor's ([`ApplyReason`](crate::ApplyReason): `gpu_busy`,
//! `partition_owned`, …). A create that fails after it made its GPU instance takes the instance
//! back under the same hold of the lock ([`PartitionOutcome::Ran`]'s `undone`).

mod base;
mod one;
mod refusal;
mod vgpu;

pub use base::PARTITIONS_LABEL;
pub use one::{PartitionOutcome, TakenBack};
pub use refusal::{PartitionRefusal, PartitionRefusalKind};

use base::Base;
use one::{Decided, one_partition, want_of};

use super::options::ApplyOptions;
use super::run::{ApplyError, ApplyRun};
use crate::vgpu::VgpuTypeName;
use gpu_partition_types::{Bdf, Placement};
use layout_model::room::{Change, ChangeRefused, Geometry, RoomRefusal, remaining};
use layout_model::{Card, Owned, Owner, Placed, ProfileKey};

/// What a partition created is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Piece {
    /// A GPU instance of this profile (by name or ID), with the compute instance that fills it.
    Instance(ProfileKey),
    /// A MIG-backed vGPU of this type: a GPU instance of the type's profile made for it, then
    /// the type written to the lowest free virtual function (the GPU's VFs enabled already).
    Vgpu(VgpuTypeName),
}

/// A partition to create for an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreatePartition {
    /// The GPU.
    pub device: Bdf,
    /// What it is.
    pub piece: Piece,
    /// Where its GPU instance sits; `None`: the lowest placement of the profile that fits now.
    pub placement: Option<Placement>,
    /// Who it is for.
    pub owner: Owner,
}

impl CreatePartition {
    /// A GPU instance of `profile` on `device` for `owner`, where it fits first.
    pub fn new(device: Bdf, profile: ProfileKey, owner: Owner) -> Self {
        Self::of(device, Piece::Instance(profile), owner)
    }

    /// A MIG-backed vGPU of type `name` on `device` for `owner`, on a GPU instance made for
    /// it where the type's profile fits first.
    pub fn vgpu(device: Bdf, name: VgpuTypeName, owner: Owner) -> Self {
        Self::of(device, Piece::Vgpu(name), owner)
    }

    fn of(device: Bdf, piece: Piece, owner: Owner) -> Self {
        Self {
            device,
            piece,
            placement: None,
            owner,
        }
    }

    /// The same, at `placement`.
    pub fn at(mut self, placement: Placement) -> Self {
        self.placement = Some(placement);
        self
    }
}

/// Which partition to destroy (a vGPU goes with the GPU instance it sits on).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Which {
    /// The GPU instance of this ID.
    Slot(u32),
    /// The one partition of this owner on the GPU.
    OwnedBy(Owner),
}

/// A partition to destroy, and who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DestroyPartition {
    /// The GPU.
    pub device: Bdf,
    /// Which.
    pub which: Which,
    /// Who asks: a partition created for an owner is destroyed only by that owner; `None`
    /// destroys only a partition nobody owns.
    pub by: Option<Owner>,
}

impl DestroyPartition {
    /// The partition `which` on `device`, asked by `by`.
    pub fn new(device: Bdf, which: Which, by: Option<Owner>) -> Self {
        Self { device, which, by }
    }
}

/// Creates one partition for `request.owner` through the executor (`options`: its lock wait,
/// hooks, cancel, dry run; only this GPU, the card's other instances kept): a GPU instance
/// (with the compute instance that fills it) at the placement asked for or the lowest that
/// fits; for a vGPU, then its type on the lowest free VF. The GPU's declaration gains it with
/// its owner; a GPU nothing declared is declared with it alone (label [`PARTITIONS_LABEL`]),
/// its other instances adopted.
pub fn create(
    run: ApplyRun<'_>,
    request: &CreatePartition,
    options: &ApplyOptions,
) -> Result<PartitionOutcome, ApplyError> {
    let device = request.device;
    one_partition(run, device, options, |base, seen| {
        let card = &seen.card;
        let (profile_id, vf) = match &request.piece {
            Piece::Instance(profile) => {
                let found = card
                    .resolve(profile)
                    .ok_or_else(|| PartitionRefusal::NoProfile {
                        device,
                        profile: profile.clone(),
                    })?;
                vgpu::beside_a_vgpu(seen, found.id)?;
                (found.id, None)
            }
            Piece::Vgpu(name) => {
                let (profile_id, vf) = vgpu::chosen_vf(base, seen, name)?;
                (profile_id, Some(vf))
            }
        };
        let at = Placed::new(profile_id, chosen(card, profile_id, request.placement)?);
        let mut placed = base.placed.clone();
        placed.push(at);
        let mut owners = base.owners.clone();
        owners.push(Owned::new(at, request.owner.clone()));
        let vgpu = vf.is_some();
        let vfs = match vf {
            Some(vf) => {
                let mut vfs = base.vfs.clone().unwrap_or_default();
                vfs.types.push(vf);
                Some(vfs)
            }
            None => base.vfs.clone(),
        };
        Ok(Decided {
            want: want_of(placed, base.unnamed),
            owners,
            at,
            destroyed: None,
            release: None,
            vfs,
            vgpu,
        })
    })
}

/// The placement a new instance of `profile_id` takes on `card`: `asked`, when the rules let
/// it; else the lowest that fits now.
fn chosen(
    card: &Card,
    profile_id: u32,
    asked: Option<Placement>,
) -> Result<Placement, PartitionRefusal> {
    let device = card.device;
    let room = |refused: RoomRefusal| PartitionRefusal::Room { device, refused };
    let geometry = Geometry::of(card);
    if let Some(placement) = asked {
        let change = Change::Create {
            profile_id,
            placement,
        };
        return match remaining(&geometry, &[change]) {
            Ok(_) => Ok(placement),
            Err(ChangeRefused { refusal, .. }) => Err(room(refusal)),
        };
    }
    let rooms = remaining(&geometry, &[]).map_err(|refused| room(refused.refusal))?;
    let fits = rooms
        .iter()
        .find(|room| room.profile.id == profile_id)
        .and_then(|room| room.fits.as_ref())
        .ok_or(room(RoomRefusal::BoundsUnknown { profile_id }))?;
    fits.placements
        .iter()
        .min_by_key(|placement| placement.start)
        .copied()
        .ok_or(PartitionRefusal::NoRoom {
            device,
            profile: card.named(profile_id),
        })
}

/// Destroys one partition through the executor, as its owner asks (`request.by`), writing only
/// that partition: the vGPU on its GPU instance cleared first (its VF stays), then its compute
/// instances, then the GPU instance; the card's other instances stay. The GPU's declaration
/// loses it and its owner.
pub fn destroy(
    run: ApplyRun<'_>,
    request: &DestroyPartition,
    options: &ApplyOptions,
) -> Result<PartitionOutcome, ApplyError> {
    let device = request.device;
    one_partition(run, device, options, |base, seen| {
        let (at, id) = target(&seen.card, base, &request.which)?;
        let owner = base.owners.iter().find(|owned| owned.at == at);
        if let Some(owned) = owner.filter(|owned| request.by.as_ref() != Some(&owned.owner)) {
            return Err(PartitionRefusal::InUse {
                device,
                gpu_instance_id: id,
                owner: owned.owner.clone(),
            });
        }
        if !base.placed.contains(&at) {
            return Err(PartitionRefusal::Inferred {
                device,
                gpu_instance_id: id,
            });
        }
        let (vfs, vgpu) = vgpu::without_the_one_on(base, seen, id)?;
        let placed: Vec<Placed> = base.placed.iter().copied().filter(|p| *p != at).collect();
        Ok(Decided {
            want: want_of(placed, base.unnamed).removing(vec![at]),
            owners: base.owners.iter().filter(|o| o.at != at).cloned().collect(),
            at,
            destroyed: Some(id),
            release: owner.map(|owned| owned.owner.clone()),
            vfs,
            vgpu,
        })
    })
}

/// The instance a destroy names on `card`: by its ID, or the one its owner has.
fn target(card: &Card, base: &Base, which: &Which) -> Result<(Placed, u32), PartitionRefusal> {
    let device = card.device;
    let placed_of = |id: u32| {
        card.instances_now()
            .iter()
            .find(|instance| instance.id == id)
            .map(|instance| Placed::new(instance.profile_id, instance.placement))
    };
    match which {
        Which::Slot(id) => placed_of(*id)
            .map(|at| (at, *id))
            .ok_or(PartitionRefusal::NoInstance {
                device,
                gpu_instance_id: *id,
            }),
        Which::OwnedBy(owner) => {
            let ids: Vec<(Placed, u32)> = card
                .instances_now()
                .iter()
                .map(|instance| {
                    (
                        Placed::new(instance.profile_id, instance.placement),
                        instance.id,
                    )
                })
                .filter(|(at, _)| {
                    base.owners
                        .iter()
                        .any(|owned| owned.at == *at && owned.owner == *owner)
                })
                .collect();
            match ids.as_slice() {
                [one] => Ok(*one),
                [] => Err(PartitionRefusal::NoneOwned {
                    device,
                    owner: owner.clone(),
                }),
                several => Err(PartitionRefusal::SeveralOwned {
                    device,
                    owner: owner.clone(),
                    gpu_instance_ids: several.iter().map(|(_, id)| *id).collect(),
                }),
            }
        }
    }
}
