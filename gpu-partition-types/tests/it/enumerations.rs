//! Each enumeration's spelling: only the exact lower-case token is known; anything else is
//! kept as unknown with its text. And the one renamed member.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_partition_types::{Capability, Case, Enumerated, MigState, PartitionMode, Token};
use serde_json::json;

fn spellings<T: Token>() {
    for value in T::ALL {
        let token = value.as_str();
        assert_eq!(Enumerated::<T>::from_wire(token), Enumerated::Known(*value));
        let mut first_upper = token.to_owned();
        first_upper[..1].make_ascii_uppercase();
        for other in [
            token.to_uppercase(),
            first_upper,
            format!(" {token}"),
            format!("{token} "),
        ] {
            let read = Enumerated::<T>::from_wire(&other);
            assert_eq!((read.known(), read.as_str()), (None, other.as_str()));
            assert!(matches!(read, Enumerated::Unknown(_)));
        }
    }
}

#[test]
fn mig_state_reads_only_its_exact_lower_case_spellings() {
    spellings::<MigState>();
}

#[test]
fn case_reads_only_its_exact_lower_case_spellings() {
    spellings::<Case>();
}

#[test]
fn capability_reads_only_its_exact_lower_case_spellings() {
    spellings::<Capability>();
}

#[test]
fn partition_mode_reads_only_its_exact_lower_case_spellings() {
    spellings::<PartitionMode>();
}

#[test]
fn an_unknown_value_writes_back_its_text_unchanged() {
    let value = Enumerated::<MigState>::from_wire("On");
    assert_eq!(serde_json::to_value(&value).unwrap(), json!("On"));
}

#[test]
fn a_known_value_writes_its_token() {
    let value: Enumerated<Capability> = Capability::Gfx.into();
    assert_eq!(serde_json::to_value(&value).unwrap(), json!("gfx"));
}

#[test]
fn a_capitalised_capability_is_kept_as_unknown() {
    let read = edited(|v| {
        set(
            v,
            "/profiles/1/signature/capabilities",
            json!(["P2P", "gfx"]),
        )
    });
    assert_eq!(unknown(&read), ["/profiles/1/signature/capabilities/0"]);
}

#[test]
fn the_vgpu_type_is_read_from_and_written_to_the_member_named_type() {
    let written = written();
    assert_eq!(written["vgpus"][0]["type"], json!("NVIDIA H200-3-71C"));
    assert!(written["vgpus"][0].get("vgpu_type").is_none());
}

#[test]
fn a_member_named_vgpu_type_is_not_the_vgpu_type() {
    let read = edited(|v| {
        remove(v, "/vgpus/0/type");
        set(v, "/vgpus/0/vgpu_type", json!("NVIDIA H200-3-71C"))
    });
    assert_eq!(lost(&read), ["/vgpus/0/type"]);
}

#[test]
fn a_known_spelling_read_as_enumerated_is_the_known_value_and_one_signature() {
    assert_eq!(
        Enumerated::<Capability>::from_wire("p2p"),
        Enumerated::Known(Capability::P2p)
    );
    let a = signature(1, &["p2p", "gfx"]);
    let mut b = signature(1, &["gfx"]);
    b.capabilities
        .push(Enumerated::<Capability>::from_wire("p2p"));
    assert_eq!(a.normalized(), b.normalized());
}
