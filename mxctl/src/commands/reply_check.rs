//! `mxctl reply check`: decode a helper reply as the probe would, and say what it gives.

use crate::cli::ReplyCheck;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_partition_types::{Case, PartitionMode, RefusedReply, Reply};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

/// The `--json` document.
#[derive(Debug, Serialize)]
struct CheckReport {
    accepted: bool,
    error: Option<CheckError>,
    outcome: Option<Case>,
    partition_mode: Option<PartitionMode>,
    lost: Vec<String>,
    unknown: Vec<String>,
    /// The members the reader does not know, skipped.
    unknown_members: Vec<UnknownMemberReport>,
}

#[derive(Debug, Serialize)]
struct UnknownMemberReport {
    pointer: String,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Debug, Serialize)]
struct CheckError {
    pointer: String,
    message: String,
    /// The page's position in the stream, when the reply had several.
    #[serde(skip_serializing_if = "Option::is_none")]
    page: Option<usize>,
}

/// Runs the check; the exit code is 0 when the reply is accepted, 1 when refused.
pub fn run(args: &ReplyCheck, output: Output) -> Result<Exit, Failure> {
    let input = read_input(args.file.as_deref())?;
    let (report, text) = match Reply::from_json(&input, args.device.as_ref()) {
        Ok(reply) => accepted(&reply),
        Err(refusal) => refused(&refusal),
    };
    output.emit(&report, &text)?;
    Ok(if report.accepted {
        Exit::Done
    } else {
        Exit::Failed
    })
}

fn read_input(file: Option<&Path>) -> Result<Vec<u8>, Failure> {
    let mut input = Vec::new();
    match file {
        None => read_stdin(&mut input)?,
        Some(path) if path == Path::new("-") => read_stdin(&mut input)?,
        Some(path) => {
            input = std::fs::read(path).map_err(|source| Failure::Input {
                what: path.display().to_string(),
                source,
            })?;
        }
    }
    Ok(input)
}

fn read_stdin(input: &mut Vec<u8>) -> Result<(), Failure> {
    std::io::stdin()
        .lock()
        .read_to_end(input)
        .map(drop)
        .map_err(|source| Failure::Input {
            what: "standard input".to_owned(),
            source,
        })
}

fn accepted(reply: &Reply) -> (CheckReport, String) {
    let outcome = reply.outcome();
    let lost = reply.lost();
    let unknown = reply.unknown();
    let mut text = String::new();
    let _ = writeln!(text, "accepted:       yes");
    let _ = writeln!(text, "outcome:        {}", outcome.case());
    let _ = writeln!(text, "partition_mode: {}", outcome.partition_mode());
    if let Some(reason) = outcome.reason() {
        let _ = writeln!(text, "reason:         {reason}");
    }
    for member in &lost {
        tracing::debug!("lost {}: {}", member.pointer, member.message);
        let _ = writeln!(
            text,
            "lost:           {} ({}: {})",
            member.pointer, member.problem, member.message
        );
    }
    for pointer in &unknown {
        let _ = writeln!(text, "unknown:        {pointer}");
    }
    for member in &reply.unknown_members {
        let _ = writeln!(text, "unknown member: {member}");
    }
    if let Some(unreadable) = &reply.unreadable {
        match unreadable.message.as_result() {
            Ok(message) => tracing::debug!("unreadable: {}: {message}", unreadable.kind),
            Err(lost) => tracing::debug!("unreadable.message lost: {lost}"),
        }
    }
    let report = CheckReport {
        accepted: true,
        error: None,
        outcome: Some(outcome.case()),
        partition_mode: Some(outcome.partition_mode()),
        lost: lost
            .iter()
            .map(|member| member.pointer.to_string())
            .collect(),
        unknown: unknown.iter().map(ToString::to_string).collect(),
        unknown_members: reply
            .unknown_members
            .iter()
            .map(|member| UnknownMemberReport {
                pointer: member.pointer.to_string(),
                kind: member.kind.as_str(),
            })
            .collect(),
    };
    (report, text)
}

fn refused(refusal: &RefusedReply) -> (CheckReport, String) {
    tracing::debug!("{refusal}");
    let pointer = refusal.pointer.to_string();
    let mut text = String::new();
    let _ = writeln!(text, "accepted:       no");
    let page = refusal
        .page
        .map(|page| format!(" (page {page} of the stream)"))
        .unwrap_or_default();
    let _ = writeln!(
        text,
        "error:          {pointer:?}{page}: {}",
        refusal.message
    );
    let report = CheckReport {
        accepted: false,
        error: Some(CheckError {
            pointer,
            message: refusal.message.clone(),
            page: refusal.page,
        }),
        outcome: None,
        partition_mode: None,
        lost: Vec::new(),
        unknown: Vec::new(),
        unknown_members: Vec::new(),
    };
    (report, text)
}
