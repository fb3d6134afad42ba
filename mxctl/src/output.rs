//! Printing results: text for people, or exactly one JSON document with `--json`.

use crate::failure::Failure;
use serde::Serialize;
use std::io::Write;

/// Where a command's result goes.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// Print JSON instead of text.
    pub json: bool,
}

impl Output {
    /// Prints `report` as JSON, or `text` for people.
    pub fn emit<T: Serialize>(self, report: &T, text: &str) -> Result<(), Failure> {
        let mut stdout = std::io::stdout().lock();
        let written = if self.json {
            serde_json::to_writer_pretty(&mut stdout, report)
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(stdout))
        } else {
            stdout.write_all(text.as_bytes())
        };
        written.map_err(|source| Failure::Output { source })
    }

    /// Reports a failure: the message on stderr, and with `--json` the error document on stdout.
    pub fn fail(self, failure: &Failure) {
        let message = failure.message();
        eprintln!("mxctl: error: {message}");
        if self.json {
            let document =
                serde_json::json!({"error": {"kind": failure.kind(), "message": message}});
            println!("{document:#}");
        }
    }
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
