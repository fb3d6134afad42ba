//! What still fits (`layout_model::room`): the refusals of a change asked first, each naming
//! the change and its facts, and a profile whose placements did not read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::Placement;
use layout_model::room::{Change, Fits, Geometry, Held, RoomRefusal, Shape, remaining};
use layout_model::{MediaEngines, ProfileRef};

/// An A100-like card: 1g at 0..7, 3g at 0 or 4 (4 slices each), 7g at 0 (8 slices), with
/// their media engines; `instances` on it.
fn a100(instances: Vec<Held>) -> Geometry {
    let profile = |id, name: &str, placements: Vec<Placement>, count, decoders| {
        Shape::new(
            ProfileRef::new(id, Some(name.to_owned())),
            Some(placements),
            Some(count),
            Some(MediaEngines::new(decoders, 0, 0)),
        )
    };
    let ones = (0..7).map(|start| Placement::new(start, 1)).collect();
    Geometry::new(
        true,
        vec![
            profile(19, "1g.5gb", ones, 7, 0),
            profile(
                9,
                "3g.20gb",
                vec![Placement::new(0, 4), Placement::new(4, 4)],
                2,
                2,
            ),
            profile(0, "7g.40gb", vec![Placement::new(0, 8)], 1, 5),
        ],
        instances,
    )
}

fn create(profile_id: u32, start: u32, size: u32) -> Change {
    Change::Create {
        profile_id,
        placement: Placement::new(start, size),
    }
}

#[test]
fn a_3g_at_the_start_leaves_the_other_3g_place_and_three_1g_and_no_7g() {
    let rooms = remaining(&a100(vec![Held::new(1, 9, Placement::new(0, 4))]), &[]).unwrap();
    let fits: Vec<(u32, u32, usize)> = rooms
        .iter()
        .map(|room| {
            let fits = room.fits.clone().unwrap();
            (room.profile.id, fits.more, fits.placements.len())
        })
        .collect();
    assert_eq!(fits, [(19, 3, 3), (9, 1, 1), (0, 0, 0)]);
}

#[test]
fn a_change_that_cannot_be_made_is_refused_naming_it_and_its_facts() {
    let card = a100(vec![Held::new(1, 9, Placement::new(0, 4))]);
    let refused = |changes: &[Change]| remaining(&card, changes).unwrap_err();
    let taken = refused(&[create(19, 6, 1), create(19, 2, 1)]);
    assert_eq!(taken.index, 1);
    assert_eq!(
        taken.refusal,
        RoomRefusal::DoesNotFit {
            profile_id: 19,
            placement: Placement::new(2, 1)
        }
    );
    assert_eq!(taken.refusal.to_string(), "profile 19 does not fit at 2+1");
    assert_eq!(
        refused(&[create(9, 2, 4)]).refusal,
        RoomRefusal::NotAPlacement {
            profile_id: 9,
            placement: Placement::new(2, 4)
        }
    );
    assert_eq!(
        refused(&[create(5, 0, 1)]).refusal,
        RoomRefusal::NoProfile { profile_id: 5 }
    );
    assert_eq!(
        refused(&[Change::Destroy { gpu_instance_id: 2 }]).refusal,
        RoomRefusal::NoInstance { gpu_instance_id: 2 }
    );
}

#[test]
fn a_destroy_asked_first_frees_its_place() {
    let card = a100(vec![Held::new(1, 9, Placement::new(0, 4))]);
    let rooms = remaining(&card, &[Change::Destroy { gpu_instance_id: 1 }]).unwrap();
    // The whole card is free again: one 7g fits, at its one place.
    let whole = rooms[2].fits.clone().unwrap();
    assert_eq!(
        (whole.placements, whole.more),
        (vec![Placement::new(0, 8)], 1)
    );
}

#[test]
fn a_card_out_of_mig_mode_fits_nothing_and_takes_no_create() {
    let mut card = a100(Vec::new());
    card.mig_on = false;
    let rooms = remaining(&card, &[]).unwrap();
    assert!(rooms.iter().all(|room| room.fits == Some(Fits::default())));
    assert_eq!(
        remaining(&card, &[create(19, 0, 1)]).unwrap_err().refusal,
        RoomRefusal::MigOff
    );
}

#[test]
fn a_profile_whose_placements_did_not_read_has_no_answer_and_takes_no_create() {
    let mut card = a100(Vec::new());
    card.shapes[1].placements = None;
    let rooms = remaining(&card, &[]).unwrap();
    assert_eq!(rooms[1].fits, None);
    assert_eq!(
        remaining(&card, &[create(9, 0, 4)]).unwrap_err().refusal,
        RoomRefusal::PlacementsUnknown { profile_id: 9 }
    );
}
