//! `layout_model::room`, what still fits, against the fake's rules of NVIDIA's placements on
//! every published part: at each step of a walk of creates and destroys, the placements it
//! says each profile could take are those where the fake's create succeeds, and how many more
//! fit is how many a fill of the card from the earliest-ending free placement makes.

#![allow(clippy::unwrap_used)]
use super::gpu_instances::{create_gpu_instance, destroy_gpu_instance};
use crate::scenario::{Device, MigMode, Placement, Scenario};
use gpu_partition_types::Placement as Slices;
use layout_model::room::{Change, Geometry, Held, Shape, remaining};
use layout_model::{MediaEngines, ProfileRef};

fn part(text: &str) -> Device {
    let mut card = Scenario::from_json(text.as_bytes())
        .unwrap()
        .devices
        .remove(0);
    card.mig_mode = MigMode::Mode {
        current: 1,
        pending: 1,
    };
    card
}

fn slices(at: Placement) -> Slices {
    Slices::new(at.start, at.size)
}

/// The card as a reply shows it to the rules of what fits.
fn geometry(card: &Device) -> Geometry {
    let shapes = card
        .gpu_instance_profiles
        .iter()
        .map(|profile| {
            Shape::new(
                ProfileRef::new(profile.id, Some(profile.name.clone())),
                Some(profile.placements.iter().copied().map(slices).collect()),
                Some(profile.instance_count),
                Some(MediaEngines::new(
                    profile.decoder_count,
                    profile.jpeg_count,
                    profile.ofa_count,
                )),
            )
        })
        .collect();
    let instances = card
        .gpu_instances
        .iter()
        .map(|gi| Held::new(gi.id, gi.profile_id, slices(gi.placement)))
        .collect();
    Geometry::new(true, shapes, instances)
}

/// Where the fake creates an instance of `profile_id` now.
fn creatable(card: &Device, profile_id: u32, placements: &[Placement]) -> Vec<Slices> {
    placements
        .iter()
        .filter(|at| create_gpu_instance(&mut card.clone(), profile_id, **at).is_ok())
        .map(|at| slices(*at))
        .collect()
}

/// How many instances of `profile_id` the fake makes, filling from the free placement that
/// ends first.
fn filled(card: &Device, profile_id: u32, placements: &[Placement]) -> u32 {
    let mut card = card.clone();
    let mut by_end = placements.to_vec();
    by_end.sort_by_key(|at| at.start + at.size);
    by_end
        .iter()
        .filter(|at| create_gpu_instance(&mut card, profile_id, **at).is_ok())
        .count()
        .try_into()
        .unwrap()
}

/// What the rules of what fits say of `card`, checked against the fake's creates.
fn agrees(name: &str, card: &Device) {
    let rooms = remaining(&geometry(card), &[]).unwrap();
    for (room, profile) in rooms.iter().zip(&card.gpu_instance_profiles) {
        let fits = room.fits.clone().unwrap();
        let state = format!("{name}, {} with {:?}", profile.name, card.gpu_instances);
        assert_eq!(
            fits.placements,
            creatable(card, profile.id, &profile.placements),
            "{state}"
        );
        assert_eq!(
            fits.more,
            filled(card, profile.id, &profile.placements),
            "{state}"
        );
    }
}

#[test]
fn what_still_fits_is_where_the_fakes_creates_succeed_on_every_published_part() {
    let mut checked = 0;
    for (name, text) in crate::scenarios::PARTS {
        let mut card = part(text);
        // A fixed walk: each step creates an instance of the next profile at its next free
        // placement, or, when none fits, destroys the oldest instance.
        let mut seed = 7usize;
        for _ in 0..60 {
            agrees(name, &card);
            checked += 1;
            seed = seed.wrapping_mul(31).wrapping_add(11);
            let profiles = &card.gpu_instance_profiles;
            let profile = &profiles[seed % profiles.len()];
            let free: Vec<Placement> = profile
                .placements
                .iter()
                .copied()
                .filter(|at| create_gpu_instance(&mut card.clone(), profile.id, *at).is_ok())
                .collect();
            let id = profile.id;
            match free.get(seed % free.len().max(1)) {
                Some(at) => {
                    create_gpu_instance(&mut card, id, *at).unwrap();
                }
                None => {
                    let oldest = card.gpu_instances.first().map(|gi| gi.id);
                    if let Some(oldest) = oldest {
                        destroy_gpu_instance(&mut card, oldest).unwrap();
                    }
                }
            }
        }
    }
    assert_eq!(checked, 9 * 60);
}

#[test]
fn what_fits_after_a_create_is_what_fits_once_the_fake_made_it() {
    for (name, text) in crate::scenarios::PARTS {
        let card = part(text);
        let big = card
            .gpu_instance_profiles
            .iter()
            .max_by_key(|profile| profile.slice_count)
            .unwrap();
        // The largest instance taken (the whole card, where the part's table has the whole-card
        // profile: then nothing else fits, by the rules and by the fake).
        let at = big.placements[0];
        let slots = card
            .gpu_instance_profiles
            .iter()
            .flat_map(|profile| &profile.placements)
            .map(|at| at.start + at.size)
            .max()
            .unwrap();
        let asked = remaining(
            &geometry(&card),
            &[Change::Create {
                profile_id: big.id,
                placement: slices(at),
            }],
        )
        .unwrap();
        let mut made = card.clone();
        create_gpu_instance(&mut made, big.id, at).unwrap();
        assert_eq!(asked, remaining(&geometry(&made), &[]).unwrap(), "{name}");
        let nothing_left = asked
            .iter()
            .all(|room| room.fits.as_ref().unwrap().more == 0);
        assert_eq!(nothing_left, at.start == 0 && at.size == slots, "{name}");
    }
}
