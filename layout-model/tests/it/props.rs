//! Properties over random layouts of the A100's catalogue: a card built from a declaration has
//! no difference with it, and each single edit of such a card gives exactly one difference, of
//! the kind the edit makes.

use crate::common::{BOARD, Board as TestBoard, Gi, PROFILES, TestCard};
use gpu_partition_types::Placement;
use layout_model::{Board, DifferenceKind, NvidiaDeclared, Placed, ProfileKey, Want};
use proptest::prelude::*;

/// Instances from `picks` (a profile, a placement of it), each kept when it overlaps none
/// before it.
fn layout(picks: &[(usize, usize)]) -> Vec<Gi> {
    let mut instances: Vec<Gi> = Vec::new();
    for (profile, start) in picks {
        let (id, _, _, _, starts, size) = PROFILES[profile % PROFILES.len()];
        let start = starts[start % starts.len()];
        let free = instances.iter().all(|gi| {
            let end = gi.start + gi.size();
            start + size <= gi.start || end <= start
        });
        if free {
            let next = u32::try_from(instances.len()).unwrap_or(0) + 1;
            instances.push(Gi::new(next, id, start));
        }
    }
    instances
}

/// What a declaration of `instances` wants: their counts by name and their placements.
fn declared(instances: &[Gi]) -> NvidiaDeclared {
    let counts: Vec<(ProfileKey, u32)> = PROFILES
        .iter()
        .filter_map(|(id, name, ..)| {
            let count = instances.iter().filter(|gi| gi.profile == *id).count();
            (count > 0).then(|| {
                (
                    ProfileKey::Name((*name).to_owned()),
                    u32::try_from(count).unwrap_or(0),
                )
            })
        })
        .collect();
    let want = Want::enabled(counts).placed(
        instances
            .iter()
            .map(|gi| Placed::new(gi.profile, gi.placement()))
            .collect(),
    );
    NvidiaDeclared::new(
        &want,
        Board::new(
            Some(BOARD.name.to_owned()),
            BOARD.serial.map(str::to_owned),
            Some(BOARD.uuid.to_owned()),
        ),
    )
}

/// A placement of `profile` (an ID) that no instance of `instances` but `except` covers.
fn free_placement(instances: &[Gi], profile: u32, except: Option<u32>) -> Option<Placement> {
    let (_, _, _, _, starts, size) = PROFILES.iter().find(|p| p.0 == profile).copied()?;
    starts.iter().copied().find_map(|start| {
        let free = instances
            .iter()
            .filter(|gi| Some(gi.id) != except)
            .all(|gi| start + size <= gi.start || gi.start + gi.size() <= start);
        (free
            && !instances
                .iter()
                .any(|gi| gi.profile == profile && gi.start == start))
        .then(|| Placement::new(start, size))
    })
}

fn kinds(gpu: &NvidiaDeclared, card: &TestCard) -> Vec<DifferenceKind> {
    gpu.drift(&card.reply(), None)
        .differences
        .iter()
        .map(layout_model::Difference::kind)
        .collect()
}

proptest! {
    #[test]
    fn a_card_built_from_a_declaration_has_no_difference_with_it(
        picks in prop::collection::vec((0..5usize, 0..7usize), 0..12)
    ) {
        let instances = layout(&picks);
        let gpu = declared(&instances);
        prop_assert_eq!(kinds(&gpu, &TestCard::on(instances)), Vec::<DifferenceKind>::new());
    }

    #[test]
    fn each_single_edit_of_such_a_card_gives_exactly_one_difference_of_its_kind(
        picks in prop::collection::vec((0..5usize, 0..7usize), 1..12),
        which in 0..16usize,
        edit in 0..6usize,
    ) {
        let instances = layout(&picks);
        let gpu = declared(&instances);
        let at = which % instances.len();
        let mut card = TestCard::on(instances.clone());
        let expected = match edit {
            0 => {
                card.instances.remove(at);
                DifferenceKind::InstanceMissing
            }
            1 => {
                let profile = instances[at].profile;
                let Some(free) = free_placement(&instances, profile, None) else {
                    // No room for an extra one: the case is rejected, not passed.
                    return Err(TestCaseError::reject("no free placement for an extra instance"));
                };
                let mut extra = Gi::new(99, profile, free.start);
                extra.compute = None;
                card.instances.push(extra);
                DifferenceKind::InstanceExtra
            }
            2 => {
                let profile = instances[at].profile;
                let Some(free) = free_placement(&instances, profile, Some(instances[at].id)) else {
                    // Nowhere to move it: the case is rejected, not passed.
                    return Err(TestCaseError::reject("no free placement to move the instance to"));
                };
                card.instances[at].start = free.start;
                DifferenceKind::InstanceMoved
            }
            3 => {
                card.pending = Some(false);
                DifferenceKind::Mode
            }
            4 => {
                card.instances[at].compute = Some(Vec::new());
                DifferenceKind::ComputeInstances
            }
            _ => {
                card.board = TestBoard { serial: Some("0000000000000"), ..BOARD };
                DifferenceKind::Board
            }
        };
        prop_assert_eq!(kinds(&gpu, &card), vec![expected]);
    }
}
