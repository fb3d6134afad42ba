//! `nvidia-smi topo -m`: a matrix of devices; an `NV<n>` cell joins two GPUs by NVLink.
//!
//! ```text
//!         GPU0    GPU1    GPU2    GPU3    CPU Affinity    NUMA Affinity   GPU NUMA ID
//! GPU0     X      PHB     NV4     NODE    0-23    0               N/A
//! GPU1    PHB      X      NODE    NV4     0-23    0               N/A
//! ...
//! Legend:
//! ```
//!
//! The header names the device columns (`GPUn`, `NICn`, `mlx5_n`) before the affinity columns;
//! each GPU row holds a cell per device column, `X` where the row meets its own column and only
//! there. Separators are tabs or runs of spaces. A cell this reader does not know, an `X` off
//! that diagonal (or anything else on it), a short row, a device the header names twice, a GPU
//! with two rows or a missing GPU row is an error naming the line.

use crate::parse_error::{ParseError, numbered};
use std::collections::BTreeSet;

const OUTPUT: &str = "nvidia-smi topo -m";

/// The cells of the matrix other than `X` and `NV<n>`.
const PATHS: [&str; 6] = ["SYS", "NODE", "PHB", "PXB", "PIX", "NV#"];

/// The GPUs of the matrix (their indices) and the NVLink links between them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NvLinks {
    /// The GPUs, in the header's order.
    pub gpus: Vec<u32>,
    /// The linked pairs, smaller index first.
    pub links: BTreeSet<(u32, u32)>,
}

impl NvLinks {
    /// `gpus` and every GPU reachable from them over NVLink, sorted: what a reset must take
    /// together when the peers of a GPU must be reset with it.
    pub fn closure(&self, gpus: &[u32]) -> Vec<u32> {
        let mut group: BTreeSet<u32> = gpus.iter().copied().collect();
        loop {
            let before = group.len();
            for (a, b) in &self.links {
                if group.contains(a) || group.contains(b) {
                    group.insert(*a);
                    group.insert(*b);
                }
            }
            if group.len() == before {
                return group.into_iter().collect();
            }
        }
    }
}

fn gpu_index(token: &str) -> Option<u32> {
    token.strip_prefix("GPU")?.parse().ok()
}

/// A device of the matrix, as its name means it: a GPU by its index (so `GPU2` and `GPU02`
/// are one GPU), any other device by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Device<'a> {
    Gpu(u32),
    Other(&'a str),
}

impl<'a> Device<'a> {
    fn of(name: &'a str) -> Self {
        gpu_index(name).map_or(Device::Other(name), Device::Gpu)
    }
}

fn is_nvlink(cell: &str) -> bool {
    cell.strip_prefix("NV")
        .is_some_and(|count| !count.is_empty() && count.chars().all(|c| c.is_ascii_digit()))
}

/// Reads the matrix.
pub fn parse_nvlinks(text: &str) -> Result<NvLinks, ParseError> {
    let mut lines = numbered(text).filter(|(_, line)| !line.trim().is_empty());
    let Some((header_number, header)) = lines.next() else {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "no header row",
        });
    };
    let columns: Vec<Device<'_>> = header
        .split_whitespace()
        .take_while(|token| !matches!(*token, "CPU" | "NUMA" | "GPU"))
        .map(Device::of)
        .collect();
    let gpus: Vec<u32> = columns
        .iter()
        .filter_map(|column| match column {
            Device::Gpu(index) => Some(*index),
            Device::Other(_) => None,
        })
        .collect();
    if columns.iter().collect::<BTreeSet<_>>().len() != columns.len() {
        return Err(ParseError::line(
            OUTPUT,
            header_number,
            header,
            "a header row that names a device twice",
        ));
    }
    if gpus.is_empty() {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "no GPU column in the header row",
        });
    }
    let mut links = BTreeSet::new();
    let mut rows = BTreeSet::new();
    for (number, line) in lines {
        if line.trim_start().starts_with("Legend:") {
            break;
        }
        let bad = |why| ParseError::line(OUTPUT, number, line, why);
        let mut cells = line.split_whitespace();
        let Some(name) = cells.next() else { continue };
        let device = Device::of(name);
        if !columns.contains(&device) {
            return Err(bad("a row of a device the header does not name"));
        }
        let Device::Gpu(row) = device else {
            continue;
        };
        let cells: Vec<&str> = cells.take(columns.len()).collect();
        if cells.len() < columns.len() {
            return Err(bad("a row shorter than the header"));
        }
        if !rows.insert(row) {
            return Err(bad("a second row for the same GPU"));
        }
        for (column, cell) in columns.iter().zip(&cells) {
            if *cell != "X" && !is_nvlink(cell) && !PATHS.contains(cell) {
                return Err(bad("a cell this reader does not know"));
            }
            if (*column == device) != (*cell == "X") {
                return Err(bad("an X off the diagonal, or a device joined to itself"));
            }
            if let (Device::Gpu(other), true) = (*column, is_nvlink(cell)) {
                links.insert((row.min(other), row.max(other)));
            }
        }
    }
    if gpus.iter().any(|gpu| !rows.contains(gpu)) {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "a GPU of the header has no row (the output may be cut short)",
        });
    }
    Ok(NvLinks { gpus, links })
}
