//! The plan where the card's instances the layout does not name are adopted
//! ([`Unnamed::Adopt`](layout_model::Unnamed::Adopt)): the layout's instances placed around
//! them, never destroying one (but those it names to remove, [`Want::remove`]).

use super::card_plan::{CardPlan, Create, Fill};
use super::fit::{self, Candidate, Demand};
use super::impossible::{Impossible, ImpossibleKind, adopted_in_the_way, slices_unknown};
use gpu_partition_types::{Placement, Step};
use layout_model::{Card, CardInstance, CardProfile, Placed, Want};

/// The plan when the card's instances the layout does not name are adopted: for each profile,
/// the card's instances of it where the layout places them (or, with the placements not
/// decided, the first ones by placement, up to the count) are the layout's; every other
/// instance is adopted — kept, never destroyed —, and the layout's missing instances are placed
/// in the slices no instance holds. A decided placement an adopted instance covers is impossible
/// (`adopted_in_the_way`, naming it).
pub(super) fn plan_adopting(
    card: &Card,
    want: &Want,
    wanted: &[(&CardProfile, u32)],
    mut plan: CardPlan,
) -> Result<CardPlan, Impossible> {
    let device = card.device;
    let existing = card.instances_now();
    let mut named: Vec<&CardInstance> = Vec::new();
    let mut demands = Vec::new();
    let mut profiles = Vec::new();
    for (profile, count) in wanted {
        let mut own: Vec<&CardInstance> = existing
            .iter()
            .filter(|instance| instance.profile_id == profile.id)
            .collect();
        own.sort_by_key(|instance| (instance.placement.start, instance.placement.size));
        let decided = want.placements.as_ref().map(|placed| {
            placed
                .iter()
                .filter(|placed| placed.profile_id == profile.id)
                .map(|placed| placed.placement)
                .collect::<Vec<_>>()
        });
        let (mine, places): (Vec<&CardInstance>, Vec<Placement>) = match decided {
            Some(decided) => {
                let mine: Vec<&CardInstance> = own
                    .iter()
                    .copied()
                    .filter(|instance| decided.contains(&instance.placement))
                    .collect();
                let places = decided
                    .into_iter()
                    .filter(|placement| !mine.iter().any(|i| i.placement == *placement))
                    .collect();
                (mine, places)
            }
            None => {
                let keep = usize::try_from(*count).unwrap_or(usize::MAX).min(own.len());
                let mine: Vec<&CardInstance> = own.iter().copied().take(keep).collect();
                let places = profile.placements.clone().unwrap_or_default();
                (mine, places)
            }
        };
        let left = count.saturating_sub(u32::try_from(mine.len()).unwrap_or(u32::MAX));
        named.extend(mine);
        if left == 0 {
            continue;
        }
        let free: Vec<Placement> = places
            .iter()
            .copied()
            .filter(|placement| {
                fit::representable(*placement)
                    && !existing
                        .iter()
                        .any(|instance| fit::overlaps(instance.placement, *placement))
            })
            .collect();
        if want.placements.is_some() && free.len() < places.len() {
            let blocked = places.iter().find_map(|placement| {
                existing
                    .iter()
                    .find(|instance| fit::overlaps(instance.placement, *placement))
            });
            if let Some(instance) = blocked {
                return Err(adopted_in_the_way(
                    card,
                    instance,
                    &format!("the layout places {} where it sits", profile.label()),
                ));
            }
        }
        demands.push(Demand {
            count: left,
            candidates: free
                .into_iter()
                .map(|placement| Candidate {
                    placement,
                    existing: None,
                })
                .collect(),
        });
        profiles.push(*profile);
    }
    let Some((chosen, _)) = fit::fit(&demands) else {
        let asked: Vec<String> = profiles
            .iter()
            .zip(&demands)
            .map(|(profile, demand)| format!("{} × {}", demand.count, profile.label()))
            .collect();
        return Err(Impossible::new(
            device,
            profiles.first().map(|profile| profile.label()),
            ImpossibleKind::AdoptedInTheWay,
            format!(
                "{device}: {} do not fit in the slices the adopted instances leave free",
                asked.join(", ")
            ),
        ));
    };
    for ((profile, demand), picks) in profiles.iter().zip(&demands).zip(&chosen) {
        let (compute_profile_id, _) = profile
            .filling()
            .ok_or_else(|| slices_unknown(card, profile))?;
        for pick in picks {
            let Some(candidate) = demand.candidates.get(*pick) else {
                continue;
            };
            plan.target
                .push(Placed::new(profile.id, candidate.placement));
            plan.create.push(Create {
                profile_id: profile.id,
                profile: profile.label(),
                placement: candidate.placement,
                compute_profile_id,
            });
        }
    }
    // What the layout removes goes, compute instances first; every other instance it does not
    // name is adopted.
    let mut removed = Vec::new();
    for instance in existing {
        if !named.iter().any(|mine| mine.id == instance.id) {
            if want
                .remove
                .contains(&Placed::new(instance.profile_id, instance.placement))
            {
                plan.destroy.extend(instance.compute.iter().map(|compute| {
                    Step::DestroyComputeInstance {
                        gpu_instance_id: instance.id,
                        compute_instance_id: compute.id,
                    }
                }));
                removed.push(Step::DestroyGpuInstance {
                    gpu_instance_id: instance.id,
                });
            } else {
                plan.adopted.push(instance.id);
            }
            continue;
        }
        plan.target
            .push(Placed::new(instance.profile_id, instance.placement));
        if card.complete(instance) {
            plan.kept.push(instance.id);
            continue;
        }
        for compute in &instance.compute {
            plan.destroy.push(Step::DestroyComputeInstance {
                gpu_instance_id: instance.id,
                compute_instance_id: compute.id,
            });
        }
        if let Some((compute_profile_id, _)) = card
            .profile(instance.profile_id)
            .and_then(CardProfile::filling)
        {
            plan.fill.push(Fill {
                gpu_instance_id: instance.id,
                compute_profile_id,
            });
        }
    }
    plan.destroy.extend(removed);
    plan.target.sort();
    Ok(plan)
}
