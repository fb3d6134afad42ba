//! The process section that ends plain `mx-smi` (and is what `--show-process` prints):
//!
//! ```text
//! +---------------------------------------------------------------------------------+
//! | Process:                                                                        |
//! |  GPU                    PID         Process Name                 GPU Memory     |
//! |                                                                  Usage(MiB)     |
//! |=================================================================================|
//! |  0                  3496691         python3.10                   4066           |
//! +---------------------------------------------------------------------------------+
//! ```
//!
//! An idle host prints `|  no process found  |` inside the borders instead of rows.

use super::error::ParseError;
use super::lines::{bordered, bordered_or, is_double_rule, is_edge, numbered, words_at};
use serde::Serialize;

const OUTPUT: &str = "the process section of mx-smi";

/// The column header of the section, word by word, as published.
const HEADER: [&str; 7] = [
    "GPU",
    "PID",
    "Process",
    "Name",
    "GPU",
    "Memory",
    "Usage(MiB)",
];

/// One row of the process section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GpuProcess {
    /// The GPU's index.
    pub gpu: u32,
    /// The process.
    pub pid: u32,
    /// Its name (it may hold spaces).
    pub name: String,
    /// GPU memory it uses, in MiB.
    pub memory_mib: u64,
}

impl GpuProcess {
    /// A row (for simulators and tests).
    pub fn new(gpu: u32, pid: u32, name: &str, memory_mib: u64) -> Self {
        Self {
            gpu,
            pid,
            name: name.to_owned(),
            memory_mib,
        }
    }
}

/// Reads the process section: the processes using the GPUs, empty only when the section says
/// `no process found`. No section, a column header other than the published one, a line that is
/// neither a row nor `no process found`, rows beside `no process found`, or a section cut short
/// (no closing `+---+`) is an error naming the line: never "idle".
pub fn parse_processes(text: &str) -> Result<Vec<GpuProcess>, ParseError> {
    let mut lines = numbered(text)
        .skip_while(|(_, line)| bordered(line).is_none_or(|inner| inner.trim() != "Process:"));
    if lines.next().is_none() {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "no `| Process: |` section in the output",
        });
    }
    let mut expected = HEADER.iter();
    let mut ruled = false;
    for (number, line) in lines.by_ref() {
        if is_double_rule(line) {
            if expected.next().is_some() {
                return Err(ParseError::line(
                    OUTPUT,
                    number,
                    line,
                    "the column header ends before GPU Memory Usage(MiB)",
                ));
            }
            ruled = true;
            break;
        }
        let inner = bordered_or(OUTPUT, number, line, "not a line of the column header")?;
        if inner
            .split_whitespace()
            .any(|word| expected.next() != Some(&word))
        {
            return Err(ParseError::line(
                OUTPUT,
                number,
                line,
                "not the published column header (GPU, PID, Process Name, GPU Memory Usage(MiB))",
            ));
        }
    }
    if !ruled {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "the section ends before its `|===|` rule (output cut short)",
        });
    }
    let mut processes = Vec::new();
    let mut idle_line = None;
    for (number, line) in lines {
        if is_edge(line) {
            return match (idle_line, processes.is_empty()) {
                (Some(_), true) => Ok(processes),
                (None, false) => Ok(processes),
                (Some((at, text)), false) => Err(ParseError::line(
                    OUTPUT,
                    at,
                    text,
                    "`no process found` beside process rows",
                )),
                (None, true) => Err(ParseError::line(
                    OUTPUT,
                    number,
                    line,
                    "the section ends with neither a row nor `no process found`",
                )),
            };
        }
        let inner = bordered_or(OUTPUT, number, line, "not a line of the section")?;
        if inner.trim().eq_ignore_ascii_case("no process found") {
            idle_line = Some((number, line));
            continue;
        }
        processes.push(row(inner).ok_or_else(|| {
            ParseError::line(
                OUTPUT,
                number,
                line,
                "not a row of GPU, PID, name and memory",
            )
        })?);
    }
    Err(ParseError::Missing {
        output: OUTPUT,
        why: "the section has no closing `+---+` rule (output cut short)",
    })
}

/// `GPU PID NAME… MEMORY`: the name is what stands between the pid and the memory.
fn row(inner: &str) -> Option<GpuProcess> {
    let words = words_at(inner);
    let [(_, gpu), (pid_at, pid), .., (memory_at, memory)] = words.as_slice() else {
        return None;
    };
    if words.len() < 4 {
        return None;
    }
    let name = inner[pid_at + pid.len()..*memory_at].trim();
    Some(GpuProcess {
        gpu: gpu.parse().ok()?,
        pid: pid.parse().ok()?,
        name: name.to_owned(),
        memory_mib: memory.parse().ok()?,
    })
}

/// For people: each pid once, with its name and the GPUs it uses, e.g.
/// `3496692 python3.10 (GPU 0, 1)`.
pub fn describe_processes(processes: &[GpuProcess]) -> String {
    let mut seen: Vec<(u32, &str, Vec<u32>)> = Vec::new();
    for process in processes {
        match seen.iter_mut().find(|(pid, _, _)| *pid == process.pid) {
            Some((_, _, gpus)) => gpus.push(process.gpu),
            None => seen.push((process.pid, &process.name, vec![process.gpu])),
        }
    }
    seen.iter()
        .map(|(pid, name, gpus)| {
            let gpus: Vec<String> = gpus.iter().map(u32::to_string).collect();
            format!("{pid} {name} (GPU {})", gpus.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_spaces_is_kept_whole() {
        let found = row("  3          77         my trainer v2                2048           ");
        assert_eq!(found, Some(GpuProcess::new(3, 77, "my trainer v2", 2048)));
    }

    #[test]
    fn a_row_without_a_name_does_not_read() {
        assert_eq!(row("  3     77     2048  "), None);
    }

    #[test]
    fn each_pid_is_described_once_with_its_gpus() {
        let processes = [
            GpuProcess::new(0, 1, "a", 1),
            GpuProcess::new(0, 2, "b c", 1),
            GpuProcess::new(1, 2, "b c", 1),
        ];
        assert_eq!(
            describe_processes(&processes),
            "1 a (GPU 0), 2 b c (GPU 0, 1)"
        );
    }
}
