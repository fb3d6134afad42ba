//! Matching two catalogues of one card by signature.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_partition_types::{Enumerated, JsonPointer, Lenient, LostMember, Problem, renumbered};

#[test]
fn a_profile_whose_id_changed_is_reported_as_renumbered() {
    let old = [profile(9, "3g.71gb", 3), profile(19, "1g.18gb", 1)];
    let new = [profile(9, "3g.71gb", 3), profile(20, "1g.18gb", 1)];
    let found = renumbered(&old, &new);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].old_id, found[0].new_id), (19, 20));
    assert_eq!(found[0].signature, signature(1, &["p2p"]));
}

#[test]
fn a_renamed_profile_with_the_same_id_and_signature_is_not_renumbered() {
    let old = [profile(19, "1g.11gb", 1)];
    let new = [profile(19, "1g.12gb", 1)];
    assert!(renumbered(&old, &new).is_empty());
}

#[test]
fn signatures_match_whatever_the_order_of_their_capabilities() {
    let mut old = profile(5, "a", 2);
    let mut new = profile(6, "a", 2);
    old.signature = Lenient::Read(signature(2, &["p2p", "gfx"]));
    new.signature = Lenient::Read(signature(2, &["gfx", "p2p"]));
    assert_eq!(renumbered(&[old], &[new]).len(), 1);
}

#[test]
fn a_signature_shared_by_two_profiles_matches_nothing() {
    let old = [profile(1, "a", 1), profile(2, "b", 1)];
    let new = [profile(3, "a", 1)];
    assert!(renumbered(&old, &new).is_empty());
}

#[test]
fn a_profile_whose_signature_was_lost_takes_no_part() {
    let mut lost = profile(4, "a", 1);
    lost.signature = Lenient::Lost(LostMember::new(
        JsonPointer::root(),
        Problem::Absent,
        "missing member",
    ));
    assert!(renumbered(&[lost], &[profile(7, "a", 1)]).is_empty());
}

#[test]
fn an_unknown_capability_is_part_of_the_signature() {
    let mut old = profile(1, "a", 1);
    old.signature
        .read_mut()
        .unwrap()
        .capabilities
        .push(Enumerated::from_wire("nvlink"));
    let new = profile(2, "a", 1);
    assert!(renumbered(&[old], &[new]).is_empty());
}
