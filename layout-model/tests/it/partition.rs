//! A GPU's partitions as rows (`layout_model::partition`): slots, ordinals, recorded or found,
//! an AMD GPU's partitions by its compute mode; and the division's generation and staleness.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Gi, TestCard, balanced, balanced_counted, balanced_placed, device};
use gpu_host_probe::amdgpu::{AmdPartitions, ComputePartition, MemoryPartition};
use gpu_host_probe::{Boot, CardWrite, CardWrites, Ledger, Now, Writer};
use gpu_partition_types::{Placement, VgpuTypeId};
use layout_model::partition::{
    AmdCountUnknown, Division, Origin, Partition, PartitionProfile, Slot, Stale, Unread, amd,
    nvidia,
};
use layout_model::{Board, Card, Ended, NvidiaDeclared, VfFound, VfsRead};

fn rows_of(instances: Vec<Gi>, declared: Option<&NvidiaDeclared>) -> Vec<Partition> {
    let reply = TestCard::on(instances).reply();
    nvidia(&Card::of(&reply).unwrap(), &reply, None, declared)
}

fn summary(rows: &[Partition]) -> Vec<(String, String, u32, Origin)> {
    rows.iter()
        .map(|row| {
            (
                row.slot.to_string(),
                row.profile.to_string(),
                row.ordinal,
                row.origin,
            )
        })
        .collect()
}

#[test]
fn gpu_instances_are_rows_in_placement_order_each_counted_among_its_profile() {
    // Made in another order than they sit: GI 7 at slice 1, GI 2 at slice 0.
    let rows = rows_of(
        vec![Gi::new(4, 9, 4), Gi::new(7, 19, 1), Gi::new(2, 19, 0)],
        None,
    );
    assert_eq!(
        summary(&rows),
        [
            ("GI 2".into(), "1g.5gb".into(), 0, Origin::Inferred),
            ("GI 7".into(), "1g.5gb".into(), 1, Origin::Inferred),
            ("GI 4".into(), "3g.20gb".into(), 0, Origin::Inferred),
        ]
    );
    assert_eq!(rows[2].placement, Some(Placement::new(4, 4)));
    assert_eq!(rows[2].compute, [0]);
}

#[test]
fn instances_the_declaration_places_are_recorded_and_one_beside_them_is_found() {
    let declared = NvidiaDeclared::new(&balanced_placed(), Board::default());
    let mut instances = balanced();
    instances.push(Gi::new(9, 19, 6));
    let rows = rows_of(instances, Some(&declared));
    let origins: Vec<(String, Origin)> = rows
        .iter()
        .map(|row| (row.slot.to_string(), row.origin))
        .collect();
    assert_eq!(
        origins,
        [
            ("GI 1".into(), Origin::Recorded),
            ("GI 2".into(), Origin::Recorded),
            ("GI 3".into(), Origin::Recorded),
            ("GI 4".into(), Origin::Recorded),
            ("GI 9".into(), Origin::Inferred),
        ]
    );
}

#[test]
fn a_declaration_by_counts_records_the_first_of_each_profile_up_to_its_count() {
    let declared = NvidiaDeclared::new(&balanced_counted(), Board::default());
    let mut instances = balanced();
    instances.push(Gi::new(9, 19, 6));
    let rows = rows_of(instances, Some(&declared));
    let ones: Vec<(u32, Origin)> = rows
        .iter()
        .filter(|row| row.profile.to_string() == "1g.5gb")
        .map(|row| (row.ordinal, row.origin))
        .collect();
    assert_eq!(
        ones,
        [
            (0, Origin::Recorded),
            (1, Origin::Recorded),
            (2, Origin::Inferred)
        ]
    );
}

#[test]
fn a_card_with_mig_off_has_no_gpu_instance_rows_whatever_its_reply_lists() {
    let mut card = TestCard::on(vec![Gi::new(1, 19, 0)]);
    card.current = false;
    let reply = card.reply();
    assert_eq!(nvidia(&Card::of(&reply).unwrap(), &reply, None, None), []);
}

#[test]
fn a_vgpu_on_a_vf_is_a_row_on_its_gpu_instance_named_from_the_catalogue() {
    let mut json = TestCard::on(vec![Gi::new(1, 9, 0)]).json();
    json["vgpu_types"] = serde_json::json!([
        {"id": 700, "name": "NVIDIA A100-3-20C", "gpu_instance_profile_id": 9}
    ]);
    let reply = crate::common::reply_of(&json);
    let type_id = VgpuTypeId::new(700).unwrap();
    let vfs = VfsRead::Read(vec![
        VfFound::new(0, None),
        VfFound::new(1, Some(type_id)).on_instance(Some(1)),
    ]);
    let rows = nvidia(&Card::of(&reply).unwrap(), &reply, Some(&vfs), None);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let vgpu = &rows[1];
    assert_eq!(vgpu.slot, Slot::Vf { index: 1 });
    assert_eq!(
        vgpu.profile,
        PartitionProfile::Vgpu {
            type_id,
            name: Some("NVIDIA A100-3-20C".into())
        }
    );
    assert_eq!(
        (vgpu.on, vgpu.ordinal, vgpu.origin),
        (Some(1), 0, Origin::Inferred)
    );
}

fn amd_read(compute: ComputePartition, offered: Vec<ComputePartition>) -> AmdPartitions {
    AmdPartitions::new(
        (compute, offered),
        Some(MemoryPartition::Nps1),
        vec![MemoryPartition::Nps1, MemoryPartition::Nps4],
        None,
    )
}

#[test]
fn an_amd_gpu_in_qpx_has_four_partitions_and_one_in_spx_none() {
    use ComputePartition::{Cpx, Dpx, Qpx, Spx};
    let offered = vec![Spx, Dpx, Qpx, Cpx];
    let rows = amd(&amd_read(Qpx, offered.clone()), None).unwrap();
    let slots: Vec<String> = rows.iter().map(|row| row.slot.to_string()).collect();
    assert_eq!(
        slots,
        ["partition 0", "partition 1", "partition 2", "partition 3"]
    );
    assert_eq!(rows[3].ordinal, 3);
    assert_eq!(amd(&amd_read(Spx, offered), None).unwrap(), []);
}

#[test]
fn an_amd_gpu_in_cpx_has_one_partition_per_xcc_when_what_it_offers_names_the_count() {
    use ComputePartition::{Cpx, Dpx, Qpx, Spx, Tpx};
    // SPX, DPX, QPX, CPX in NPS1: only a GPU of 8 XCCs offers that (MI300X).
    let eight = amd(&amd_read(Cpx, vec![Spx, Dpx, Qpx, Cpx]), None).unwrap();
    assert_eq!(eight.len(), 8);
    // SPX, TPX, CPX: 6 XCCs (MI300A).
    let six = amd(&amd_read(Cpx, vec![Spx, Tpx, Cpx]), None).unwrap();
    assert_eq!(six.len(), 6);
}

#[test]
fn an_amd_gpu_in_cpx_whose_offer_fits_several_xcc_counts_has_its_partitions_unknown() {
    use ComputePartition::{Cpx, Spx};
    // SPX and CPX alone: 1 or 2 XCCs.
    let unknown = amd(&amd_read(Cpx, vec![Spx, Cpx]), None).unwrap_err();
    assert_eq!(
        unknown,
        AmdCountUnknown::XccCount {
            compute: Cpx,
            candidates: vec![1, 2]
        }
    );
}

fn boot(id: &str) -> Boot {
    Boot::new(Some(id.to_owned()), Some(1_767_225_600))
}

/// The record of writes `ledger` at write `seq`, its last write to the test card.
fn written(ledger: &str, seq: u64) -> Ledger {
    let mut devices = std::collections::BTreeMap::new();
    if seq > 0 {
        devices.insert(device(), CardWrite::new(seq, Writer::HelperApply, 1_000));
    }
    Ledger::Read(CardWrites::new(ledger, seq, devices, None))
}

fn read(previous: Option<&Division>, rows: Vec<Partition>, now: &Now) -> Division {
    Division::after_read(previous, device(), rows, 100, now)
}

#[test]
fn the_first_read_is_generation_1_and_a_read_of_the_same_division_keeps_it() {
    let now = Now::new(boot("a"), written("l", 3));
    let first = read(None, rows_of(balanced(), None), &now);
    assert_eq!(first.generation, 1);
    let again = read(Some(&first), rows_of(balanced(), None), &now);
    assert_eq!(again.generation, 1);
}

#[test]
fn a_division_that_changed_outside_our_writes_is_the_next_generation() {
    let now = Now::new(boot("a"), written("l", 3));
    let first = read(None, rows_of(balanced(), None), &now);
    let fewer = read(Some(&first), rows_of(balanced()[..2].to_vec(), None), &now);
    assert_eq!(fewer.generation, 2);
}

#[test]
fn a_write_of_ours_since_the_read_moves_the_generation_though_the_rows_are_the_same() {
    // A GPU instance destroyed and made again at the same place: the same rows, another
    // partition.
    let first = read(
        None,
        rows_of(balanced(), None),
        &Now::new(boot("a"), written("l", 3)),
    );
    let after = read(
        Some(&first),
        rows_of(balanced(), None),
        &Now::new(boot("a"), written("l", 4)),
    );
    assert_eq!(after.generation, 2);
}

#[test]
fn a_read_in_another_boot_moves_the_generation() {
    let first = read(
        None,
        rows_of(balanced(), None),
        &Now::new(boot("a"), Ledger::Empty),
    );
    let after = read(
        Some(&first),
        rows_of(balanced(), None),
        &Now::new(boot("b"), Ledger::Empty),
    );
    assert_eq!(after.generation, 2);
}

#[test]
fn a_declaration_that_comes_to_record_the_same_instances_keeps_the_generation() {
    let now = Now::new(boot("a"), written("l", 3));
    let first = read(None, rows_of(balanced(), None), &now);
    let declared = NvidiaDeclared::new(&balanced_placed(), Board::default());
    let adopted = read(Some(&first), rows_of(balanced(), Some(&declared)), &now);
    assert_eq!(adopted.partitions[0].origin, Origin::Recorded);
    assert_eq!(adopted.generation, 1);
}

#[test]
fn a_division_is_stale_after_a_write_of_ours_and_after_a_read_that_did_not_read_it() {
    let then = Now::new(boot("a"), written("l", 3));
    let mut division = read(None, rows_of(balanced(), None), &then);
    assert_eq!(division.stale(device(), &then), None);
    let later = Now::new(boot("a"), written("l", 4));
    assert!(matches!(
        division.stale(device(), &later),
        Some(Stale::Ended(Ended::WrittenSince(_)))
    ));
    division.not_read(Unread::new(200, "the helper timed out"));
    division.not_read(Unread::new(300, "the pool is off"));
    assert_eq!(
        division.stale(device(), &then),
        Some(Stale::NotRead(Unread::new(200, "the helper timed out"))),
        "the first read that did not read it is kept"
    );
}

#[test]
fn an_owner_token_is_printable_ascii_without_spaces_and_at_most_its_length() {
    use layout_model::{OWNER_MAX, Owner, OwnerError};
    assert_eq!(
        Owner::new("urn:uuid:5a3c9f0e-8a1b").unwrap().as_str(),
        "urn:uuid:5a3c9f0e-8a1b"
    );
    assert_eq!(Owner::new(""), Err(OwnerError::Empty));
    assert_eq!(
        Owner::new("vm 1"),
        Err(OwnerError::NotPrintable { found: ' ', at: 2 })
    );
    assert_eq!(
        Owner::new("x".repeat(OWNER_MAX + 1)),
        Err(OwnerError::TooLong {
            length: OWNER_MAX + 1
        })
    );
    assert!(
        serde_json::from_str::<Owner>("\"vm\\n1\"").is_err(),
        "a stored token is read as strictly"
    );
}

#[test]
fn a_recorded_instance_created_for_an_owner_is_its_owners_row() {
    use layout_model::{Owned, Owner, Placed};
    let owner = Owner::new("vm-7f2a").unwrap();
    let declared =
        NvidiaDeclared::new(&balanced_placed(), Board::default()).with_owners(&[Owned::new(
            Placed::new(9, Placement::new(4, 4)),
            owner.clone(),
        )]);
    let rows = rows_of(balanced(), Some(&declared));
    let owners: Vec<Option<&Owner>> = rows.iter().map(|row| row.owner.as_ref()).collect();
    assert_eq!(owners, [None, None, None, Some(&owner)]);
}

#[test]
fn an_owner_of_an_instance_the_declaration_does_not_place_is_dropped() {
    use layout_model::{Owned, Owner, Placed};
    let declared =
        NvidiaDeclared::new(&balanced_placed(), Board::default()).with_owners(&[Owned::new(
            Placed::new(0, Placement::new(0, 8)),
            Owner::new("gone").unwrap(),
        )]);
    assert!(declared.owners.is_empty());
}

#[test]
fn a_read_that_lost_a_profiles_name_keeps_the_generation() {
    let now = Now::new(boot("a"), written("l", 3));
    let first = read(None, rows_of(balanced(), None), &now);
    let mut nameless = rows_of(balanced(), None);
    for row in &mut nameless {
        if let PartitionProfile::Mig { name, .. } = &mut row.profile {
            *name = None;
        }
    }
    assert_eq!(read(Some(&first), nameless, &now).generation, 1);
}

/// The balanced layout declared, unnamed instances as `unnamed` says.
fn balanced_declared(unnamed: layout_model::Unnamed) -> NvidiaDeclared {
    NvidiaDeclared::new(&balanced_placed().unnamed(unnamed), Board::default())
}

fn unadmitted_on(card: &TestCard, declared: &NvidiaDeclared) -> Vec<layout_model::Placed> {
    layout_model::partition::unadmitted(&Card::of(&card.reply()).unwrap(), declared)
}

#[test]
fn a_card_that_holds_its_declared_division_or_none_of_it_admits_it() {
    let declared = balanced_declared(layout_model::Unnamed::Match);
    assert!(unadmitted_on(&TestCard::on(balanced()), &declared).is_empty());
    // After a reboot: nothing held, all of it can be made again.
    assert!(unadmitted_on(&TestCard::on(Vec::new()), &declared).is_empty());
}

#[test]
fn an_instance_nobody_declared_in_the_way_is_not_a_reason_to_reset_matched_or_adopted() {
    // A 3g.20gb at 0 sits where the 1g.5gb at 0 and 1 and the 2g.10gb at 2 are declared: a
    // restore destroys it (matched), or refuses (adopted: never destroyed, and a reset would).
    let card = TestCard::on(vec![Gi::new(8, 9, 0)]);
    for unnamed in [layout_model::Unnamed::Match, layout_model::Unnamed::Adopt] {
        let declared = balanced_declared(unnamed);
        assert!(unadmitted_on(&card, &declared).is_empty(), "{unnamed}");
    }
}

#[test]
fn a_placement_the_card_no_longer_lists_is_not_admitted() {
    let card = TestCard::on(Vec::new());
    let mut json = card.json();
    // The card lists the 3g.20gb at 0 only now.
    json["profiles"][2]["placements"] = serde_json::json!([{"start": 0, "size": 4}]);
    let reply = crate::common::reply_of(&json);
    let declared = balanced_declared(layout_model::Unnamed::Match);
    let refused = layout_model::partition::unadmitted(&Card::of(&reply).unwrap(), &declared);
    assert_eq!(
        refused,
        [layout_model::Placed::new(9, Placement::new(4, 4))]
    );
}

#[test]
fn a_card_with_mig_off_now_or_a_declaration_by_counts_says_nothing_is_unadmitted() {
    let mut off = TestCard::on(Vec::new());
    off.current = false;
    let declared = balanced_declared(layout_model::Unnamed::Match);
    assert!(unadmitted_on(&off, &declared).is_empty());
    let counted = NvidiaDeclared::new(&crate::common::balanced_counted(), Board::default());
    assert!(unadmitted_on(&TestCard::on(vec![Gi::new(8, 0, 0)]), &counted).is_empty());
}
