//! Whether the card, as read, still admits a GPU's declared division ([`unadmitted`]): what
//! xen-api's design calls comparing the expected profiles with the admitted ones, so that a
//! division the card no longer admits says the GPU requires a reset.

use crate::card::Card;
use crate::nvidia::NvidiaDeclared;
use crate::room::{Change, ChangeRefused, Geometry, RoomRefusal, remaining};
use crate::want::Placed;

/// The GPU instances `declared` places that the card of `card` does not admit at their
/// placements now: each declared instance the card does not hold, made where it is declared
/// on the card as a reset would leave it — without the instances the declaration does not
/// name, adopted ones too (an adopted instance in the way is the restore's to refuse, not a
/// reason to reset: a reset would destroy it) —, in declared order, by NVIDIA's placement
/// rules ([`crate::room`]): refused as not one of the profile's placements (the card no longer
/// lists it), the profile gone from the card, or not fitting (the profile's count or the media
/// engines used up). Empty where the card admits them all, where nothing is placed (MIG off, counts
/// only), where MIG is off on the card now (a restore turns it on first), and for a change
/// whose bounds the card did not give (not known, so not said).
pub fn unadmitted(card: &Card, declared: &NvidiaDeclared) -> Vec<Placed> {
    let Some(placed) = declared.instances.as_ref().filter(|_| declared.mig_enabled) else {
        return Vec::new();
    };
    if !card.current {
        return Vec::new();
    }
    let held: Vec<(u32, Placed)> = card
        .instances_now()
        .iter()
        .map(|instance| {
            (
                instance.id,
                Placed::new(instance.profile_id, instance.placement),
            )
        })
        .collect();
    let mut changes: Vec<Change> = held
        .iter()
        .filter(|(_, at)| !placed.contains(at))
        .map(|(id, _)| Change::Destroy {
            gpu_instance_id: *id,
        })
        .collect();
    let geometry = Geometry::of(card);
    let mut refused = Vec::new();
    for at in placed
        .iter()
        .filter(|at| !held.iter().any(|(_, held)| held == *at))
    {
        changes.push(Change::Create {
            profile_id: at.profile_id,
            placement: at.placement,
        });
        match remaining(&geometry, &changes) {
            Ok(_) => continue,
            Err(ChangeRefused {
                refusal:
                    RoomRefusal::NotAPlacement { .. }
                    | RoomRefusal::NoProfile { .. }
                    | RoomRefusal::DoesNotFit { .. },
                ..
            }) => refused.push(*at),
            // Not known (bounds unread, an instance gone between reads): not said.
            Err(_) => {}
        }
        changes.pop();
    }
    refused
}
