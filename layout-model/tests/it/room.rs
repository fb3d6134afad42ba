//! What still fits (`layout_model::room`): the refusals of a change asked first, each naming
//! the change and its facts, and a profile whose placements did not read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::Placement;
use layout_model::room::{
    Backing, Change, Fits, Geometry, Held, PlacedVgpu, RoomRefusal, Shape, VgpuGeometry, VgpuKind,
    VgpuRoom, remaining, vgpu_remaining,
};
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
        RoomRefusal::BoundsUnknown { profile_id: 9 }
    );
}

fn vgpu(id: u32) -> gpu_partition_types::VgpuTypeId {
    gpu_partition_types::VgpuTypeId::new(id).unwrap()
}

/// An A100-1-5C-like type on the 1g profile, one per GPU instance, and two time-sliced types.
fn catalogue(placed: Vec<PlacedVgpu>, heterogeneous: Option<bool>) -> VgpuGeometry {
    VgpuGeometry::new(
        vec![
            VgpuKind::new(
                vgpu(474),
                Some(Backing::GpuInstance { profile_id: 19 }),
                Some(7),
                Some(1),
            ),
            VgpuKind::new(vgpu(468), Some(Backing::TimeSliced), Some(10), None),
            VgpuKind::new(vgpu(471), Some(Backing::TimeSliced), Some(4), None),
        ],
        Some(placed),
        heterogeneous,
    )
}

fn more(rooms: &[VgpuRoom]) -> Vec<Option<u32>> {
    rooms.iter().map(|room| room.more).collect()
}

#[test]
fn with_mig_off_one_time_sliced_type_runs_at_a_time_up_to_its_maximum() {
    let mut card = a100(Vec::new());
    card.mig_on = false;
    let empty = vgpu_remaining(&card, &catalogue(Vec::new(), Some(false)), &[]).unwrap();
    assert_eq!(more(&empty), [Some(0), Some(10), Some(4)]);
    let running = catalogue(vec![PlacedVgpu::new(vgpu(471), None)], Some(false));
    assert_eq!(
        more(&vgpu_remaining(&card, &running, &[]).unwrap()),
        [Some(0), Some(0), Some(3)]
    );
    // Heterogeneous mode: the driver decides by placement, which is not modelled.
    let mixed = vgpu_remaining(&card, &catalogue(Vec::new(), Some(true)), &[]).unwrap();
    assert_eq!(more(&mixed), [Some(0), None, None]);
}

#[test]
fn a_mig_backed_type_fits_once_per_free_gpu_instance_of_its_profile_and_keeps_its_own() {
    let card = a100(vec![
        Held::new(1, 19, Placement::new(0, 1)),
        Held::new(2, 19, Placement::new(1, 1)),
    ]);
    let one_on_gi_1 = catalogue(vec![PlacedVgpu::new(vgpu(474), Some(1))], None);
    assert_eq!(
        more(&vgpu_remaining(&card, &one_on_gi_1, &[]).unwrap()),
        [Some(1), Some(0), Some(0)]
    );
    // A GPU instance made first adds its room; one with a vGPU is not destroyed (IN_USE).
    let made = vgpu_remaining(&card, &one_on_gi_1, &[create(19, 2, 1)]).unwrap();
    assert_eq!(more(&made)[0], Some(2));
    let refused = vgpu_remaining(
        &card,
        &one_on_gi_1,
        &[Change::Destroy { gpu_instance_id: 1 }],
    )
    .unwrap_err();
    assert_eq!(
        refused.refusal,
        RoomRefusal::HoldsVgpus {
            gpu_instance_id: 1,
            vgpus: 1
        }
    );
}

#[test]
fn what_fits_is_read_from_a_cards_reply() {
    use crate::common::{Gi, TestCard};
    let reply = TestCard::on(vec![Gi::new(1, 9, 4)]).reply();
    let card = layout_model::Card::of(&reply).unwrap();
    let rooms = remaining(&Geometry::of(&card), &[]).unwrap();
    // The 3g at 4 leaves the other 3g place and the 1g places before it.
    let threes = rooms.iter().find(|room| room.profile.id == 9).unwrap();
    assert_eq!(
        threes
            .fits
            .as_ref()
            .map(|fits| (fits.placements.clone(), fits.more)),
        Some((vec![Placement::new(0, 4)], 1))
    );
}

#[test]
fn a_vgpu_that_did_not_read_leaves_every_count_unknown() {
    use crate::common::TestCard;
    let mut json = TestCard::on(Vec::new()).json();
    json["format"] = "1.3".into();
    json["vgpu_types"] = serde_json::json!([{"id": 468, "name": "GRID A100-4C",
        "gpu_instance_profile_id": null, "framebuffer_mib": 4096, "max_instances": 10,
        "max_instances_per_gpu_instance": null}]);
    json["vgpu_mode"] = serde_json::json!({"heterogeneous": false});
    let mut card = a100(Vec::new());
    card.mig_on = false;
    let read = VgpuGeometry::of(&crate::common::reply_of(&json));
    assert_eq!(
        more(&vgpu_remaining(&card, &read, &[]).unwrap()),
        [Some(10)]
    );
    json["vgpus"] = serde_json::json!([{"uuid": 7}]);
    let lost = VgpuGeometry::of(&crate::common::reply_of(&json));
    assert_eq!(lost.placed, None);
    assert_eq!(more(&vgpu_remaining(&card, &lost, &[]).unwrap()), [None]);
}

#[test]
fn a_profile_with_media_engines_on_a_card_whose_engines_did_not_read_has_no_answer() {
    let mut card = a100(Vec::new());
    // The whole-card profile's signature lost: the 3g (two decoders) cannot be bounded.
    card.shapes[2].engines = None;
    let rooms = remaining(&card, &[]).unwrap();
    assert_eq!(rooms[1].fits, None);
    // The 1g holds no engine: its answer stands.
    assert_eq!(rooms[0].fits.as_ref().map(|fits| fits.more), Some(7));
}

/// The A30-24GB as NVIDIA's MIG user guide tables it ("Supported MIG Profiles", A30): four
/// slices; 1g.6gb (0 NVDEC, 0 JPEG, 0 OFA, 4 instances), 1g.6gb+me (1/1/1, "a single 1g
/// profile can include media extensions"), 2g.12gb (2/0/0, 2 instances), 2g.12gb+me (2/1/1, a
/// single one), 4g.24gb (4/1/1, the whole card).
fn a30(instances: Vec<Held>) -> Geometry {
    let profile = |id, name: &str, size: u32, count, engines: (u32, u32, u32)| {
        let placements = (0..4 / size)
            .map(|n| Placement::new(n * size, size))
            .collect();
        Shape::new(
            ProfileRef::new(id, Some(name.to_owned())),
            Some(placements),
            Some(count),
            Some(MediaEngines::new(engines.0, engines.1, engines.2)),
        )
    };
    Geometry::new(
        true,
        vec![
            profile(14, "1g.6gb", 1, 4, (0, 0, 0)),
            profile(21, "1g.6gb+me", 1, 1, (1, 1, 1)),
            profile(5, "2g.12gb", 2, 2, (2, 0, 0)),
            profile(6, "2g.12gb+me", 2, 1, (2, 1, 1)),
            profile(0, "4g.24gb", 4, 1, (4, 1, 1)),
        ],
        instances,
    )
}

fn counts(rooms: &[layout_model::room::Room]) -> Vec<Option<u32>> {
    rooms
        .iter()
        .map(|room| room.fits.as_ref().map(|fits| fits.more))
        .collect()
}

#[test]
fn an_a30_holds_the_instances_nvidias_table_gives_and_a_single_media_extension() {
    assert_eq!(
        counts(&remaining(&a30(Vec::new()), &[]).unwrap()),
        [Some(4), Some(1), Some(2), Some(1), Some(1)]
    );
    // A 1g.6gb+me takes the card's JPEG decoder and OFA: no other +me instance, nor the whole
    // card, fits beside it; three 1g.6gb do, and a 2g.12gb beside it.
    let media = a30(vec![Held::new(1, 21, Placement::new(0, 1))]);
    assert_eq!(
        counts(&remaining(&media, &[]).unwrap()),
        [Some(3), Some(0), Some(1), Some(0), Some(0)]
    );
}
