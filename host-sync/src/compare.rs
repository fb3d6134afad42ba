//! How a card differs from what it should be: the one set of rules behind `partition assert`,
//! the executor's read-back and the drift a sync finds. The mode, the GPU instances by
//! profile, each GPU instance's compute instance, and — where they are decided — the
//! placements are compared apart (a GPU instance without its compute instance is counted as a
//! GPU instance and named as missing its compute instance); a declaration also compares the
//! board itself ([`crate::Declaration`]).

use crate::card::{At, Card, CardInstance};
use crate::want::{Placed, Want};
use gpu_partition_types::{Bdf, Reply};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

gpu_partition_types::token_enum! {
    /// What a difference is about.
    pub enum DifferenceKind: "difference" {
        /// The MIG mode (now, or pending).
        Mode = "mode",
        /// How many GPU instances of a profile.
        GpuInstances = "gpu_instances",
        /// A GPU instance's compute instances.
        ComputeInstances = "compute_instances",
        /// Where a GPU instance sits.
        Placements = "placements",
        /// A profile of the layout the card does not have.
        Profile = "profile",
        /// Another board in the slot than the one declared (or none at all).
        Card = "card",
        /// The card did not read whole.
        Unreadable = "unreadable",
    }
}

/// One way a card differs from what it should be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Difference {
    /// The card.
    pub device: Bdf,
    /// What about.
    pub kind: DifferenceKind,
    /// What differs, for people.
    pub message: String,
}

impl Difference {
    /// A difference of `kind` on `device`.
    pub fn new(device: Bdf, kind: DifferenceKind, message: impl Into<String>) -> Self {
        Self {
            device,
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.device, self.kind, self.message)
    }
}

fn mode_text(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

/// Every way the card of `reply` differs from `want`; empty when it is as wanted. With
/// `want.placements` decided, a GPU instance must sit exactly where one is placed.
pub fn differences(reply: &Reply, want: &Want) -> Vec<Difference> {
    match Card::of(reply) {
        Ok(card) => card_differences(&card, want),
        Err(unreadable) => vec![Difference::new(
            reply.device,
            DifferenceKind::Unreadable,
            unreadable.to_string(),
        )],
    }
}

/// [`differences`] over a card already read.
pub fn card_differences(card: &Card, want: &Want) -> Vec<Difference> {
    let device = card.device;
    let say = |kind, message: String| Difference::new(device, kind, message);
    let mut found = Vec::new();
    if !card.capable {
        if want.enabled {
            found.push(say(
                DifferenceKind::Mode,
                "the card has no MIG mode; the layout wants MIG on".to_owned(),
            ));
        }
        return found;
    }
    if card.current != want.enabled || card.pending.is_some() {
        let now = match card.pending {
            Some(pending) => format!(
                "MIG is {} now, {} after the next reset",
                mode_text(card.current),
                mode_text(pending)
            ),
            None => format!("MIG is {}", mode_text(card.current)),
        };
        found.push(say(
            DifferenceKind::Mode,
            format!("{now}; the layout wants it {}", mode_text(want.enabled)),
        ));
    }
    let instances = card.instances_now();
    // The profiles the layout names, resolved in the card's catalogue.
    let mut wanted: BTreeMap<u32, u32> = BTreeMap::new();
    if want.enabled {
        for (key, count) in &want.instances {
            match card.resolve(key) {
                Some(profile) => *wanted.entry(profile.id).or_default() += count,
                None if *count > 0 => found.push(say(
                    DifferenceKind::Profile,
                    format!("the card has no profile {key}"),
                )),
                None => {}
            }
        }
    }
    match (want.enabled, &want.placements) {
        // Where the instances go is decided: each one missing, extra or moved is named.
        (true, Some(placed)) => found.extend(placement_differences(card, placed)),
        _ => found.extend(count_differences(card, &wanted)),
    }
    for instance in instances {
        if !card.complete(instance) {
            found.push(say(
                DifferenceKind::ComputeInstances,
                compute_text(card, instance),
            ));
        }
        let possible = card
            .profile(instance.profile_id)
            .and_then(|profile| profile.placements.as_ref());
        if let Some(possible) = possible {
            if !possible.contains(&instance.placement) {
                found.push(say(
                    DifferenceKind::Placements,
                    format!(
                        "GPU instance {} ({}) sits at {}, none of its profile's placements",
                        instance.id,
                        card.label(instance.profile_id),
                        At(instance.placement)
                    ),
                ));
            }
        }
    }
    found
}

/// Each profile whose count of GPU instances is not the one wanted.
fn count_differences(card: &Card, wanted: &BTreeMap<u32, u32>) -> Vec<Difference> {
    let mut have: BTreeMap<u32, u32> = BTreeMap::new();
    for instance in card.instances_now() {
        *have.entry(instance.profile_id).or_default() += 1;
    }
    let profiles: BTreeSet<u32> = wanted.keys().chain(have.keys()).copied().collect();
    profiles
        .into_iter()
        .filter_map(|id| {
            let want_n = wanted.get(&id).copied().unwrap_or_default();
            let have_n = have.get(&id).copied().unwrap_or_default();
            (want_n != have_n).then(|| {
                Difference::new(
                    card.device,
                    DifferenceKind::GpuInstances,
                    format!(
                        "{have_n} GPU instance(s) of {}, the layout wants {want_n}",
                        card.label(id)
                    ),
                )
            })
        })
        .collect()
}

/// Against decided placements: a GPU instance of a profile at another placement than the one
/// left free for it is moved (`placements`); one placed and not there is missing, one there and
/// not placed is extra (`gpu_instances`), each named with its placement.
fn placement_differences(card: &Card, placed: &[Placed]) -> Vec<Difference> {
    let mut missing: Vec<Placed> = placed.to_vec();
    let mut extra: Vec<&CardInstance> = Vec::new();
    for instance in card.instances_now() {
        let here = Placed::new(instance.profile_id, instance.placement);
        match missing.iter().position(|wanted| *wanted == here) {
            Some(at) => {
                missing.remove(at);
            }
            None => extra.push(instance),
        }
    }
    missing.sort();
    let say = |kind, message: String| Difference::new(card.device, kind, message);
    let mut found = Vec::new();
    for instance in extra {
        let moved_from = missing
            .iter()
            .position(|wanted| wanted.profile_id == instance.profile_id);
        match moved_from {
            Some(at) => {
                let wanted = missing.remove(at);
                found.push(say(
                    DifferenceKind::Placements,
                    format!(
                        "GPU instance {} ({}) sits at {}; the layout places it at {}",
                        instance.id,
                        card.label(instance.profile_id),
                        At(instance.placement),
                        At(wanted.placement)
                    ),
                ));
            }
            None => found.push(say(
                DifferenceKind::GpuInstances,
                format!(
                    "GPU instance {} ({}) at {} is not in the layout",
                    instance.id,
                    card.label(instance.profile_id),
                    At(instance.placement)
                ),
            )),
        }
    }
    found.extend(missing.into_iter().map(|wanted| {
        say(
            DifferenceKind::GpuInstances,
            format!(
                "no GPU instance of {} at {}, where the layout places one",
                card.label(wanted.profile_id),
                At(wanted.placement)
            ),
        )
    }));
    found
}

fn compute_text(card: &Card, instance: &CardInstance) -> String {
    let filling = card
        .profile(instance.profile_id)
        .and_then(crate::card::CardProfile::filling);
    let wanted = filling.map_or_else(
        || "its filling compute instance".to_owned(),
        |(profile, placement)| {
            format!(
                "one compute instance of profile {profile} at {}",
                At(placement)
            )
        },
    );
    let has = match instance.compute.as_slice() {
        [] => "no compute instance".to_owned(),
        list => {
            let each: Vec<String> = list
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
        }
    };
    format!(
        "GPU instance {} ({}) has {has}; the layout wants {wanted}",
        instance.id,
        card.label(instance.profile_id)
    )
}
