//! Every kind of difference, from replies: what a card differs in, as typed facts.

use crate::common::{Gi, TestCard, balanced, balanced_counted, balanced_placed, device};
use gpu_partition_types::{Placement, Token};
use layout_model::{
    Card, Difference, DifferenceKind, Fact, ProfileKey, ProfileRef, Remedy, Unnamed, Want, compare,
    differences,
};

fn named(id: u32, name: &str) -> ProfileRef {
    ProfileRef::new(id, Some(name.to_owned()))
}

fn facts(card: &TestCard, want: &Want) -> Vec<Fact> {
    differences(&card.reply(), want)
        .into_iter()
        .map(|difference| difference.fact)
        .collect()
}

#[test]
fn a_card_as_the_layout_wants_has_no_difference_by_counts_or_by_placements() {
    let card = TestCard::on(balanced());
    assert_eq!(facts(&card, &balanced_placed()), []);
    assert_eq!(facts(&card, &balanced_counted()), []);
}

#[test]
fn mig_off_where_it_is_wanted_on_is_the_mode_found_and_wanted_and_every_placement_missing() {
    let mut card = TestCard::on(balanced());
    card.current = false;
    let found = facts(&card, &balanced_placed());
    assert_eq!(
        found[0],
        Fact::Mode {
            capable: true,
            current: false,
            pending: None,
            wanted: true
        }
    );
    assert_eq!(
        found[1..]
            .iter()
            .filter(|fact| matches!(fact, Fact::InstanceMissing { .. }))
            .count(),
        4
    );
}

#[test]
fn a_mode_change_pending_is_the_mode_now_and_after_the_next_reset() {
    let mut card = TestCard::on(balanced());
    card.pending = Some(false);
    assert_eq!(
        facts(&card, &balanced_placed()),
        [Fact::Mode {
            capable: true,
            current: true,
            pending: Some(false),
            wanted: true
        }]
    );
}

#[test]
fn a_profile_the_card_lacks_is_named_as_the_layout_names_it() {
    let card = TestCard::on(Vec::new());
    let want = Want::enabled(vec![(ProfileKey::Name("1g.6gb".into()), 1)]);
    assert_eq!(
        facts(&card, &want),
        [Fact::Profile {
            profile: ProfileKey::Name("1g.6gb".into())
        }]
    );
}

#[test]
fn by_counts_a_profile_short_of_its_count_is_found_and_wanted() {
    let mut instances = balanced();
    instances.remove(1);
    assert_eq!(
        facts(&TestCard::on(instances), &balanced_counted()),
        [Fact::InstanceCount {
            profile: named(19, "1g.5gb"),
            found: 1,
            wanted: 2
        }]
    );
}

#[test]
fn by_placements_an_instance_gone_is_missing_at_its_placement() {
    let mut instances = balanced();
    instances.remove(2);
    assert_eq!(
        facts(&TestCard::on(instances), &balanced_placed()),
        [Fact::InstanceMissing {
            profile: named(14, "2g.10gb"),
            placement: Placement::new(2, 2)
        }]
    );
}

#[test]
fn by_placements_an_instance_the_layout_does_not_place_is_extra_with_its_id_and_placement() {
    let mut instances = balanced();
    instances.push(Gi::new(9, 19, 6));
    assert_eq!(
        facts(&TestCard::on(instances), &balanced_placed()),
        [Fact::InstanceExtra {
            gpu_instance_id: 9,
            profile: named(19, "1g.5gb"),
            placement: Placement::new(6, 1)
        }]
    );
}

#[test]
fn an_instance_of_a_placed_profile_elsewhere_is_moved_from_and_to_not_missing_and_extra() {
    let mut instances = balanced();
    instances[1].start = 6;
    assert_eq!(
        facts(&TestCard::on(instances), &balanced_placed()),
        [Fact::InstanceMoved {
            gpu_instance_id: 2,
            profile: named(19, "1g.5gb"),
            found: Placement::new(6, 1),
            wanted: Placement::new(1, 1)
        }]
    );
}

#[test]
fn an_instance_of_another_profile_where_one_is_placed_is_extra_and_the_placed_one_missing() {
    let mut instances = balanced();
    instances[2] = Gi::new(3, 19, 2);
    let found = facts(&TestCard::on(instances), &balanced_placed());
    assert_eq!(
        found,
        [
            Fact::InstanceExtra {
                gpu_instance_id: 3,
                profile: named(19, "1g.5gb"),
                placement: Placement::new(2, 1)
            },
            Fact::InstanceMissing {
                profile: named(14, "2g.10gb"),
                placement: Placement::new(2, 2)
            }
        ]
    );
}

#[test]
fn an_instance_at_none_of_its_profiles_placements_is_misplaced() {
    let instances = vec![Gi::new(1, 14, 1)];
    let want = Want::enabled(vec![(ProfileKey::Name("2g.10gb".into()), 1)]);
    assert_eq!(
        facts(&TestCard::on(instances), &want),
        [Fact::InstanceMisplaced {
            gpu_instance_id: 1,
            profile: named(14, "2g.10gb"),
            placement: Placement::new(1, 2)
        }]
    );
}

#[test]
fn an_instance_without_its_filling_compute_instance_is_the_compute_found_and_wanted() {
    let mut instances = balanced();
    instances[3].compute = Some(vec![(0, 1, Placement::new(0, 2))]);
    let found = facts(&TestCard::on(instances), &balanced_placed());
    let [
        Fact::ComputeInstances {
            gpu_instance_id,
            found,
            wanted,
            ..
        },
    ] = found.as_slice()
    else {
        panic!("{found:?}");
    };
    assert_eq!(*gpu_instance_id, 4);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].profile_id, 1);
    let wanted = wanted.unwrap();
    assert_eq!(
        (wanted.profile_id, wanted.placement),
        (2, Placement::new(0, 3))
    );
}

#[test]
fn a_reply_that_did_not_read_whole_is_unreadable_naming_the_member() {
    let mut json = TestCard::on(balanced()).json();
    json["gpu_instances"][0]["placement"] = serde_json::json!("gone");
    let found = differences(&crate::common::reply_of(&json), &balanced_placed());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind(), DifferenceKind::Unreadable);
    assert_eq!(
        found[0].message(),
        "the placement of GPU instance 1 did not read, so nothing can be compared over it"
    );
}

#[test]
fn adopting_an_instance_the_layout_does_not_name_is_no_difference_and_it_is_listed() {
    let mut instances = balanced();
    instances.push(Gi::new(9, 19, 6));
    let card = Card::of(&TestCard::on(instances).reply()).unwrap();
    let compared = compare(&card, &balanced_placed().unnamed(Unnamed::Adopt));
    assert_eq!(compared.differences, []);
    assert_eq!(compared.adopted.len(), 1);
    assert_eq!(
        (
            compared.adopted[0].gpu_instance_id,
            compared.adopted[0].placement
        ),
        (9, Placement::new(6, 1))
    );
    let by_counts = compare(&card, &balanced_counted().unnamed(Unnamed::Adopt));
    assert_eq!(by_counts.differences, []);
    assert_eq!(by_counts.adopted.len(), 1);
}

#[test]
fn adopting_a_moved_instance_keeps_it_and_its_placement_is_missing() {
    let mut instances = balanced();
    instances[1].start = 6;
    let card = Card::of(&TestCard::on(instances).reply()).unwrap();
    let compared = compare(&card, &balanced_placed().unnamed(Unnamed::Adopt));
    assert_eq!(
        compared
            .differences
            .iter()
            .map(Difference::kind)
            .collect::<Vec<_>>(),
        [DifferenceKind::InstanceMissing]
    );
    assert_eq!(compared.adopted[0].gpu_instance_id, 2);
}

#[test]
fn every_kind_is_listed_and_a_restore_brings_back_what_the_declaration_can() {
    assert_eq!(DifferenceKind::ALL.len(), 22);
    let missing = Difference::new(
        device(),
        Fact::InstanceMissing {
            profile: named(19, "1g.5gb"),
            placement: Placement::new(0, 1),
        },
    );
    assert_eq!(missing.remedy(), Remedy::Restore);
    assert_eq!(
        Difference::new(device(), Fact::GpuGone).remedy(),
        Remedy::None
    );
    assert_eq!(
        Difference::new(device(), Fact::VfsGone { declared: 7 }).remedy(),
        Remedy::Restore
    );
    assert_eq!(
        Difference::new(device(), Fact::VfsUnreadable { why: "x".into() }).remedy(),
        Remedy::None
    );
    assert_eq!(
        Difference::new(
            device(),
            Fact::ComputePartition {
                found: gpu_host_probe::amdgpu::ComputePartition::Spx,
                wanted: gpu_host_probe::amdgpu::ComputePartition::Qpx,
            }
        )
        .remedy(),
        Remedy::Restore
    );
    assert_eq!(
        Difference::new(device(), Fact::PartitionsUnread { why: "x".into() }).remedy(),
        Remedy::None
    );
}

#[test]
fn a_difference_is_stored_flat_with_its_facts_and_its_message_and_reads_back() {
    let moved = Difference::new(
        device(),
        Fact::InstanceMoved {
            gpu_instance_id: 2,
            profile: named(19, "1g.5gb"),
            found: Placement::new(6, 1),
            wanted: Placement::new(1, 1),
        },
    );
    let value = serde_json::to_value(&moved).unwrap();
    insta::assert_json_snapshot!("instance_moved", value);
    let back: Difference = serde_json::from_value(value).unwrap();
    assert_eq!(back, moved);
}
