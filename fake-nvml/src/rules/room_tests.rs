//! `layout_model::room`, what still fits, against the fake's rules of NVIDIA's placements on
//! every published part: at each step of a walk of creates and destroys, the placements it
//! says each profile could take are those where the fake's create succeeds, and how many more
//! fit is how many a fill of the card from the earliest-ending free placement makes.

#![allow(clippy::unwrap_used)]
use super::gpu_instances::{create_gpu_instance, destroy_gpu_instance};
use crate::scenario::{Device, Placement};
use gpu_partition_types::Placement as Slices;
use layout_model::room::{Change, Geometry, Held, Shape, remaining};
use layout_model::{MediaEngines, ProfileRef};

fn part(text: &str) -> Device {
    super::tests::part_card(text, 1)
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
    Geometry::new(super::device::mig_on(card), shapes, instances)
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

/// What the rules of what fits say of `card`, checked against the fake's creates; how many
/// profiles had an answer (none where what bounds it is unknown: the part's table without its
/// whole-card profile, for a profile that holds media engines).
fn agrees(name: &str, card: &Device) -> usize {
    let rooms = remaining(&geometry(card), &[]).unwrap();
    let mut answered = 0;
    for (room, profile) in rooms.iter().zip(&card.gpu_instance_profiles) {
        let Some(fits) = room.fits.clone() else {
            continue;
        };
        answered += 1;
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
    answered
}

#[test]
fn what_still_fits_is_where_the_fakes_creates_succeed_on_every_published_part() {
    let mut checked = 0;
    let mut answered = 0;
    for (name, text) in crate::scenarios::PARTS {
        let mut card = part(text);
        // A fixed walk: each step creates an instance of the next profile at its next free
        // placement, or, when none fits, destroys the oldest instance.
        let mut seed = 7usize;
        for _ in 0..60 {
            answered += agrees(name, &card);
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
    // Most answers are told: only profiles with media engines on a part whose table lacks the
    // whole-card profile are unknown.
    let profiles: usize = crate::scenarios::PARTS
        .iter()
        .map(|(_, text)| part(text).gpu_instance_profiles.len())
        .sum();
    assert!(
        answered * 10 > profiles * 60 * 8,
        "{answered} of {}",
        profiles * 60
    );
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
        let whole = remaining(&geometry(&card), &[]).unwrap();
        let told = whole
            .iter()
            .find(|room| room.profile.id == big.id)
            .is_some_and(|room| room.fits.is_some());
        if !told {
            // The part's table lacks what bounds it (its whole-card profile): no create is
            // judged.
            let refused = remaining(
                &geometry(&card),
                &[Change::Create {
                    profile_id: big.id,
                    placement: slices(at),
                }],
            );
            assert_eq!(
                refused.map_err(|refused| refused.refusal),
                Err(layout_model::room::RoomRefusal::BoundsUnknown { profile_id: big.id }),
                "{name}"
            );
            continue;
        }
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

/// The card's vGPU catalogue and every vGPU on it (active, and written to its VFs).
fn vgpu_geometry(card: &Device) -> layout_model::room::VgpuGeometry {
    use gpu_partition_types::VgpuTypeId;
    use layout_model::room::{Backing, PlacedVgpu, VgpuGeometry, VgpuKind};
    let kinds = card
        .vgpu_types
        .iter()
        .map(|kind| {
            let backing = match kind.gpu_instance_profile_id {
                Some(profile_id) => Backing::GpuInstance { profile_id },
                None => Backing::TimeSliced,
            };
            VgpuKind::new(
                VgpuTypeId::new(kind.id).unwrap(),
                Some(backing),
                Some(kind.max_instances),
                Some(kind.max_instances_per_gpu_instance.unwrap_or(1)),
            )
        })
        .collect();
    let on_vfs = card
        .sriov
        .iter()
        .flat_map(|sriov| &sriov.vfs)
        .filter_map(|vf| {
            Some(PlacedVgpu::new(
                VgpuTypeId::new(vf.type_id?)?,
                vf.gpu_instance_id,
            ))
        });
    let active = card
        .vgpus
        .iter()
        .map(|vgpu| PlacedVgpu::new(VgpuTypeId::new(vgpu.type_id).unwrap(), vgpu.gpu_instance_id));
    VgpuGeometry::new(
        kinds,
        Some(active.chain(on_vfs).collect()),
        card.vgpu_heterogeneous_mode,
    )
}

/// How many vGPUs of `type_id` the fake makes, writing it to one free VF after another.
fn vgpus_filled(card: &Device, type_id: u32) -> u32 {
    let mut card = card.clone();
    let total = card.sriov.as_ref().map_or(0, |sriov| sriov.vfs.len());
    let mut made = 0;
    for index in 0..total {
        let free = card.sriov.as_ref().unwrap().vfs[index].type_id.is_none();
        if free && super::sriov::write_type(&mut card, index.try_into().unwrap(), type_id).is_ok() {
            made += 1;
        }
    }
    made
}

/// `layout_model::room::vgpu_remaining` says of every type what writing it to VF after VF
/// makes on the fake.
fn vgpus_agree(name: &str, card: &Device) {
    let rooms =
        layout_model::room::vgpu_remaining(&geometry(card), &vgpu_geometry(card), &[]).unwrap();
    for room in rooms {
        let state = format!("{name}, type {} with {:?}", room.type_id, card.sriov);
        assert_eq!(
            room.more,
            Some(vgpus_filled(card, room.type_id.get())),
            "{state}"
        );
    }
}

/// A part with a vGPU catalogue, its VFs enabled (the H100's count is this test's: none is
/// published), MIG as `mig` says.
fn vgpu_part(text: &str, mig: u32) -> Device {
    let mut card = super::tests::part_card(text, mig);
    let sriov = card.sriov.get_or_insert_with(|| {
        serde_json::from_value(serde_json::json!({ "total_vfs": 20 })).unwrap()
    });
    sriov.total_vfs = sriov.total_vfs.max(16);
    super::sriov::enable_vfs(&mut card);
    card
}

/// The parts with a vGPU catalogue, each with its VFs enabled and MIG as `mig` says.
fn vgpu_parts(mig: u32) -> impl Iterator<Item = (&'static str, Device)> {
    [
        ("a100-pcie-40gb", crate::scenarios::PART_A100_PCIE_40GB),
        ("h100-80gb", crate::scenarios::PART_H100_80GB),
    ]
    .into_iter()
    .map(move |(name, text)| (name, vgpu_part(text, mig)))
}

/// The first type of `card`'s catalogue that `pick` takes.
fn first_type(card: &Device, pick: impl Fn(&crate::scenario::VgpuType) -> bool) -> u32 {
    card.vgpu_types.iter().find(|kind| pick(kind)).unwrap().id
}

#[test]
fn how_many_more_time_sliced_vgpus_fit_is_what_the_fake_makes_once_types_run() {
    for (name, mut card) in vgpu_parts(0) {
        vgpus_agree(name, &card);
        let first = first_type(&card, |kind| kind.gpu_instance_profile_id.is_none());
        for vf in 0..2 {
            super::sriov::write_type(&mut card, vf, first).unwrap();
            vgpus_agree(name, &card);
        }
    }
}

#[test]
fn how_many_more_mig_backed_vgpus_fit_is_what_the_fake_makes_on_its_gpu_instances() {
    for (name, mut card) in vgpu_parts(1) {
        vgpus_agree(name, &card);
        // A GPU instance of each MIG-backed type's profile, where it still fits.
        let profiles: Vec<u32> = card
            .vgpu_types
            .iter()
            .filter_map(|kind| kind.gpu_instance_profile_id)
            .collect();
        for profile in profiles {
            let _ = super::gpu_instances::create_gpu_instance_anywhere(&mut card, profile);
        }
        vgpus_agree(name, &card);
        let held = |profile: u32| card.gpu_instances.iter().any(|gi| gi.profile_id == profile);
        let backed = first_type(&card, |kind| kind.gpu_instance_profile_id.is_some_and(held));
        super::sriov::write_type(&mut card, 0, backed).unwrap();
        vgpus_agree(name, &card);
    }
}
