//! What one GPU should be ([`Want`]): MIG on or off, its GPU instances by profile
//! ([`ProfileKey`]) with their counts, once an apply chose them where each sits ([`Placed`]),
//! and what becomes of the instances it does not name ([`Unnamed`]). A layout document
//! resolves into one per GPU (`mig-layout`), and a declaration keeps one per GPU
//! ([`crate::Declaration`]).

use gpu_partition_types::Placement;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A GPU instance profile as a layout names it; stored as the layout writes it: a name is a
/// string, an ID an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProfileKey {
    /// By the name the card's catalogue gives it (`1g.10gb`, `1g.10gb+me`).
    Name(String),
    /// By its profile ID (what NVML's instance calls take).
    Id(u32),
}

impl fmt::Display for ProfileKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Id(id) => write!(f, "profile {id}"),
        }
    }
}

impl Serialize for ProfileKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Name(name) => serializer.serialize_str(name),
            Self::Id(id) => serializer.serialize_u32(*id),
        }
    }
}

impl<'de> Deserialize<'de> for ProfileKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Key;
        impl serde::de::Visitor<'_> for Key {
            type Value = ProfileKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a profile name (a string) or a profile ID (an integer)")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<ProfileKey, E> {
                Ok(ProfileKey::Name(name.to_owned()))
            }
            fn visit_u64<E: serde::de::Error>(self, id: u64) -> Result<ProfileKey, E> {
                u32::try_from(id)
                    .map(ProfileKey::Id)
                    .map_err(|_| E::custom(format!("profile ID {id} is out of range")))
            }
        }
        deserializer.deserialize_any(Key)
    }
}

/// A GPU instance where a layout leaves it: its profile and its placement (each with the one
/// compute instance that fills it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Placed {
    /// The profile's ID.
    pub profile_id: u32,
    /// Where, in memory slices.
    pub placement: Placement,
}

impl Placed {
    /// A GPU instance of `profile_id` at `placement`.
    pub fn new(profile_id: u32, placement: Placement) -> Self {
        Self {
            profile_id,
            placement,
        }
    }

    fn key(&self) -> (u32, u32, u32) {
        (self.profile_id, self.placement.start, self.placement.size)
    }
}

impl PartialOrd for Placed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Placed {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

gpu_partition_types::token_enum! {
    /// What becomes of a card's GPU instances that a layout does not name: mig-parted makes the
    /// card match (they are destroyed); xen-api's partitioning design adopts a division it did
    /// not create ("marked inferred, never destroyed").
    #[derive(Default)]
    pub enum Unnamed: "unnamed instances" {
        /// Destroyed: the card is made to match the layout (the default).
        #[default]
        Match = "match",
        /// Kept and reported as adopted, never destroyed; the layout's instances are placed
        /// around them (a layout they leave no room for is impossible).
        Adopt = "adopt",
    }
}

/// What one GPU should be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Want {
    /// MIG on or off.
    pub enabled: bool,
    /// The GPU instances by profile, with their counts (each with one compute instance filling
    /// it); empty with MIG off.
    pub instances: Vec<(ProfileKey, u32)>,
    /// Where each GPU instance sits, when that is decided (a declaration after its apply chose
    /// the placements): the planner then places them there and nowhere else, and a card whose
    /// instances sit elsewhere differs. `None`: anywhere they fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placements: Option<Vec<Placed>>,
    /// What becomes of the card's instances the layout does not name.
    #[serde(default)]
    pub unnamed: Unnamed,
    /// Instances to destroy whatever `unnamed` says (one partition destroyed while the others
    /// the layout does not name are adopted); empty for a layout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove: Vec<Placed>,
}

impl Want {
    /// MIG on with these instances, anywhere they fit.
    pub fn enabled(instances: Vec<(ProfileKey, u32)>) -> Self {
        Self {
            enabled: true,
            instances,
            placements: None,
            unnamed: Unnamed::Match,
            remove: Vec::new(),
        }
    }

    /// MIG off, no instance: what leaving partitioning wants of every GPU.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            instances: Vec::new(),
            placements: None,
            unnamed: Unnamed::Match,
            remove: Vec::new(),
        }
    }

    /// The same, with its GPU instances at exactly these placements.
    pub fn placed(mut self, placements: Vec<Placed>) -> Self {
        let mut placements = placements;
        placements.sort();
        self.placements = Some(placements);
        self
    }

    /// The same, destroying the instances at `remove` whatever `unnamed` says.
    pub fn removing(mut self, remove: Vec<Placed>) -> Self {
        self.remove = remove;
        self
    }

    /// The same, with the card's instances it does not name treated as `unnamed` says.
    pub fn unnamed(mut self, unnamed: Unnamed) -> Self {
        self.unnamed = unnamed;
        self
    }
}
