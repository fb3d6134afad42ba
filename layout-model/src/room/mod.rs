//! What still fits on a GPU in MIG mode: for each profile of its catalogue, every placement a
//! GPU instance of it could take now — or after a given set of creates and destroys — and how
//! many more fit at once. Pure, from the card's reply ([`Geometry::of`] a [`Card`]); a pool's
//! placement planner asks it of many GPUs, so it is cheap (no search: one pass per profile).
//!
//! NVIDIA's rules (MIG user guide, "Supported MIG Profiles" and "Placement"; NVML's
//! `nvmlDeviceGetGpuInstancePossiblePlacements` and `nvmlDeviceCreateGpuInstanceWithPlacement`):
//!
//! - a GPU instance of a profile sits at one of the profile's possible placements, and shares
//!   no memory slice with another instance;
//! - a card holds at most the profile's instance count of it;
//! - its instances together hold no more video decoders, JPEG decoders and optical-flow
//!   accelerators than the card has, which are what its whole-card profile holds (so a card
//!   holds one `+me` instance).
//!
//! What fits is not derivable from the catalogue alone: one large instance constrains every
//! profile beside it. Where what bounds a profile did not read — its placements; for a profile
//! that holds media engines, its engines, the whole-card profile's or an instance's — it has
//! no [`Fits`]: unknown, which a planner treats as nothing.

mod vgpu;

use crate::card::{At, Card, MediaEngines, ProfileRef};
use gpu_partition_types::Placement;

pub use vgpu::{Backing, PlacedVgpu, VgpuGeometry, VgpuKind, VgpuRoom, vgpu_remaining};

/// A profile as the rules of what fits use it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shape {
    /// The profile, as a difference names it.
    pub profile: ProfileRef,
    /// Its possible placements, when they read.
    pub placements: Option<Vec<Placement>>,
    /// How many instances of it the card holds at most, when it read.
    pub instance_count: Option<u32>,
    /// The media engines one instance holds, when they read.
    pub engines: Option<MediaEngines>,
}

impl Shape {
    /// Profile `profile`, at `placements`, at most `instance_count` of it, each holding
    /// `engines`.
    pub fn new(
        profile: ProfileRef,
        placements: Option<Vec<Placement>>,
        instance_count: Option<u32>,
        engines: Option<MediaEngines>,
    ) -> Self {
        Self {
            profile,
            placements,
            instance_count,
            engines,
        }
    }
}

/// A GPU instance, as the rules of what fits use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Held {
    /// Its ID.
    pub id: u32,
    /// Its profile's ID.
    pub profile_id: u32,
    /// Where it is.
    pub placement: Placement,
}

impl Held {
    /// Instance `id` of profile `profile_id` at `placement`.
    pub fn new(id: u32, profile_id: u32, placement: Placement) -> Self {
        Self {
            id,
            profile_id,
            placement,
        }
    }
}

/// What the rules of what fits read of a card: its mode, its catalogue and its instances.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Geometry {
    /// MIG on now: a card in MIG mode holds GPU instances, another none.
    pub mig_on: bool,
    /// The catalogue.
    pub shapes: Vec<Shape>,
    /// The GPU instances.
    pub instances: Vec<Held>,
}

impl Geometry {
    /// A card in MIG mode (`mig_on`) of catalogue `shapes`, holding `instances`.
    pub fn new(mig_on: bool, shapes: Vec<Shape>, instances: Vec<Held>) -> Self {
        Self {
            mig_on,
            shapes,
            instances,
        }
    }

    /// What `card` holds, as the rules of what fits read it.
    pub fn of(card: &Card) -> Self {
        Self {
            mig_on: card.current,
            shapes: card
                .profiles
                .iter()
                .map(|profile| Shape {
                    profile: profile.named(),
                    placements: profile.placements.clone(),
                    instance_count: profile.instance_count,
                    engines: profile.engines,
                })
                .collect(),
            instances: card
                .instances
                .iter()
                .map(|instance| Held::new(instance.id, instance.profile_id, instance.placement))
                .collect(),
        }
    }

    fn shape(&self, profile_id: u32) -> Option<&Shape> {
        self.shapes
            .iter()
            .find(|shape| shape.profile.id == profile_id)
    }

    /// The card's media engines: its whole-card profile's, the one profile with a single
    /// placement over every slot; `None` where none read.
    fn card_engines(&self) -> Option<MediaEngines> {
        let end = |placement: &Placement| placement.start.saturating_add(placement.size);
        let slots = self
            .shapes
            .iter()
            .flat_map(|shape| shape.placements.iter().flatten())
            .map(end)
            .max()?;
        self.shapes
            .iter()
            .find(|shape| {
                matches!(shape.placements.as_deref(), Some([only]) if only.start == 0 && only.size == slots)
            })
            .and_then(|whole| whole.engines)
    }

    /// The engines the instances hold now; `None` where an instance's did not read.
    fn engines_held(&self) -> Option<MediaEngines> {
        self.instances
            .iter()
            .try_fold(MediaEngines::default(), |sum, held| {
                let one = self.shape(held.profile_id)?.engines?;
                Some(MediaEngines::new(
                    sum.decoders.saturating_add(one.decoders),
                    sum.jpegs.saturating_add(one.jpegs),
                    sum.ofas.saturating_add(one.ofas),
                ))
            })
    }

    /// The media engines no instance holds: the card's less the instances'; `None` where
    /// either did not read. Counted once for every profile of an answer.
    fn engines_left(&self) -> Option<MediaEngines> {
        let card = self.card_engines()?;
        let held = self.engines_held()?;
        Some(MediaEngines::new(
            card.decoders.saturating_sub(held.decoders),
            card.jpegs.saturating_sub(held.jpegs),
            card.ofas.saturating_sub(held.ofas),
        ))
    }

    /// How many more instances of `shape` its instance count leaves room for.
    fn more_by_count(&self, shape: &Shape) -> u32 {
        let Some(most) = shape.instance_count else {
            return u32::MAX;
        };
        let held = self
            .instances
            .iter()
            .filter(|held| held.profile_id == shape.profile.id)
            .count();
        most.saturating_sub(u32::try_from(held).unwrap_or(u32::MAX))
    }

    /// The placements of `placements` no instance overlaps.
    fn free(&self, placements: &[Placement]) -> Vec<Placement> {
        placements
            .iter()
            .copied()
            .filter(|at| {
                !self
                    .instances
                    .iter()
                    .any(|held| overlaps(*at, held.placement))
            })
            .collect()
    }

    /// What fits of `shape` now, the card's engines left being `left` ([`Geometry::engines_left`]);
    /// `None` where its placements, or what bounds it, did not read.
    fn fits(&self, shape: &Shape, left: Option<MediaEngines>) -> Option<Fits> {
        let placements = shape.placements.as_deref()?;
        let by_rules = self.more_by_count(shape).min(more_by_engines(shape, left)?);
        if !self.mig_on || by_rules == 0 {
            return Some(Fits::default());
        }
        let free = self.free(placements);
        let more = by_rules.min(most_disjoint(&free));
        Some(Fits {
            placements: free,
            more,
        })
    }

    /// `change` made, if the rules let it be.
    fn change(&mut self, change: &Change) -> Result<(), RoomRefusal> {
        match *change {
            Change::Create {
                profile_id,
                placement,
            } => {
                if !self.mig_on {
                    return Err(RoomRefusal::MigOff);
                }
                let shape = self
                    .shape(profile_id)
                    .ok_or(RoomRefusal::NoProfile { profile_id })?;
                let fits = self
                    .fits(shape, self.engines_left())
                    .ok_or(RoomRefusal::BoundsUnknown { profile_id })?;
                if !shape
                    .placements
                    .as_deref()
                    .is_some_and(|all| all.contains(&placement))
                {
                    return Err(RoomRefusal::NotAPlacement {
                        profile_id,
                        placement,
                    });
                }
                if fits.more == 0 || !fits.placements.contains(&placement) {
                    return Err(RoomRefusal::DoesNotFit {
                        profile_id,
                        placement,
                    });
                }
                let id = (1..)
                    .find(|id| self.instances.iter().all(|held| held.id != *id))
                    .unwrap_or(u32::MAX);
                self.instances.push(Held::new(id, profile_id, placement));
                Ok(())
            }
            Change::Destroy { gpu_instance_id } => {
                let before = self.instances.len();
                self.instances.retain(|held| held.id != gpu_instance_id);
                if self.instances.len() == before {
                    return Err(RoomRefusal::NoInstance { gpu_instance_id });
                }
                Ok(())
            }
        }
    }
}

/// How many more instances of `shape` the media engines `left` leave room for; `None` where
/// that cannot be told (its engines, or those left, did not read). A profile that holds no
/// engine is not bounded by them.
fn more_by_engines(shape: &Shape, left: Option<MediaEngines>) -> Option<u32> {
    let one = shape.engines?;
    if one == MediaEngines::default() {
        return Some(u32::MAX);
    }
    let left = left?;
    [
        (left.decoders, one.decoders),
        (left.jpegs, one.jpegs),
        (left.ofas, one.ofas),
    ]
    .into_iter()
    .map(|(left, one)| left.checked_div(one).unwrap_or(u32::MAX))
    .min()
}

/// Whether two placements share a memory slice.
fn overlaps(one: Placement, other: Placement) -> bool {
    one.start < other.start.saturating_add(other.size)
        && other.start < one.start.saturating_add(one.size)
}

/// How many of `free` can be taken together: the most placements no two of which overlap
/// (earliest end first, which is the most for intervals).
fn most_disjoint(free: &[Placement]) -> u32 {
    let mut by_end: Vec<Placement> = free.to_vec();
    by_end.sort_by_key(|at| at.start.saturating_add(at.size));
    let mut taken = 0u32;
    let mut end = 0u32;
    let mut first = true;
    for at in by_end {
        if first || at.start >= end {
            taken = taken.saturating_add(1);
            end = at.start.saturating_add(at.size);
            first = false;
        }
    }
    taken
}

/// A create or a destroy, for what would fit after it. An instance a `Create` makes has no ID
/// a caller knows (the driver gives it when it is made): a later `Destroy` names one the card
/// holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// A GPU instance of `profile_id` created at `placement`.
    Create {
        /// The profile.
        profile_id: u32,
        /// Where.
        placement: Placement,
    },
    /// GPU instance `gpu_instance_id` destroyed.
    Destroy {
        /// The instance.
        gpu_instance_id: u32,
    },
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Change::Create {
                profile_id,
                placement,
            } => write!(f, "create profile {profile_id} at {}", At(*placement)),
            Change::Destroy { gpu_instance_id } => {
                write!(f, "destroy GPU instance {gpu_instance_id}")
            }
        }
    }
}

/// What fits of one profile.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Fits {
    /// Every placement one more instance could take, by the profile's order.
    pub placements: Vec<Placement>,
    /// How many more fit at once.
    pub more: u32,
}

/// What fits of one profile of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Room {
    /// The profile.
    pub profile: ProfileRef,
    /// What fits; `None` where its placements did not read (unknown: plan nothing on it).
    pub fits: Option<Fits>,
}

/// Why a change asked of [`remaining`] cannot be made (each a fact; the message is derived).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoomRefusal {
    /// The card is not in MIG mode: it holds no GPU instance.
    #[error("the card is not in MIG mode")]
    MigOff,
    /// No profile with this ID in the card's catalogue.
    #[error("the card has no profile {profile_id}")]
    NoProfile {
        /// The profile asked.
        profile_id: u32,
    },
    /// What bounds the profile did not read: its placements or, for a profile that holds media
    /// engines, its engines, the whole-card profile's or an instance's.
    #[error("what bounds profile {profile_id} did not read")]
    BoundsUnknown {
        /// The profile.
        profile_id: u32,
    },
    /// Not one of the profile's possible placements.
    #[error("{} is not a placement of profile {profile_id}", At(*placement))]
    NotAPlacement {
        /// The profile.
        profile_id: u32,
        /// The placement asked.
        placement: Placement,
    },
    /// The placement is taken, or the profile's count or the card's media engines are used up.
    #[error("profile {profile_id} does not fit at {}", At(*placement))]
    DoesNotFit {
        /// The profile.
        profile_id: u32,
        /// The placement asked.
        placement: Placement,
    },
    /// No GPU instance with this ID.
    #[error("the card has no GPU instance {gpu_instance_id}")]
    NoInstance {
        /// The instance asked.
        gpu_instance_id: u32,
    },
    /// The GPU instance holds vGPUs: NVML refuses to destroy it (`IN_USE`). Only
    /// [`vgpu_remaining`], which knows the vGPUs, gives it.
    #[error("GPU instance {gpu_instance_id} holds {vgpus} vGPU(s)")]
    HoldsVgpus {
        /// The instance asked.
        gpu_instance_id: u32,
        /// How many vGPUs it holds.
        vgpus: u32,
    },
}

/// A change [`remaining`] was asked to make first, refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("change {index} ({change}) cannot be made: {refusal}")]
#[non_exhaustive]
pub struct ChangeRefused {
    /// Its position among the changes.
    pub index: usize,
    /// The change.
    pub change: Change,
    /// Why.
    #[source]
    pub refusal: RoomRefusal,
}

/// `geometry` once `changes` are made, in order; `check` refuses a change first where it has
/// a reason of its own.
fn changed(
    geometry: &Geometry,
    changes: &[Change],
    check: impl Fn(&Change) -> Option<RoomRefusal>,
) -> Result<Geometry, ChangeRefused> {
    let mut changed = geometry.clone();
    for (index, change) in changes.iter().enumerate() {
        let refused = |refusal| ChangeRefused {
            index,
            change: *change,
            refusal,
        };
        if let Some(refusal) = check(change) {
            return Err(refused(refusal));
        }
        changed.change(change).map_err(refused)?;
    }
    Ok(changed)
}

/// What still fits on the card of `geometry` once `changes` are made, in order: one [`Room`]
/// per profile of its catalogue. Refused, naming the change, where a change cannot be made.
pub fn remaining(geometry: &Geometry, changes: &[Change]) -> Result<Vec<Room>, ChangeRefused> {
    let card = changed(geometry, changes, |_| None)?;
    let left = card.engines_left();
    Ok(card
        .shapes
        .iter()
        .map(|shape| Room {
            profile: shape.profile.clone(),
            fits: card.fits(shape, left),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: u32, size: u32) -> Placement {
        Placement::new(start, size)
    }

    #[test]
    fn the_most_disjoint_placements_are_counted_earliest_end_first() {
        assert_eq!(most_disjoint(&[at(0, 4), at(0, 2), at(2, 2), at(4, 4)]), 3);
        assert_eq!(most_disjoint(&[]), 0);
        assert_eq!(most_disjoint(&[at(0, 8), at(0, 8)]), 1);
    }

    #[test]
    fn placements_that_touch_do_not_overlap() {
        assert!(!overlaps(at(0, 4), at(4, 4)));
        assert!(overlaps(at(0, 4), at(3, 2)));
    }
}
