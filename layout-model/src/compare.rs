//! How a card differs from what it should be: the one set of rules behind an assert, the
//! executor's read-back and the drift a sync finds. The mode, the GPU instances by profile, each
//! GPU instance's compute instance, and — where they are decided — the placements are compared
//! apart (a GPU instance without its compute instance is counted as a GPU instance and named as
//! missing its compute instance); a declaration also compares the board itself
//! ([`crate::DeclaredGpu::drift`]). Instances the layout does not name are differences when the
//! card is to match, and adopted — kept, listed, never a difference — when it adopts them
//! ([`crate::Unnamed`]).

use crate::card::{Card, CardInstance, ProfileRef};
use crate::difference::{ComputeFound, Difference, Fact, Filling};
use crate::want::{Placed, Unnamed, Want};
use gpu_partition_types::{Bdf, Placement, Reply};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A GPU instance the layout does not name, kept because the caller adopts such instances.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Adopted {
    /// The card.
    pub device: Bdf,
    /// The instance's ID.
    pub gpu_instance_id: u32,
    /// Its profile.
    pub profile: ProfileRef,
    /// Where it sits.
    pub placement: Placement,
}

impl Adopted {
    /// GPU instance `gpu_instance_id` of `profile` at `placement` on `device`, adopted.
    pub fn new(
        device: Bdf,
        gpu_instance_id: u32,
        profile: ProfileRef,
        placement: Placement,
    ) -> Self {
        Self {
            device,
            gpu_instance_id,
            profile,
            placement,
        }
    }
}

impl std::fmt::Display for Adopted {
    /// `GPU instance 3 (1g.10gb) at 4+1` (the card is the reader's context).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GPU instance {} ({}) at {}+{}",
            self.gpu_instance_id, self.profile, self.placement.start, self.placement.size
        )
    }
}

/// How a card compares with what it should be: every difference, and the instances adopted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Comparison {
    /// Every way it differs; empty when it is as wanted.
    pub differences: Vec<Difference>,
    /// The instances it has that the layout does not name, adopted ([`Unnamed::Adopt`]).
    pub adopted: Vec<Adopted>,
}

/// Every way the card of `reply` differs from `want`; empty when it is as wanted. With
/// `want.placements` decided, a GPU instance must sit exactly where one is placed.
pub fn differences(reply: &Reply, want: &Want) -> Vec<Difference> {
    match Card::of(reply) {
        Ok(card) => compare(&card, want).differences,
        Err(unreadable) => vec![Difference::new(
            reply.device,
            Fact::Unreadable {
                what: unreadable.what,
            },
        )],
    }
}

/// How `card` compares with `want` (what [`differences`] does once the reply is read).
pub fn compare(card: &Card, want: &Want) -> Comparison {
    let device = card.device;
    let say = |fact| Difference::new(device, fact);
    let mut found = Comparison::default();
    if !card.capable {
        if want.enabled {
            found.differences.push(say(Fact::Mode {
                capable: false,
                current: false,
                pending: None,
                wanted: true,
            }));
        }
        return found;
    }
    if card.current != want.enabled || card.pending.is_some() {
        found.differences.push(say(Fact::Mode {
            capable: true,
            current: card.current,
            pending: card.pending,
            wanted: want.enabled,
        }));
    }
    // The profiles the layout names, resolved in the card's catalogue.
    let mut wanted: BTreeMap<u32, u32> = BTreeMap::new();
    if want.enabled {
        for (key, count) in &want.instances {
            match card.resolve(key) {
                Some(profile) => *wanted.entry(profile.id).or_default() += count,
                None if *count > 0 => found.differences.push(say(Fact::Profile {
                    profile: key.clone(),
                })),
                None => {}
            }
        }
    }
    let (named, adopted) = match (want.enabled, &want.placements) {
        // Where the instances go is decided: each one missing, extra or moved is named.
        (true, Some(placed)) => placement_differences(card, placed, want.unnamed, &mut found),
        _ => count_differences(card, &wanted, want.unnamed, &mut found),
    };
    found.adopted = adopted
        .into_iter()
        .map(|instance| {
            Adopted::new(
                device,
                instance.id,
                card.named(instance.profile_id),
                instance.placement,
            )
        })
        .collect();
    // An adopted instance is the caller's, as it is: nothing more of it is compared.
    for instance in named {
        if !card.complete(instance) {
            found.differences.push(say(compute_fact(card, instance)));
        }
        let possible = card
            .profile(instance.profile_id)
            .and_then(|profile| profile.placements.as_ref());
        if let Some(possible) = possible {
            if !possible.contains(&instance.placement) {
                found.differences.push(say(Fact::InstanceMisplaced {
                    gpu_instance_id: instance.id,
                    profile: card.named(instance.profile_id),
                    placement: instance.placement,
                }));
            }
        }
    }
    found
}

/// Each profile whose count of GPU instances is not the one wanted. Adopting, a profile with
/// more than wanted (or not wanted at all) keeps the excess as adopted: the last ones by
/// placement. Answers the instances compared further, and those adopted.
fn count_differences<'c>(
    card: &'c Card,
    wanted: &BTreeMap<u32, u32>,
    unnamed: Unnamed,
    found: &mut Comparison,
) -> (Vec<&'c CardInstance>, Vec<&'c CardInstance>) {
    let mut have: BTreeMap<u32, Vec<&CardInstance>> = BTreeMap::new();
    for instance in card.instances_now() {
        have.entry(instance.profile_id).or_default().push(instance);
    }
    for instances in have.values_mut() {
        instances.sort_by_key(|instance| (instance.placement.start, instance.placement.size));
    }
    let profiles: BTreeSet<u32> = wanted.keys().chain(have.keys()).copied().collect();
    let mut named = Vec::new();
    let mut adopted = Vec::new();
    for id in profiles {
        let want_n = wanted.get(&id).copied().unwrap_or_default();
        let instances = have.remove(&id).unwrap_or_default();
        let have_n = u32::try_from(instances.len()).unwrap_or(u32::MAX);
        let keep = usize::try_from(want_n).unwrap_or(usize::MAX);
        match unnamed {
            Unnamed::Adopt if have_n >= want_n => {
                let (mine, theirs) = instances.split_at(keep.min(instances.len()));
                named.extend_from_slice(mine);
                adopted.extend_from_slice(theirs);
                continue;
            }
            Unnamed::Adopt | Unnamed::Match => named.extend(instances),
        }
        if want_n != have_n {
            found.differences.push(Difference::new(
                card.device,
                Fact::InstanceCount {
                    profile: card.named(id),
                    found: have_n,
                    wanted: want_n,
                },
            ));
        }
    }
    (named, adopted)
}

/// Against decided placements: a GPU instance of a profile at another placement than the one
/// left free for it is moved; one placed and not there is missing, one there and not placed is
/// extra, each named with its placement. Adopting, one there and not placed is adopted (never
/// moved), and a placement it holds is missing. Answers the instances compared further, and
/// those adopted.
fn placement_differences<'c>(
    card: &'c Card,
    placed: &[Placed],
    unnamed: Unnamed,
    found: &mut Comparison,
) -> (Vec<&'c CardInstance>, Vec<&'c CardInstance>) {
    let mut missing: Vec<Placed> = placed.to_vec();
    let mut named = Vec::new();
    let mut extra: Vec<&CardInstance> = Vec::new();
    for instance in card.instances_now() {
        let here = Placed::new(instance.profile_id, instance.placement);
        match missing.iter().position(|wanted| *wanted == here) {
            Some(at) => {
                missing.remove(at);
                named.push(instance);
            }
            None => extra.push(instance),
        }
    }
    missing.sort();
    let say = |fact| Difference::new(card.device, fact);
    let mut adopted = Vec::new();
    for instance in extra {
        if unnamed == Unnamed::Adopt {
            adopted.push(instance);
            continue;
        }
        named.push(instance);
        let moved_from = missing
            .iter()
            .position(|wanted| wanted.profile_id == instance.profile_id);
        match moved_from {
            Some(at) => {
                let wanted = missing.remove(at);
                found.differences.push(say(Fact::InstanceMoved {
                    gpu_instance_id: instance.id,
                    profile: card.named(instance.profile_id),
                    found: instance.placement,
                    wanted: wanted.placement,
                }));
            }
            None => found.differences.push(say(Fact::InstanceExtra {
                gpu_instance_id: instance.id,
                profile: card.named(instance.profile_id),
                placement: instance.placement,
            })),
        }
    }
    found.differences.extend(missing.into_iter().map(|wanted| {
        say(Fact::InstanceMissing {
            profile: card.named(wanted.profile_id),
            placement: wanted.placement,
        })
    }));
    (named, adopted)
}

fn compute_fact(card: &Card, instance: &CardInstance) -> Fact {
    let wanted = card
        .profile(instance.profile_id)
        .and_then(crate::card::CardProfile::filling)
        .map(|(profile_id, placement)| Filling::new(profile_id, placement));
    Fact::ComputeInstances {
        gpu_instance_id: instance.id,
        profile: card.named(instance.profile_id),
        found: instance
            .compute
            .iter()
            .map(|ci| ComputeFound::new(ci.id, ci.profile_id, ci.placement))
            .collect(),
        wanted,
    }
}
