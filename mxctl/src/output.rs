//! Printing results: text for people, or exactly one JSON document with `--json`.
//!
//! Every byte mxctl writes to stdout goes through [`stdout`], the one owner of what a closed
//! stdout means. Rust starts a program with SIGPIPE ignored, so a write to a pipe whose reader
//! has gone (`mxctl --json gpus | head -c 100`) fails with `EPIPE`, and `println!` panics on
//! it. Many tools restore SIGPIPE's default instead, and die on the write; mxctl does not, for
//! two reasons. It writes to stdout while it changes the cards (the live line of each step of
//! an apply, each state of a reset): a signal there would kill it between two steps, a GPU
//! unbound and not yet rebound, MIG on and its instances not yet made, a memory partition
//! requested and amdgpu not reloaded. Its state file is written whole (a temporary file, then
//! a rename), so it would not be torn, but the cards would be left half way and the report never
//! made. And it hands each helper its request on a pipe of the helper's stdin, whose write must
//! end in `EPIPE`, not in mxctl's death, when a helper exits without reading it. So the
//! signal stays ignored and `EPIPE` on stdout means only that nobody reads the rest: it is
//! dropped, the command goes on to its end, and mxctl exits with the command's own status.

use crate::failure::Failure;
use serde::Serialize;
use std::io::{ErrorKind, Write};

/// Where a command's result goes.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Print JSON instead of text.
    pub json: bool,
}

impl Output {
    /// Prints `report` as JSON, or `text` for people.
    pub fn emit<T: Serialize>(self, report: &T, text: &str) -> Result<(), Failure> {
        if self.json {
            let mut document =
                serde_json::to_vec_pretty(report).map_err(|error| Failure::Output {
                    source: std::io::Error::from(error),
                })?;
            document.push(b'\n');
            stdout(&document)
        } else {
            stdout(text.as_bytes())
        }
    }

    /// Reports a failure: the message on stderr, and with `--json` the error document on stdout.
    pub fn fail(self, failure: &Failure) {
        let message = failure.message();
        stderr(&format!("mxctl: error: {message}\n"));
        if self.json {
            let document =
                serde_json::json!({"error": {"kind": failure.kind(), "message": message}});
            // Already failing: a document that cannot be written has nowhere else to go, and
            // the exit status still says the command failed.
            let _ = stdout(format!("{document:#}\n").as_bytes());
        }
    }
}

/// Writes `bytes` to stdout whole. A reader that has gone (`EPIPE`, see the module's comment)
/// is not a failure: the bytes are dropped. Any other fault (a full disk under a redirect) is
/// [`Failure::Output`].
pub fn stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(()),
        written => written.map_err(|source| Failure::Output { source }),
    }
}

/// Writes a progress line (a step of an apply, a state of a reset) to stdout as it happens.
/// The line is not the result, and it is written while the cards change: one that cannot be
/// written is dropped with a warning, and the command goes on (its report, written at the
/// end, fails the command if stdout still cannot be written).
pub fn progress(line: &str) {
    if let Err(failure) = stdout(format!("{line}\n").as_bytes()) {
        tracing::warn!("a progress line is lost: {}", failure.message());
    }
}

/// Writes `text` to stderr, where mxctl says what went wrong. A stderr that cannot be written
/// (a closed pipe: `mxctl … 2>&1 | head -1`) leaves nowhere to say it, so the text is dropped
/// (`eprintln!` would panic there instead).
pub fn stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// Aligns `rows` in columns separated by two spaces (the last column is not padded).
pub fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            rows.iter()
                .filter_map(|row| row.get(column))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            if column + 1 == row.len() {
                line.push_str(cell);
            } else {
                let width = widths.get(column).copied().unwrap_or(0);
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// Writes `text` to `path` whole (a dot-file beside it, then a rename), with `mode`: what
/// `metrics --output` and `labels --output` leave for a collector that runs as another user.
pub fn write_file(path: &std::path::Path, text: &[u8], mode: u32) -> Result<(), Failure> {
    let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
        return Err(Failure::Usage(format!(
            "--output needs a file name, not {}",
            path.display()
        )));
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    gpu_host_probe::fs::write_atomic_mode(dir, name, text, mode)?;
    Ok(())
}
