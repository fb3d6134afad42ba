//! Every example of `docs/helper-protocol.md` decodes as the document says under it: the fenced
//! blocks whose info string starts `json example` carry what the reader must find (`kind` is
//! `reply`, `refused` or `version`; then `key=value` words).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::{ApplyAnswer, ApplyRequest, Bdf, Outcome, Reply, VersionReply};
use std::collections::BTreeMap;

const DOC: &str = include_str!("../../../docs/helper-protocol.md");

struct Example {
    line: usize,
    kind: String,
    expect: BTreeMap<String, String>,
    text: String,
}

fn examples() -> Vec<Example> {
    let mut found = Vec::new();
    let mut lines = DOC.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        let Some(info) = line.strip_prefix("```json example ") else {
            continue;
        };
        let mut words = info.split_whitespace();
        let kind = words.next().unwrap().to_owned();
        let expect = words
            .map(|word| {
                let (key, value) = word.split_once('=').unwrap();
                (key.to_owned(), value.to_owned())
            })
            .collect();
        let text: Vec<&str> = lines
            .by_ref()
            .map(|(_, line)| line)
            .take_while(|line| *line != "```")
            .collect();
        found.push(Example {
            line: number + 1,
            kind,
            expect,
            text: text.join("\n"),
        });
    }
    found
}

fn list(value: Option<&String>) -> Vec<String> {
    match value.map(String::as_str) {
        None | Some("-") => Vec::new(),
        Some(items) => items.split(',').map(str::to_owned).collect(),
    }
}

fn check_reply(example: &Example) {
    let at = example.line;
    let device: Bdf = example.expect["device"].parse().unwrap();
    let reply = Reply::from_json(example.text.as_bytes(), Some(&device))
        .unwrap_or_else(|refusal| panic!("line {at}: refused: {refusal}"));
    let outcome = reply.outcome();
    assert_eq!(
        outcome.case().to_string(),
        example.expect["outcome"],
        "line {at}"
    );
    if let Some(mode) = example.expect.get("mode") {
        assert_eq!(&outcome.partition_mode().to_string(), mode, "line {at}");
    }
    if let Some(reason) = example.expect.get("reason") {
        assert_eq!(
            outcome.reason().map(ToString::to_string).as_ref(),
            Some(reason),
            "line {at}"
        );
    }
    let lost: Vec<String> = reply.lost().iter().map(|l| l.pointer.to_string()).collect();
    assert_eq!(lost, list(example.expect.get("lost")), "line {at}: lost");
    let unknown: Vec<String> = reply.unknown().iter().map(ToString::to_string).collect();
    assert_eq!(
        unknown,
        list(example.expect.get("unknown")),
        "line {at}: unknown"
    );
    if let Some(ids) = example.expect.get("profiles") {
        let catalogue = match &outcome {
            Outcome::Partitions { catalogue, .. } | Outcome::NoneCarved { catalogue, .. } => {
                catalogue
                    .iter()
                    .map(|p| p.id.to_string())
                    .collect::<Vec<_>>()
            }
            other => panic!("line {at}: no catalogue in {other:?}"),
        };
        assert_eq!(catalogue, list(Some(ids)), "line {at}: profiles");
    }
}

#[test]
fn every_example_of_the_protocol_decodes_as_the_document_says() {
    let examples = examples();
    let kinds: Vec<&str> = examples.iter().map(|e| e.kind.as_str()).collect();
    for kind in [
        "version",
        "reply",
        "refused",
        "request",
        "request-refused",
        "answer",
    ] {
        assert!(kinds.contains(&kind), "no {kind} example in the document");
    }
    for example in &examples {
        let at = example.line;
        // A refused example is refused at the pointer the document gives (none: accepted).
        let refused_at = |pointer: Option<String>, what: &str| {
            let pointer = pointer.unwrap_or_else(|| panic!("line {at}: the {what} was accepted"));
            assert_eq!(pointer, example.expect["pointer"], "line {at}");
        };
        match example.kind.as_str() {
            "reply" => check_reply(example),
            "refused" => {
                let device: Bdf = example.expect["device"].parse().unwrap();
                refused_at(
                    Reply::from_json(example.text.as_bytes(), Some(&device))
                        .err()
                        .map(|refusal| refusal.pointer.to_string()),
                    "reply",
                );
            }
            "version" => {
                let version = VersionReply::from_json(example.text.as_bytes()).unwrap();
                let read = version.negotiate_read().unwrap();
                assert_eq!(read.to_string(), example.expect["read"], "line {at}");
            }
            "request" => {
                let request = ApplyRequest::from_json(example.text.as_bytes())
                    .unwrap_or_else(|refused| panic!("line {at}: {refused}"));
                assert_eq!(
                    request.steps.len().to_string(),
                    example.expect["steps"],
                    "line {at}"
                );
            }
            "request-refused" => refused_at(
                ApplyRequest::from_json(example.text.as_bytes())
                    .err()
                    .map(|refused| refused.pointer.to_string()),
                "request",
            ),
            "answer" => {
                let device: Bdf = example.expect["device"].parse().unwrap();
                let answer = ApplyAnswer::from_json(example.text.as_bytes(), &device)
                    .unwrap_or_else(|refused| panic!("line {at}: {refused}"));
                let results: Vec<String> = answer
                    .results
                    .iter()
                    .map(|r| format!("{}:{}", r.op, r.outcome.as_str()))
                    .collect();
                assert_eq!(results, list(example.expect.get("results")), "line {at}");
                assert_eq!(
                    answer.reply.outcome().partition_mode().to_string(),
                    example.expect["mode"],
                    "line {at}"
                );
            }
            other => panic!("line {at}: an example of unknown kind {other}"),
        }
    }
}

#[test]
fn every_reply_case_has_an_example() {
    let cases: Vec<String> = examples()
        .iter()
        .filter_map(|e| e.expect.get("outcome").cloned())
        .collect();
    for case in ["partitions", "none_carved", "unreadable", "not_applicable"] {
        assert!(cases.iter().any(|c| c == case), "no example of {case}");
    }
}
