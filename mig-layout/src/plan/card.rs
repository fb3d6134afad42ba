//! What the planner needs of a card's read reply: its mode, its catalogue (profiles by ID, with
//! their names, counts and placements) and its GPU instances, each read whole or refused.

use super::{Impossible, ImpossibleKind};
use crate::document::ProfileKey;
use gpu_partition_types::{
    Bdf, Case, ComputeInstance, GpuInstance, Lenient, MigState, Placement, Profile, Reply,
};

/// NVML's compute instance profile IDs by slice count (`NVML_COMPUTE_INSTANCE_PROFILE_*`):
/// the one that fills a GPU instance of that many slices.
const COMPUTE_PROFILE_BY_SLICES: [(u32, u32); 7] =
    [(1, 0), (2, 1), (3, 2), (4, 3), (6, 6), (7, 4), (8, 5)];

/// The compute instance profile that fills a GPU instance of `slices` compute slices.
pub fn filling_compute_profile(slices: u32) -> Option<u32> {
    COMPUTE_PROFILE_BY_SLICES
        .iter()
        .find(|(known, _)| *known == slices)
        .map(|(_, id)| *id)
}

/// A profile of the catalogue, as the planner uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardProfile {
    /// Its ID.
    pub id: u32,
    /// Its name, when it read; else `profile ID`.
    pub name: String,
    /// Its compute slices (the signature's, else the `Ng` of its name).
    pub slices: Option<u32>,
    /// How many instances of it the whole card holds, when the signature read.
    pub instance_count: Option<u32>,
    /// Its possible placements, when they read.
    pub placements: Option<Vec<Placement>>,
}

impl CardProfile {
    fn of(profile: &Profile) -> Self {
        let name = profile.name.read().cloned();
        let signature = profile.signature.read();
        let from_name = name.as_deref().and_then(|name| {
            let (count, _) = name.split_once('g')?;
            count.parse::<u32>().ok()
        });
        Self {
            id: profile.id,
            name: name.unwrap_or_else(|| format!("profile {}", profile.id)),
            slices: signature.map(|s| s.slice_count).or(from_name),
            instance_count: signature.map(|s| s.instance_count),
            placements: profile.placements.read().cloned(),
        }
    }

    /// The compute instance profile that fills one of its GPU instances, and its placement.
    pub fn filling(&self) -> Option<(u32, Placement)> {
        let slices = self.slices?;
        Some((filling_compute_profile(slices)?, Placement::new(0, slices)))
    }
}

/// A GPU instance of the card, as the planner uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardInstance {
    /// Its ID.
    pub id: u32,
    /// Its profile's ID.
    pub profile_id: u32,
    /// Where it is.
    pub placement: Placement,
    /// Its compute instances.
    pub compute: Vec<ComputeInstance>,
}

/// The card as the planner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The card.
    pub device: Bdf,
    /// Whether it can be partitioned at all.
    pub capable: bool,
    /// MIG on now.
    pub current: bool,
    /// The mode after the next reset, when it differs from now.
    pub pending: Option<bool>,
    /// The catalogue.
    pub profiles: Vec<CardProfile>,
    /// The GPU instances.
    pub instances: Vec<CardInstance>,
}

fn on(state: MigState) -> bool {
    state == MigState::Enabled
}

fn unreadable(device: Bdf, what: &str) -> Impossible {
    Impossible::new(
        device,
        None,
        ImpossibleKind::Unreadable,
        format!("{device}: {what} did not read, so nothing can be planned over it"),
    )
}

impl Card {
    /// The card of `reply`; refused when a member the plan depends on did not read.
    pub fn of(reply: &Reply) -> Result<Card, Impossible> {
        let device = reply.device;
        match reply.case {
            Case::Unreadable => return Err(unreadable(device, "the card")),
            Case::NotApplicable => {
                return Ok(Card {
                    device,
                    capable: false,
                    current: false,
                    pending: None,
                    profiles: Vec::new(),
                    instances: Vec::new(),
                });
            }
            Case::Partitions | Case::NoneCarved => {}
        }
        let current = on(reply.mode.current);
        let pending = reply
            .mode
            .pending
            .into_option()
            .map(on)
            .filter(|pending| *pending != current);
        let profiles = match &reply.profiles {
            Lenient::Read(profiles) => profiles
                .iter()
                .filter_map(Lenient::read)
                .map(CardProfile::of)
                .collect(),
            Lenient::Lost(_) => return Err(unreadable(device, "the profile catalogue")),
        };
        let instances = match &reply.gpu_instances {
            Lenient::Read(instances) => instances
                .iter()
                .map(|instance| match instance {
                    Lenient::Read(instance) => instance_of(device, instance),
                    Lenient::Lost(_) => Err(unreadable(device, "a GPU instance")),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Lenient::Lost(_) => return Err(unreadable(device, "the GPU instances")),
        };
        Ok(Card {
            device,
            capable: reply.mode.capable,
            current,
            pending,
            profiles,
            instances,
        })
    }

    /// The profile with this ID.
    pub fn profile(&self, id: u32) -> Option<&CardProfile> {
        self.profiles.iter().find(|profile| profile.id == id)
    }

    /// A profile's name for people.
    pub fn name(&self, id: u32) -> String {
        self.profile(id)
            .map_or_else(|| format!("profile {id}"), |profile| profile.name.clone())
    }

    /// The profile a key names.
    pub fn resolve(&self, key: &ProfileKey) -> Option<&CardProfile> {
        self.profiles.iter().find(|profile| match key {
            ProfileKey::Id(id) => profile.id == *id,
            ProfileKey::Name(name) => profile.name == *name,
        })
    }

    /// Whether a GPU instance has exactly the one compute instance that fills it.
    pub fn complete(&self, instance: &CardInstance) -> bool {
        let filling = self
            .profile(instance.profile_id)
            .and_then(CardProfile::filling);
        match (filling, instance.compute.as_slice()) {
            (Some((profile, placement)), [only]) => {
                only.profile_id == profile && only.placement == placement
            }
            _ => false,
        }
    }
}

fn instance_of(device: Bdf, instance: &GpuInstance) -> Result<CardInstance, Impossible> {
    let what = |member: &str| format!("the {member} of GPU instance {}", instance.id);
    let placement = *instance
        .placement
        .read()
        .ok_or_else(|| unreadable(device, &what("placement")))?;
    let compute = instance
        .compute_instances
        .read()
        .cloned()
        .ok_or_else(|| unreadable(device, &what("compute instances")))?;
    Ok(CardInstance {
        id: instance.id,
        profile_id: instance.profile_id,
        placement,
        compute,
    })
}
