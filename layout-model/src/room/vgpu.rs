//! How many more vGPUs of each type fit on a card: the vGPU manager's rules, as NVIDIA's open
//! kernel modules give them (`kvgpumgrCheckVgpuTypeCreatable` and
//! `_kvgpumgrCheckVgpuTypeSupported`, `src/nvidia/src/kernel/virtualization/kernel_vgpu_mgr.c`)
//! and nvml.h's note on `nvmlDeviceGetCreatableVgpus`:
//!
//! - MIG off: the time-sliced types; with no vGPU on the card, each up to its maximum; once
//!   vGPUs exist, only their type, up to its maximum less those there (one type at a time).
//! - MIG on: the MIG-backed types; each on the GPU instances of its profile that hold only vGPUs
//!   of it, up to its "max instances per GPU instance" on each.
//! - Heterogeneous mode on with MIG off: the driver then decides by placement inside the
//!   card, which is not modelled: no answer.
//!
//! A vGPU counts wherever it is: an active one (the reply's `vgpus`) or a type written to a
//! VF's `current_vgpu_type`; the caller gives them all ([`VgpuGeometry::placed`]).

use super::{Change, ChangeRefused, Geometry, RoomRefusal, changed};
use gpu_partition_types::{Lenient, Nullable, Reply, VgpuTypeId};

/// What a vGPU type sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backing {
    /// The whole card, time-sliced.
    TimeSliced,
    /// A GPU instance of this profile.
    GpuInstance {
        /// The profile's ID.
        profile_id: u32,
    },
}

/// A vGPU type of the card's catalogue, as the rules of what fits use it (`None`: did not
/// read, and nothing is judged of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VgpuKind {
    /// Its ID.
    pub id: VgpuTypeId,
    /// What it sits on.
    pub backing: Option<Backing>,
    /// How many vGPUs of it the card holds.
    pub max_instances: Option<u32>,
    /// How many one GPU instance holds (a MIG-backed type's).
    pub per_gpu_instance: Option<u32>,
}

impl VgpuKind {
    /// Type `id` on `backing`, at most `max_instances` on the card and `per_gpu_instance` on
    /// one GPU instance.
    pub fn new(
        id: VgpuTypeId,
        backing: Option<Backing>,
        max_instances: Option<u32>,
        per_gpu_instance: Option<u32>,
    ) -> Self {
        Self {
            id,
            backing,
            max_instances,
            per_gpu_instance,
        }
    }
}

/// A vGPU on the card: its type, and the GPU instance it sits on (`None`: time-sliced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlacedVgpu {
    /// Its type.
    pub type_id: VgpuTypeId,
    /// Its GPU instance.
    pub gpu_instance_id: Option<u32>,
}

impl PlacedVgpu {
    /// A vGPU of `type_id` on `gpu_instance_id`.
    pub fn new(type_id: VgpuTypeId, gpu_instance_id: Option<u32>) -> Self {
        Self {
            type_id,
            gpu_instance_id,
        }
    }
}

/// What the rules of how many vGPUs fit read of a card: its catalogue, its vGPUs and its mode.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct VgpuGeometry {
    /// The catalogue.
    pub kinds: Vec<VgpuKind>,
    /// Every vGPU on the card: active ones and those written to its VFs; `None` where they
    /// did not all read (then no count is told).
    pub placed: Option<Vec<PlacedVgpu>>,
    /// Heterogeneous mode (`None`: the card has no such setting, or it did not read).
    pub heterogeneous: Option<bool>,
}

impl VgpuGeometry {
    /// Catalogue `kinds`, holding `placed` (`None`: not all read), in heterogeneous mode or
    /// not.
    pub fn new(
        kinds: Vec<VgpuKind>,
        placed: Option<Vec<PlacedVgpu>>,
        heterogeneous: Option<bool>,
    ) -> Self {
        Self {
            kinds,
            placed,
            heterogeneous,
        }
    }

    /// The catalogue, the active vGPUs and the mode of `reply` (a type that did not read is
    /// left out; a vGPU that did not read leaves [`VgpuGeometry::placed`] unknown; add the VFs'
    /// vGPUs to it).
    pub fn of(reply: &Reply) -> Self {
        let kinds = each_read(&reply.vgpu_types)
            .filter_map(|kind| {
                let backing = kind
                    .gpu_instance_profile_id
                    .read()
                    .map(|profile| match profile {
                        Nullable::Value(profile_id) => Backing::GpuInstance {
                            profile_id: *profile_id,
                        },
                        Nullable::Null => Backing::TimeSliced,
                    });
                let per_gpu_instance = match kind.max_instances_per_gpu_instance.read() {
                    Some(Nullable::Value(most)) => Some(*most),
                    _ => None,
                };
                Some(VgpuKind::new(
                    VgpuTypeId::new(kind.id)?,
                    backing,
                    kind.max_instances.read().copied(),
                    per_gpu_instance,
                ))
            })
            .collect();
        let placed = reply.vgpus.read().and_then(|vgpus| {
            vgpus
                .iter()
                .map(|vgpu| {
                    let vgpu = vgpu.read()?;
                    let type_id = VgpuTypeId::new(*vgpu.type_id.read()?)?;
                    Some(PlacedVgpu::new(type_id, vgpu.gpu_instance_id.into_option()))
                })
                .collect::<Option<Vec<_>>>()
        });
        let heterogeneous = reply
            .vgpu_mode
            .read()
            .and_then(|mode| mode.heterogeneous.into_option());
        Self::new(kinds, placed, heterogeneous)
    }
}

/// The members of a lenient list that read (none where the list did not).
fn each_read<T>(list: &Lenient<Vec<Lenient<T>>>) -> impl Iterator<Item = &T> {
    list.read().into_iter().flatten().filter_map(Lenient::read)
}

/// How many more vGPUs of one type fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VgpuRoom {
    /// The type.
    pub type_id: VgpuTypeId,
    /// How many more; `None` where the rules cannot tell (a member that did not read, or
    /// heterogeneous mode with MIG off).
    pub more: Option<u32>,
}

/// How many more vGPUs of each type of `vgpus`' catalogue fit on the card of `geometry` once
/// `changes` are made (a GPU instance that holds vGPUs is not destroyed: NVML's `IN_USE`).
pub fn vgpu_remaining(
    geometry: &Geometry,
    vgpus: &VgpuGeometry,
    changes: &[Change],
) -> Result<Vec<VgpuRoom>, ChangeRefused> {
    let on = |gpu_instance_id: u32| {
        vgpus
            .placed
            .iter()
            .flatten()
            .filter(|vgpu| vgpu.gpu_instance_id == Some(gpu_instance_id))
            .count()
    };
    let card = changed(geometry, changes, |change| match *change {
        Change::Destroy { gpu_instance_id } if on(gpu_instance_id) > 0 => {
            Some(RoomRefusal::HoldsVgpus {
                gpu_instance_id,
                vgpus: u32::try_from(on(gpu_instance_id)).unwrap_or(u32::MAX),
            })
        }
        _ => None,
    })?;
    Ok(vgpus
        .kinds
        .iter()
        .map(|kind| VgpuRoom {
            type_id: kind.id,
            more: more(&card, vgpus, kind),
        })
        .collect())
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// How many more of `kind` fit on `card`.
fn more(card: &Geometry, vgpus: &VgpuGeometry, kind: &VgpuKind) -> Option<u32> {
    let placed = vgpus.placed.as_deref()?;
    match kind.backing? {
        Backing::TimeSliced if card.mig_on => Some(0),
        Backing::TimeSliced => {
            if vgpus.heterogeneous == Some(true) {
                return None;
            }
            let most = kind.max_instances?;
            match placed.first() {
                None => Some(most),
                Some(running) if running.type_id == kind.id => {
                    Some(most.saturating_sub(count(placed.len())))
                }
                Some(_) => Some(0),
            }
        }
        Backing::GpuInstance { .. } if !card.mig_on => Some(0),
        Backing::GpuInstance { profile_id } => {
            let most = kind.per_gpu_instance?;
            let room = card
                .instances
                .iter()
                .filter(|held| held.profile_id == profile_id)
                .map(|held| {
                    let on: Vec<VgpuTypeId> = placed
                        .iter()
                        .filter(|vgpu| vgpu.gpu_instance_id == Some(held.id))
                        .map(|vgpu| vgpu.type_id)
                        .collect();
                    if on.iter().all(|type_id| *type_id == kind.id) {
                        most.saturating_sub(count(on.len()))
                    } else {
                        0
                    }
                })
                .fold(0u32, u32::saturating_add);
            Some(room)
        }
    }
}
