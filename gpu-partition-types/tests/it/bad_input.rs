//! Bytes that are not a stream of JSON objects: refused at the root with a clear message, never
//! a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_partition_types::{RefusedReply, Reply, VersionReply};

fn refused(input: &[u8]) -> RefusedReply {
    match Reply::from_json(input, Some(&device())) {
        Ok(reply) => panic!("accepted: {reply:?}"),
        Err(refusal) => refusal,
    }
}

fn assert_root(input: &[u8], words: &str) {
    let refusal = refused(input);
    assert_eq!(refusal.pointer.to_string(), "", "{refusal}");
    assert!(
        refusal.message.contains(words),
        "{:?} lacks {words:?}",
        refusal.message
    );
}

#[test]
fn empty_input_is_refused_as_empty() {
    assert_root(b"", "empty");
}

#[test]
fn whitespace_only_is_refused_as_empty() {
    assert_root(b" \n\t ", "empty");
}

#[test]
fn text_that_is_not_json_is_refused() {
    assert_root(b"MIG mode: Enabled", "not a stream of JSON objects");
}

#[test]
fn a_json_array_is_refused_as_not_an_object() {
    assert_root(b"[{}]", "expected a reply object, found a list");
}

#[test]
fn a_json_string_is_refused_as_not_an_object() {
    assert_root(br#""reply""#, "expected a reply object");
}

#[test]
fn trailing_garbage_after_a_reply_is_refused() {
    let mut input = sample().to_json().into_bytes();
    input.extend_from_slice(b" garbage");
    assert_root(&input, "not a stream of JSON objects");
}

#[test]
fn a_truncated_reply_is_refused() {
    let text = sample().to_json();
    for cut in [1, text.len() / 3, text.len() / 2, text.len() - 1] {
        assert_root(&text.as_bytes()[..cut], "EOF");
    }
}

#[test]
fn invalid_utf8_is_refused_even_inside_a_lenient_member() {
    let text = sample().to_json().replace("3g.71gb", "3g.\u{1}71gb");
    let mut bytes = text.into_bytes();
    let at = bytes.iter().position(|b| *b == 1).unwrap();
    bytes[at] = 0xff;
    assert_root(&bytes, "not UTF-8");
}

#[test]
fn nesting_deeper_than_128_levels_in_an_unknown_member_is_refused() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let text = sample()
        .to_json()
        .replacen('{', &format!("{{\"later\": {deep},"), 1);
    assert_root(text.as_bytes(), "recursion limit");
}

#[test]
fn nesting_inside_the_limit_in_an_unknown_member_is_skipped_and_the_member_listed() {
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let text = sample()
        .to_json()
        .replacen('{', &format!("{{\"later\": {deep},"), 1);
    let mut reply = Reply::from_json(text.as_bytes(), Some(&device())).unwrap();
    let listed: Vec<String> = reply
        .unknown_members
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(listed, ["/later (array)"]);
    reply.unknown_members.clear();
    assert_eq!(reply, sample());
}

#[test]
fn a_number_beyond_u64_costs_only_its_lenient_member() {
    let text = sample().to_json().replace(
        r#""type_id":1123"#,
        r#""type_id":123456789012345678901234567890"#,
    );
    let read = Reply::from_json(text.as_bytes(), Some(&device()));
    assert_eq!(lost(&read), ["/vgpus/0/type_id"]);
}

#[test]
fn a_float_costs_only_its_lenient_member() {
    let text = sample()
        .to_json()
        .replace(r#""free_instances":1"#, r#""free_instances":0.5"#);
    let read = Reply::from_json(text.as_bytes(), Some(&device()));
    assert_eq!(
        lost(&read),
        ["/profiles/0/free_instances", "/profiles/1/free_instances"]
    );
}

#[test]
fn a_version_reply_that_is_not_json_is_refused_at_the_root() {
    let refusal = VersionReply::from_json(b"gpu-partition-helper 1.2.0").unwrap_err();
    assert_eq!(refusal.pointer.to_string(), "");
}

#[test]
fn two_version_replies_are_refused() {
    let one = r#"{"commands": []}"#;
    let refusal = VersionReply::from_json(format!("{one}{one}").as_bytes()).unwrap_err();
    assert!(refusal.message.contains("one JSON object"), "{refusal}");
}
