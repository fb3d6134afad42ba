//! What a layout asks of a card: the wanted profiles resolved in its catalogue, and for each
//! the instances to place with their candidate placements (the input of [`fit`](super::fit)).

use super::fit::{self, Candidate, Demand};
use super::impossible::{Impossible, ImpossibleKind, slices_unknown};
use gpu_partition_types::Placement;
use layout_model::{Card, CardInstance, CardProfile, Want};

/// The wanted profiles with their counts (counts of 0 left out), each resolved in the card's
/// catalogue.
pub(super) fn resolve<'c>(
    card: &'c Card,
    want: &Want,
) -> Result<Vec<(&'c CardProfile, u32)>, Impossible> {
    let device = card.device;
    let mut wanted: Vec<(&CardProfile, u32)> = Vec::new();
    for (key, count) in &want.instances {
        if *count == 0 {
            continue;
        }
        let Some(profile) = card.resolve(key) else {
            let known: Vec<String> = card.profiles.iter().map(CardProfile::label).collect();
            return Err(Impossible::new(
                device,
                Some(key.to_string()),
                ImpossibleKind::UnknownProfile,
                format!(
                    "{device} has no profile {key}; its catalogue has: {}",
                    if known.is_empty() {
                        "nothing".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        if wanted.iter().any(|(known, _)| known.id == profile.id) {
            return Err(Impossible::new(
                device,
                Some(profile.label()),
                ImpossibleKind::NamedTwice,
                format!(
                    "{device}: {} (profile {}) is named twice in the layout",
                    profile.label(),
                    profile.id
                ),
            ));
        }
        if let Some(most) = profile.instance_count {
            if *count > most {
                return Err(Impossible::new(
                    device,
                    Some(profile.label()),
                    ImpossibleKind::TooMany,
                    format!(
                        "{device}: {count} × {} asked, and the card holds at most {most}",
                        profile.label()
                    ),
                ));
            }
        }
        wanted.push((profile, *count));
    }
    Ok(wanted)
}

/// The instances of `profile` to place: its possible placements and the card's own instances
/// of it, each placement once, by start; or, where the placements are decided (`decided`, a
/// declaration's), exactly those, each of which must be one of the card's.
pub(super) fn demand(
    card: &Card,
    profile: &CardProfile,
    count: u32,
    existing: &[CardInstance],
    decided: Option<Vec<Placement>>,
) -> Result<Demand, Impossible> {
    let device = card.device;
    profile
        .filling()
        .ok_or_else(|| slices_unknown(card, profile))?;
    let own: Vec<&CardInstance> = existing
        .iter()
        .filter(|instance| instance.profile_id == profile.id)
        .collect();
    if let Some(decided) = decided {
        let offered = |placement: &Placement| {
            profile
                .placements
                .as_ref()
                .is_none_or(|possible| possible.contains(placement))
                || own.iter().any(|instance| instance.placement == *placement)
        };
        if let Some(off) = decided.iter().find(|placement| !offered(placement)) {
            return Err(Impossible::new(
                device,
                Some(profile.label()),
                ImpossibleKind::NoFit,
                format!(
                    "{device}: the layout places {} at {}+{}, which is none of the card's \
                     placements for it",
                    profile.label(),
                    off.start,
                    off.size
                ),
            ));
        }
        let count = u32::try_from(decided.len()).unwrap_or(u32::MAX);
        return finish_demand(card, profile, count, decided, &own);
    }
    let Some(possible) = profile.placements.as_ref() else {
        if own.is_empty() {
            return Err(Impossible::new(
                device,
                Some(profile.label()),
                ImpossibleKind::ProfileIncomplete,
                format!(
                    "{device}: the card did not give the placements of {}, so none can be \
                     chosen",
                    profile.label()
                ),
            ));
        }
        return finish_demand(
            card,
            profile,
            count,
            own.iter().map(|i| i.placement).collect(),
            &own,
        );
    };
    let mut placements: Vec<Placement> = possible.clone();
    placements.extend(own.iter().map(|instance| instance.placement));
    finish_demand(card, profile, count, placements, &own)
}

fn finish_demand(
    card: &Card,
    profile: &CardProfile,
    count: u32,
    mut placements: Vec<Placement>,
    own: &[&CardInstance],
) -> Result<Demand, Impossible> {
    let device = card.device;
    placements.retain(|placement| fit::representable(*placement));
    placements.sort_by_key(|placement| (placement.start, placement.size));
    placements.dedup();
    if usize::try_from(count).unwrap_or(usize::MAX) > placements.len() {
        return Err(Impossible::new(
            device,
            Some(profile.label()),
            ImpossibleKind::TooMany,
            format!(
                "{device}: {count} × {} asked, and the card has {} placements for it",
                profile.label(),
                placements.len()
            ),
        ));
    }
    let candidates = placements
        .into_iter()
        .map(|placement| Candidate {
            placement,
            existing: own
                .iter()
                .find(|instance| instance.placement == placement)
                .map(|instance| (instance.id, card.complete(instance))),
        })
        .collect();
    Ok(Demand { count, candidates })
}
