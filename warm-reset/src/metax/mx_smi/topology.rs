//! `mx-smi topo -m`: the device link matrix. `MX` joins two GPUs by MetaXLink; the cards joined
//! by `MX` form the interconnect groups the kernel driver resets together.
//!
//! ```text
//! Attached GPUs                                     : 8
//! Device link type matrix
//!         GPU0    GPU1    GPU2    …    Node Affinity  CPU Affinity
//! GPU0    X       MX      NODE    …    0              0-31,64-95
//! …
//!
//! Legend:
//! ```
//!
//! The matrix names GPUs `GPU<n>`, the numbers `mx-smi -L` shows as `GPU#<n>`. Columns after the
//! GPU columns (affinities, and the `NIC<n>` columns of `topo -n`) are not links and are left.

use super::error::ParseError;
use super::lines::numbered;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

const OUTPUT: &str = "mx-smi topo -m";

/// The MetaXLink links between the GPUs of a host.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Topology {
    /// The GPUs of the matrix, in its order.
    pub nodes: Vec<u32>,
    /// Each `MX` link, as (lower node, higher node).
    pub links: BTreeSet<(u32, u32)>,
}

impl Topology {
    /// A topology of `nodes` with these links (for simulators and tests).
    pub fn new(nodes: Vec<u32>, links: impl IntoIterator<Item = (u32, u32)>) -> Self {
        Self {
            nodes,
            links: links
                .into_iter()
                .map(|(a, b)| (a.min(b), a.max(b)))
                .collect(),
        }
    }

    /// The interconnect group of `node`: itself and every GPU joined to it through `MX` links,
    /// sorted; `None` when the matrix does not name it.
    pub fn group_of(&self, node: u32) -> Option<Vec<u32>> {
        if !self.nodes.contains(&node) {
            return None;
        }
        let mut group = BTreeSet::from([node]);
        let mut frontier = vec![node];
        while let Some(at) = frontier.pop() {
            for &(a, b) in &self.links {
                let next = if a == at {
                    b
                } else if b == at {
                    a
                } else {
                    continue;
                };
                if group.insert(next) {
                    frontier.push(next);
                }
            }
        }
        Some(group.into_iter().collect())
    }

    /// The links of `self` that `after` no longer has.
    pub fn lost_links(&self, after: &Topology) -> Vec<(u32, u32)> {
        self.links.difference(&after.links).copied().collect()
    }

    /// The matrix as `mx-smi topo -m` prints it (for simulators and tests).
    pub fn to_text(&self) -> String {
        let mut text = String::from(
            "=================== MetaX System Management Interface Log ===================\n",
        );
        text.push_str(&format!(
            "Attached GPUs                                     : {}\nDevice link type matrix\n        ",
            self.nodes.len()
        ));
        for node in &self.nodes {
            text.push_str(&format!("{:<8}", format!("GPU{node}")));
        }
        text.push_str("Node Affinity  CPU Affinity\n");
        for &row in &self.nodes {
            text.push_str(&format!("{:<8}", format!("GPU{row}")));
            for &column in &self.nodes {
                let cell = if row == column {
                    "X"
                } else if self.links.contains(&(row.min(column), row.max(column))) {
                    "MX"
                } else {
                    "NODE"
                };
                text.push_str(&format!("{cell:<8}"));
            }
            text.push_str("0              0-31,64-95\n");
        }
        text.push_str("\nLegend:\n  X    = Self\n  MX   = Connection traversing MetaXLink\n");
        text
    }
}

/// `GPU<n>` → n.
fn gpu_label(word: &str) -> Option<u32> {
    let digits = word.strip_prefix("GPU")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A link cell: `X`, `MX`, `SYS`, `NODE`, `PIX`, … (upper-case letters and digits).
fn is_cell(word: &str) -> bool {
    word.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// Reads the matrix: the first line whose first word is `GPU<n>` is its header (the GPU
/// columns, then any other columns); one row per GPU follows, in the header's order, with `X` on
/// the diagonal only; a blank line, `Legend:` or the end follows the last row. An `Attached
/// GPUs` count other than the matrix's, a row out of place, a cell that is not a link token, a
/// link seen from one side only, or a matrix cut short is an error naming the line.
pub fn parse_topology(text: &str) -> Result<Topology, ParseError> {
    let mut attached: Option<(usize, &str, usize)> = None;
    let mut lines = numbered(text);
    let mut header = None;
    for (number, line) in lines.by_ref() {
        let mut words = line.split_whitespace();
        if words.next().and_then(gpu_label).is_some() {
            header = Some((number, line));
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            if key.trim() == "Attached GPUs" {
                let count = value.trim().parse().map_err(|_| {
                    ParseError::line(OUTPUT, number, line, "the GPU count is not a number")
                })?;
                attached = Some((number, line, count));
            }
        }
    }
    let Some((header_at, header_line)) = header else {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "no `GPU0 GPU1 …` header: no link matrix in the output",
        });
    };
    let nodes: Vec<u32> = header_line
        .split_whitespace()
        .map_while(gpu_label)
        .collect();
    if nodes.iter().collect::<BTreeSet<_>>().len() != nodes.len() {
        return Err(ParseError::line(
            OUTPUT,
            header_at,
            header_line,
            "a GPU named twice",
        ));
    }
    if let Some((number, line, count)) = attached {
        if count != nodes.len() {
            return Err(ParseError::line(
                OUTPUT,
                number,
                line,
                "the count differs from the matrix's GPUs",
            ));
        }
    }
    let mut cells: Vec<Vec<&str>> = Vec::new();
    for (row, &node) in nodes.iter().enumerate() {
        let Some((number, line)) = lines.next() else {
            return Err(ParseError::Missing {
                output: OUTPUT,
                why: "the matrix ends before its last row (output cut short)",
            });
        };
        let bad = |why| ParseError::line(OUTPUT, number, line, why);
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first().and_then(|w| gpu_label(w)) != Some(node) {
            return Err(bad("not the matrix row of the next GPU"));
        }
        let Some(links) = words.get(1..=nodes.len()) else {
            return Err(bad("a row shorter than the matrix"));
        };
        for (column, cell) in links.iter().enumerate() {
            let diagonal = column == row;
            if !is_cell(cell) || (*cell == "X") != diagonal {
                return Err(bad("a cell that is not a link (`X` on the diagonal only)"));
            }
        }
        cells.push(links.to_vec());
    }
    if let Some((number, line)) = lines.next() {
        let line_trimmed = line.trim();
        if !(line_trimmed.is_empty() || line_trimmed.starts_with("Legend")) {
            return Err(ParseError::line(
                OUTPUT,
                number,
                line,
                "more than the matrix's rows",
            ));
        }
    }
    let mut links = BTreeSet::new();
    for (row, &a) in nodes.iter().enumerate() {
        for (column, &b) in nodes.iter().enumerate() {
            let here = cells[row][column] == "MX";
            let there = cells[column][row] == "MX";
            if here != there {
                let number = header_at + 1 + row;
                let line = text.lines().nth(number - 1).unwrap_or_default();
                return Err(ParseError::line(
                    OUTPUT,
                    number,
                    line,
                    "a MetaXLink seen from one side only",
                ));
            }
            if here && a < b {
                links.insert((a, b));
            }
        }
    }
    Ok(Topology { nodes, links })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_follow_links_through_other_gpus() {
        let topology = Topology::new(vec![0, 1, 2, 3], [(0, 1), (1, 2)]);
        assert_eq!(topology.group_of(2), Some(vec![0, 1, 2]));
        assert_eq!(topology.group_of(3), Some(vec![3]));
        assert_eq!(topology.group_of(9), None);
    }

    #[test]
    fn a_printed_matrix_reads_back_the_same() {
        let topology = Topology::new(vec![0, 1, 2, 3], [(0, 1), (2, 3)]);
        assert_eq!(parse_topology(&topology.to_text()), Ok(topology));
    }

    #[test]
    fn lost_links_are_those_no_longer_there() {
        let before = Topology::new(vec![0, 1, 2], [(0, 1), (1, 2)]);
        let after = Topology::new(vec![0, 1, 2], [(0, 1)]);
        assert_eq!(before.lost_links(&after), [(1, 2)]);
        assert!(after.lost_links(&before).is_empty());
    }
}
