//! How a card differs from what it should be: the mode, the GPU instances by profile, each
//! GPU instance's compute instance, and the placements, compared apart (a GPU instance without
//! its compute instance is counted as a GPU instance and named as missing its compute
//! instance). `assert` reports every difference; the executor's read-back also compares the
//! placements with the ones it chose.

use crate::plan::{Card, CardInstance, Instance};
use crate::select::Want;
use gpu_partition_types::{Bdf, Reply};
use serde::Serialize;
use std::collections::BTreeMap;
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
        /// The card did not read whole.
        Unreadable = "unreadable",
    }
}

/// One way a card differs from its layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Difference {
    /// The card.
    #[serde(serialize_with = "crate::report::bdf")]
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

/// Every way the card of `reply` differs from `want`; empty when it is as wanted.
pub fn differences(reply: &Reply, want: &Want) -> Vec<Difference> {
    let device = reply.device;
    let say = |kind, message: String| Difference {
        device,
        kind,
        message,
    };
    let card = match Card::of(reply) {
        Ok(card) => card,
        Err(impossible) => return vec![say(DifferenceKind::Unreadable, impossible.message)],
    };
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
    let instances: &[CardInstance] = if card.current { &card.instances } else { &[] };
    // Counts by profile: wanted (resolved) against found.
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
    let mut have: BTreeMap<u32, u32> = BTreeMap::new();
    for instance in instances {
        *have.entry(instance.profile_id).or_default() += 1;
    }
    let profiles: std::collections::BTreeSet<u32> =
        wanted.keys().chain(have.keys()).copied().collect();
    for id in profiles {
        let (want_n, have_n) = (
            wanted.get(&id).copied().unwrap_or_default(),
            have.get(&id).copied().unwrap_or_default(),
        );
        if want_n != have_n {
            found.push(say(
                DifferenceKind::GpuInstances,
                format!(
                    "{} GPU instance(s) of {}, the layout wants {want_n}",
                    have_n,
                    card.name(id)
                ),
            ));
        }
    }
    for instance in instances {
        if !card.complete(instance) {
            found.push(say(
                DifferenceKind::ComputeInstances,
                compute_text(&card, instance),
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
                        "GPU instance {} ({}) sits at {}+{}, none of its profile's placements",
                        instance.id,
                        card.name(instance.profile_id),
                        instance.placement.start,
                        instance.placement.size
                    ),
                ));
            }
        }
    }
    found
}

fn compute_text(card: &Card, instance: &CardInstance) -> String {
    let filling = card
        .profile(instance.profile_id)
        .and_then(crate::plan::CardProfile::filling);
    let wanted = filling.map_or_else(
        || "its filling compute instance".to_owned(),
        |(profile, placement)| {
            format!(
                "one compute instance of profile {profile} at {}+{}",
                placement.start, placement.size
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
                        "{} (profile {} at {}+{})",
                        ci.id, ci.profile_id, ci.placement.start, ci.placement.size
                    )
                })
                .collect();
            format!("compute instance(s) {}", each.join(", "))
        }
    };
    format!(
        "GPU instance {} ({}) has {has}; the layout wants {wanted}",
        instance.id,
        card.name(instance.profile_id)
    )
}

/// The read-back after an apply: every difference from `want`, and every GPU instance that is
/// not where the plan put one (or a planned one that is not there).
pub fn read_back(reply: &Reply, want: &Want, target: &[Instance]) -> Vec<Difference> {
    let mut found = differences(reply, want);
    let Ok(card) = Card::of(reply) else {
        return found;
    };
    let mut expected: Vec<Instance> = target.to_vec();
    let mut extra = Vec::new();
    if card.current {
        for instance in &card.instances {
            let here = Instance {
                profile_id: instance.profile_id,
                placement: instance.placement,
            };
            match expected.iter().position(|wanted| *wanted == here) {
                Some(at) => {
                    expected.swap_remove(at);
                }
                None => extra.push(instance),
            }
        }
    }
    for instance in extra {
        found.push(Difference {
            device: card.device,
            kind: DifferenceKind::Placements,
            message: format!(
                "GPU instance {} ({}) is at {}+{}, where the plan put none",
                instance.id,
                card.name(instance.profile_id),
                instance.placement.start,
                instance.placement.size
            ),
        });
    }
    for missing in expected {
        found.push(Difference {
            device: card.device,
            kind: DifferenceKind::Placements,
            message: format!(
                "no GPU instance of {} at {}+{}, where the plan put one",
                card.name(missing.profile_id),
                missing.placement.start,
                missing.placement.size
            ),
        });
    }
    found
}
