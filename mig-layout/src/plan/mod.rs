//! The planner, pure (sans-IO): from a card's read reply and what the card should be, either
//! the steps of the helper's `apply`, or a refusal before anything is touched.
//!
//! It diffs. GPU instances that already match (profile wanted, placement free of the others)
//! stay, with their compute instance; only what differs is destroyed — compute instances
//! before their GPU instances, both before the mode changes, the mode before anything is
//! created. A card already as wanted gets no step at all. Placements are chosen explicitly
//! from the reply's possible placements by an exhaustive search ([`fit`]): a fit is found
//! whenever one exists, keeping as many of the card's instances as any fit can, and the same
//! card and layout always give the same placements.
//!
//! ```
//! use gpu_partition_types::Reply;
//! use layout_model::{ProfileKey, Want};
//! use mig_layout::plan;
//!
//! // An A100 with MIG on and nothing carved; its 1g.5gb profile has seven placements.
//! let slots: Vec<String> = (0..7).map(|s| format!(r#"{{"start": {s}, "size": 1}}"#)).collect();
//! let text = format!(r#"{{"format": "1.1", "device": "0000:3b:00.0",
//!     "mode": {{"capable": true, "current": "enabled", "pending": null}},
//!     "case": "none_carved", "gpu_instances": [], "vgpus": [], "processes": [],
//!     "profiles": [{{"id": 19, "name": "1g.5gb", "placements": [{}],
//!       "signature": {{"slice_count": 1, "instance_count": 7, "multiprocessor_count": 14,
//!         "copy_engine_count": 1, "decoder_count": 0, "encoder_count": 0, "jpeg_count": 0,
//!         "ofa_count": 0, "memory_size_mb": 4864, "capabilities": []}}}}]}}"#,
//!     slots.join(", "));
//! let reply = Reply::from_json(text.as_bytes(), None)?;
//! let want = Want::enabled(vec![(ProfileKey::Name("1g.5gb".into()), 7)]);
//! let steps = plan(&reply, &want)?;
//! assert_eq!(steps.create.len(), 7);
//! assert!(steps.destroy.is_empty() && steps.set_mode.is_none());
//! assert_eq!(steps.create[6].placement.start, 6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod adopting;
mod card_plan;
mod demand;
pub mod fit;
mod impossible;

pub use card_plan::{CardPlan, Create, Fill, PlanLine};
pub use impossible::{Impossible, ImpossibleKind};

use adopting::plan_adopting;
use demand::{demand, resolve};
use gpu_partition_types::{Reply, Step};
use impossible::{adopted_in_the_way, slices_unknown};
use layout_model::{Card, CardInstance, CardProfile, Placed, Unnamed, Want};

/// Plans `want` on the card of `reply`.
pub fn plan(reply: &Reply, want: &Want) -> Result<CardPlan, Impossible> {
    let card = Card::of(reply).map_err(|unreadable| {
        Impossible::new(
            unreadable.device,
            None,
            ImpossibleKind::Unreadable,
            unreadable.to_string(),
        )
    })?;
    plan_card(&card, want)
}

/// Plans `want` on `card` (what [`plan`] does once the reply is read).
pub fn plan_card(card: &Card, want: &Want) -> Result<CardPlan, Impossible> {
    let device = card.device;
    let mut plan = CardPlan::empty(device);
    if !card.capable {
        return if want.enabled {
            Err(Impossible::new(
                device,
                None,
                ImpossibleKind::NotPartitionable,
                format!(
                    "{device} cannot be partitioned (it has no MIG mode), and the layout turns MIG on"
                ),
            ))
        } else {
            Ok(plan)
        };
    }
    // The mode: set it unless it is already so and nothing else is pending; a change the card
    // holds pending completes with a reset.
    match (card.current == want.enabled, card.pending) {
        (true, None) => {}
        (true, Some(_)) => plan.set_mode = Some(want.enabled),
        (false, Some(pending)) if pending == want.enabled => plan.reset = true,
        (false, _) => plan.set_mode = Some(want.enabled),
    }
    if !want.enabled {
        if want.unnamed == Unnamed::Adopt {
            if let Some(instance) = card.instances_now().first() {
                return Err(adopted_in_the_way(
                    card,
                    instance,
                    "turning MIG off would destroy it",
                ));
            }
        }
        destroy_all(card, &mut plan, |_| true);
        return Ok(plan);
    }
    let any = want.instances.iter().any(|(_, count)| *count > 0);
    if any && card.profiles.is_empty() && !card.current {
        plan.deferred = true;
        return Ok(plan);
    }
    let wanted = resolve(card, want)?;
    let existing: &[CardInstance] = if card.current { &card.instances } else { &[] };
    if want.unnamed == Unnamed::Adopt && !existing.is_empty() {
        return plan_adopting(card, want, &wanted, plan);
    }
    if wanted.is_empty() {
        destroy_all(card, &mut plan, |_| true);
        return Ok(plan);
    }
    let mut demands = Vec::with_capacity(wanted.len());
    for (profile, count) in &wanted {
        let decided = want.placements.as_ref().map(|placed| {
            placed
                .iter()
                .filter(|placed| placed.profile_id == profile.id)
                .map(|placed| placed.placement)
                .collect::<Vec<_>>()
        });
        demands.push(demand(card, profile, *count, existing, decided)?);
    }
    let Some((chosen, _)) = fit::fit(&demands) else {
        let asked: Vec<String> = wanted
            .iter()
            .map(|(profile, count)| format!("{count} × {}", profile.label()))
            .collect();
        return Err(Impossible::new(
            device,
            wanted
                .iter()
                .max_by_key(|(profile, count)| {
                    profile
                        .placements
                        .as_ref()
                        .and_then(|p| p.first())
                        .map_or(0, |p| p.size)
                        .saturating_mul(*count)
                })
                .map(|(profile, _)| profile.label()),
            ImpossibleKind::NoFit,
            format!(
                "{device}: {} do not fit together on the card's memory slices",
                asked.join(", ")
            ),
        ));
    };
    let mut kept = Vec::new();
    for ((profile, _), (demand, picks)) in wanted.iter().zip(demands.iter().zip(&chosen)) {
        let (compute_profile_id, _) = profile
            .filling()
            .ok_or_else(|| slices_unknown(card, profile))?;
        for pick in picks {
            let Some(candidate) = demand.candidates.get(*pick) else {
                continue;
            };
            plan.target
                .push(Placed::new(profile.id, candidate.placement));
            match candidate.existing {
                Some((id, _)) => kept.push(id),
                None => plan.create.push(Create {
                    profile_id: profile.id,
                    profile: profile.label(),
                    placement: candidate.placement,
                    compute_profile_id,
                }),
            }
        }
    }
    plan.target.sort();
    // Instances not kept go; kept ones keep a compute instance that fills them, and lose any
    // other.
    destroy_all(card, &mut plan, |instance| !kept.contains(&instance.id));
    let mut compute_destroys = Vec::new();
    for instance in existing.iter().filter(|i| kept.contains(&i.id)) {
        if card.complete(instance) {
            plan.kept.push(instance.id);
            continue;
        }
        for compute in &instance.compute {
            compute_destroys.push(Step::DestroyComputeInstance {
                gpu_instance_id: instance.id,
                compute_instance_id: compute.id,
            });
        }
        let profile = card.profile(instance.profile_id);
        if let Some((compute_profile_id, _)) = profile.and_then(CardProfile::filling) {
            plan.fill.push(Fill {
                gpu_instance_id: instance.id,
                compute_profile_id,
            });
        }
    }
    // Compute instances first: they go before any GPU instance.
    compute_destroys.append(&mut plan.destroy);
    plan.destroy = compute_destroys;
    plan.destroy.sort_by_key(|step| match step {
        Step::DestroyComputeInstance { .. } => 0,
        _ => 1,
    });
    Ok(plan)
}

/// Destroys every instance `which` picks: their compute instances first, then the instances.
fn destroy_all(card: &Card, plan: &mut CardPlan, which: impl Fn(&CardInstance) -> bool) {
    if !card.current {
        return;
    }
    let going: Vec<&CardInstance> = card.instances.iter().filter(|i| which(i)).collect();
    for instance in &going {
        for compute in &instance.compute {
            plan.destroy.push(Step::DestroyComputeInstance {
                gpu_instance_id: instance.id,
                compute_instance_id: compute.id,
            });
        }
    }
    for instance in going {
        plan.destroy.push(Step::DestroyGpuInstance {
            gpu_instance_id: instance.id,
        });
    }
}
