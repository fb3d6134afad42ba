//! [`Card`]: a card's read reply as the layout rules see it — its mode, its catalogue (profiles
//! by ID, with their names, counts and placements) and its GPU instances, each read whole or
//! refused. The planner (`mig-layout`), an assert, the executor's read-back and the drift a sync
//! finds all judge a card through it, so one reading of a reply serves them all.

use crate::want::ProfileKey;
use gpu_partition_types::{
    Bdf, Case, ComputeInstance, GpuInstance, Lenient, MigState, Placement, Profile, Reply,
};
use serde::{Deserialize, Serialize};
use std::fmt;

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

/// A member of a reply that the layout rules depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "member", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReplyMember {
    /// The whole card (its reply's case is `unreadable`).
    Card,
    /// The profile catalogue.
    Catalogue,
    /// The list of GPU instances.
    GpuInstances,
    /// One entry of that list (its ID did not read either).
    GpuInstance,
    /// A GPU instance's placement.
    Placement {
        /// The GPU instance.
        gpu_instance_id: u32,
    },
    /// A GPU instance's compute instances.
    ComputeInstances {
        /// The GPU instance.
        gpu_instance_id: u32,
    },
}

impl fmt::Display for ReplyMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Card => f.write_str("the card"),
            Self::Catalogue => f.write_str("the profile catalogue"),
            Self::GpuInstances => f.write_str("the GPU instances"),
            Self::GpuInstance => f.write_str("a GPU instance"),
            Self::Placement { gpu_instance_id } => {
                write!(f, "the placement of GPU instance {gpu_instance_id}")
            }
            Self::ComputeInstances { gpu_instance_id } => {
                write!(f, "the compute instances of GPU instance {gpu_instance_id}")
            }
        }
    }
}

/// A member of a reply that the layout rules depend on did not read, so nothing can be judged
/// over it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{device}: {what} did not read, so nothing can be planned over it")]
#[non_exhaustive]
pub struct CardUnreadable {
    /// The card.
    pub device: Bdf,
    /// What did not read.
    pub what: ReplyMember,
}

/// A profile of the catalogue, as the layout rules use it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CardProfile {
    /// Its ID.
    pub id: u32,
    /// Its name, when it read.
    pub name: Option<String>,
    /// Its compute slices (the signature's, else the `Ng` of its name).
    pub slices: Option<u32>,
    /// How many instances of it the whole card holds, when the signature read.
    pub instance_count: Option<u32>,
    /// Its possible placements, when they read.
    pub placements: Option<Vec<Placement>>,
    /// The media engines one of its instances holds, when the signature read.
    pub engines: Option<MediaEngines>,
}

/// The media engines a GPU instance holds: a card has as many as its whole-card profile, and
/// its instances together hold no more (NVIDIA's MIG user guide: the `+me` profiles take the
/// card's one JPEG decoder and OFA, so a card holds a single `+me` instance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MediaEngines {
    /// Video decoders (NVDECs).
    pub decoders: u32,
    /// JPEG decoders.
    pub jpegs: u32,
    /// Optical-flow accelerators.
    pub ofas: u32,
}

impl MediaEngines {
    /// `decoders` NVDECs, `jpegs` JPEG decoders and `ofas` OFAs.
    pub fn new(decoders: u32, jpegs: u32, ofas: u32) -> Self {
        Self {
            decoders,
            jpegs,
            ofas,
        }
    }
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
            name,
            slices: signature.map(|s| s.slice_count).or(from_name),
            instance_count: signature.map(|s| s.instance_count),
            placements: profile.placements.read().cloned(),
            engines: signature
                .map(|s| MediaEngines::new(s.decoder_count, s.jpeg_count, s.ofa_count)),
        }
    }

    /// Its name for people: the name, else `profile ID`.
    pub fn label(&self) -> String {
        self.named().to_string()
    }

    /// It as a difference names it: its ID and, when it read, its name.
    pub fn named(&self) -> ProfileRef {
        ProfileRef::new(self.id, self.name.clone())
    }

    /// The compute instance profile that fills one of its GPU instances, and its placement.
    pub fn filling(&self) -> Option<(u32, Placement)> {
        let slices = self.slices?;
        Some((filling_compute_profile(slices)?, Placement::new(0, slices)))
    }
}

/// A GPU instance of the card, as the layout rules use it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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

/// The card as the layout rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Card {
    /// The card.
    pub device: Bdf,
    /// Whether it can be partitioned at all.
    pub capable: bool,
    /// MIG on now.
    pub current: bool,
    /// The mode after the next reset, when it differs from now.
    pub pending: Option<bool>,
    /// The catalogue: the profiles that read.
    pub profiles: Vec<CardProfile>,
    /// The positions in the reply's catalogue of the profiles that did not read (each lost
    /// whole: it cannot be planned with, and a layout naming it finds no such profile).
    pub unread_profiles: Vec<usize>,
    /// The GPU instances.
    pub instances: Vec<CardInstance>,
}

fn on(state: MigState) -> bool {
    state == MigState::Enabled
}

impl Card {
    /// The card of `reply`; refused when a member the rules depend on did not read.
    pub fn of(reply: &Reply) -> Result<Card, CardUnreadable> {
        let device = reply.device;
        let unreadable = |what: ReplyMember| CardUnreadable { device, what };
        match reply.case {
            Case::Unreadable => return Err(unreadable(ReplyMember::Card)),
            Case::NotApplicable => {
                return Ok(Card {
                    device,
                    capable: false,
                    current: false,
                    pending: None,
                    profiles: Vec::new(),
                    unread_profiles: Vec::new(),
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
        let (profiles, unread_profiles) = match &reply.profiles {
            Lenient::Read(profiles) => {
                let mut read = Vec::with_capacity(profiles.len());
                let mut unread = Vec::new();
                for (at, profile) in profiles.iter().enumerate() {
                    match profile {
                        Lenient::Read(profile) => read.push(CardProfile::of(profile)),
                        Lenient::Lost(_) => unread.push(at),
                    }
                }
                (read, unread)
            }
            Lenient::Lost(_) => return Err(unreadable(ReplyMember::Catalogue)),
        };
        let instances = match &reply.gpu_instances {
            Lenient::Read(instances) => instances
                .iter()
                .map(|instance| match instance {
                    Lenient::Read(instance) => instance_of(device, instance),
                    Lenient::Lost(_) => Err(unreadable(ReplyMember::GpuInstance)),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Lenient::Lost(_) => return Err(unreadable(ReplyMember::GpuInstances)),
        };
        Ok(Card {
            device,
            capable: reply.mode.capable,
            current,
            pending,
            profiles,
            unread_profiles,
            instances,
        })
    }

    /// The profile with this ID.
    pub fn profile(&self, id: u32) -> Option<&CardProfile> {
        self.profiles.iter().find(|profile| profile.id == id)
    }

    /// A profile's name for people: its name, else `profile ID`.
    pub fn label(&self, id: u32) -> String {
        self.named(id).to_string()
    }

    /// A profile as a difference names it: its ID, and its name where the catalogue gives it.
    pub fn named(&self, id: u32) -> ProfileRef {
        self.profile(id)
            .map_or_else(|| ProfileRef::new(id, None), CardProfile::named)
    }

    /// The profile a key names.
    pub fn resolve(&self, key: &ProfileKey) -> Option<&CardProfile> {
        self.profiles.iter().find(|profile| match key {
            ProfileKey::Id(id) => profile.id == *id,
            ProfileKey::Name(name) => profile.name.as_ref() == Some(name),
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

    /// The GPU instances as they are now (none with MIG off, whatever the reply lists).
    pub fn instances_now(&self) -> &[CardInstance] {
        if self.current { &self.instances } else { &[] }
    }
}

fn instance_of(device: Bdf, instance: &GpuInstance) -> Result<CardInstance, CardUnreadable> {
    let gpu_instance_id = instance.id;
    let what = |what: ReplyMember| CardUnreadable { device, what };
    let placement = *instance
        .placement
        .read()
        .ok_or_else(|| what(ReplyMember::Placement { gpu_instance_id }))?;
    let compute = instance
        .compute_instances
        .read()
        .cloned()
        .ok_or_else(|| what(ReplyMember::ComputeInstances { gpu_instance_id }))?;
    Ok(CardInstance {
        id: instance.id,
        profile_id: instance.profile_id,
        placement,
        compute,
    })
}

/// A GPU instance profile as a difference names it: its ID and, when the card's catalogue gave
/// it, its name (`id` and `name` in `--json`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProfileRef {
    /// The profile's ID.
    pub id: u32,
    /// Its name (`1g.5gb`), when the catalogue gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ProfileRef {
    /// The profile `id`, named `name` where known.
    pub fn new(id: u32, name: Option<String>) -> Self {
        Self { id, name }
    }
}

impl fmt::Display for ProfileRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => f.write_str(name),
            None => write!(f, "profile {}", self.id),
        }
    }
}

/// Where a GPU instance is, for people: `START+SIZE` in memory slices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At(pub Placement);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.0.start, self.0.size)
    }
}
