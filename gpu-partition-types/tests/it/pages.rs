//! Folding a stream of pages into one reply: numbering, agreement and join order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_partition_types::{RefusedReply, Reply};
use serde_json::{Value, json};

fn pages(size: usize) -> Vec<Value> {
    sample()
        .to_pages(size)
        .iter()
        .map(|page| serde_json::from_str(page).unwrap())
        .collect()
}

fn read_pages(pages: &[Value]) -> Result<Reply, RefusedReply> {
    let text: Vec<String> = pages.iter().map(Value::to_string).collect();
    Reply::from_json(text.join("\n").as_bytes(), Some(&device()))
}

/// Where the read of `pages` is refused: the pointer, and the page when it names one.
fn refused_at(pages: &[Value]) -> (String, Option<usize>) {
    let refusal = read_pages(pages).unwrap_err();
    (refusal.pointer.to_string(), refusal.page)
}

#[test]
fn pages_of_one_item_fold_back_into_the_reply() {
    let pages = pages(1);
    assert_eq!(pages.len(), 2);
    assert_eq!(read_pages(&pages).ok(), Some(sample()));
}

#[test]
fn pages_in_any_order_join_their_lists_in_page_order() {
    let mut pages = pages(1);
    pages.reverse();
    assert_eq!(read_pages(&pages).ok(), Some(sample()));
}

#[test]
fn pages_need_no_whitespace_between_them() {
    let text: String = sample().to_pages(1).concat();
    assert_eq!(
        Reply::from_json(text.as_bytes(), Some(&device())).ok(),
        Some(sample())
    );
}

#[test]
fn a_list_absent_from_one_page_counts_as_empty_there() {
    let mut pages = pages(1);
    pages[1].as_object_mut().unwrap().remove("gpu_instances");
    let reply = read_pages(&pages).unwrap();
    assert_eq!(reply, sample());
}

#[test]
fn a_list_absent_from_every_page_is_lost() {
    let mut pages = pages(1);
    for page in &mut pages {
        page.as_object_mut().unwrap().remove("vgpus");
    }
    assert_eq!(lost(&read_pages(&pages)), ["/vgpus"]);
}

#[test]
fn a_list_that_is_not_a_list_on_one_page_is_lost() {
    let mut pages = pages(1);
    pages[1]["profiles"] = json!("none");
    assert_eq!(lost(&read_pages(&pages)), ["/profiles"]);
}

#[test]
fn a_lost_element_of_a_later_page_is_named_by_its_index_in_the_joined_list() {
    let mut pages = pages(1);
    pages[1]["vgpus"][0]
        .as_object_mut()
        .unwrap()
        .remove("type_id");
    pages[1]["profiles"][0]
        .as_object_mut()
        .unwrap()
        .remove("id");
    assert_eq!(
        lost(&read_pages(&pages)),
        ["/profiles/1", "/vgpus/1/type_id"]
    );
}

#[test]
fn non_list_members_come_from_page_zero() {
    let mut pages = pages(1);
    pages[1]["driver"] = json!({"version": "other", "nvml_version": "other"});
    assert_eq!(read_pages(&pages).ok(), Some(sample()));
}

#[test]
fn a_missing_page_refuses_the_reply() {
    let mut pages = pages(1);
    for page in &mut pages {
        page["page"]["count"] = json!(3);
    }
    let refusal = read_pages(&pages).unwrap_err();
    assert_eq!(refusal.pointer.to_string(), "/page");
    assert!(
        refusal.message.contains("page index 2 of 3 is missing"),
        "{refusal}"
    );
}

#[test]
fn a_lone_later_page_refuses_the_reply() {
    let mut pages = pages(1);
    pages.remove(0);
    let refusal = read_pages(&pages).unwrap_err();
    assert_eq!(refusal.pointer.to_string(), "/page");
    assert!(refusal.message.contains("page 1 of 2"), "{refusal}");
}

#[test]
fn a_repeated_page_refuses_the_reply() {
    let mut pages = pages(1);
    pages.push(pages[1].clone());
    assert_eq!(refused_at(&pages), ("/page".into(), Some(2)));
}

#[test]
fn pages_that_disagree_on_the_count_refuse_the_reply() {
    let mut pages = pages(1);
    pages[1]["page"] = json!({"index": 1, "count": 3});
    assert_eq!(refused_at(&pages), ("/page".into(), Some(1)));
}

#[test]
fn an_unnumbered_page_among_several_refuses_the_reply() {
    let mut pages = pages(1);
    pages[1].as_object_mut().unwrap().remove("page");
    assert_eq!(refused_at(&pages), ("/page".into(), Some(1)));
}

#[test]
fn pages_that_disagree_on_the_mode_refuse_the_reply_naming_mode_and_page() {
    let mut pages = pages(1);
    pages[1]["mode"]["pending"] = json!("disabled");
    assert_eq!(refused_at(&pages), ("/mode".into(), Some(1)));
}

#[test]
fn pages_that_disagree_on_the_format_minor_refuse_the_reply() {
    let mut pages = pages(1);
    pages[0]["format"] = json!("1.0");
    assert_eq!(refused_at(&pages), ("/format".into(), Some(1)));
}

#[test]
fn pages_that_disagree_on_the_case_refuse_the_reply() {
    let mut pages = pages(1);
    pages[1]["case"] = json!("none_carved");
    let refusal = read_pages(&pages).unwrap_err();
    assert_eq!(refusal.pointer.to_string(), "/case");
}

#[test]
fn a_strict_fault_on_a_later_page_names_that_page() {
    let mut pages = pages(1);
    pages[1]["mode"]["current"] = json!("on");
    assert_eq!(refused_at(&pages), ("/mode/current".into(), Some(1)));
}

#[test]
fn an_unknown_member_on_a_later_page_is_listed_at_its_place_in_the_joined_list() {
    let mut pages = pages(1);
    assert_eq!(pages[1]["profiles"].as_array().map(Vec::len), Some(1));
    pages[1]["profiles"][0]["engines"] = json!(7);
    let reply = read_pages(&pages).unwrap();
    let listed: Vec<String> = reply
        .unknown_members
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(listed, ["/profiles/1/engines (number)"]);
}
