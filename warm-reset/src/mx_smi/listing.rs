//! `mx-smi -L`: one GPU per line.

use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A GPU's state as `mx-smi -L` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum GpuState {
    /// Usable.
    Available,
    /// Not usable.
    Unavailable,
    /// In use by a process.
    InUse,
    /// In error.
    Error,
    /// A state this reader does not know, as shown.
    Other(String),
}

impl GpuState {
    fn parse(text: &str) -> Self {
        match text {
            "Available" => Self::Available,
            "Unavailable" => Self::Unavailable,
            "In Use" => Self::InUse,
            "Error" => Self::Error,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for GpuState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Available => "Available",
            Self::Unavailable => "Unavailable",
            Self::InUse => "In Use",
            Self::Error => "Error",
            Self::Other(text) => text,
        })
    }
}

/// One GPU row of `mx-smi -L`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GpuRow {
    /// The node ID (`GPU#N`).
    pub node: u32,
    /// The model, e.g. `MXC500`.
    pub model: String,
    /// The PCI address.
    pub bdf: Bdf,
    /// The state.
    pub state: GpuState,
    /// The UUID, when shown.
    pub uuid: Option<String>,
}

impl GpuRow {
    /// A row (for simulators and tests).
    pub fn new(node: u32, model: &str, bdf: Bdf, state: GpuState, uuid: Option<&str>) -> Self {
        Self {
            node,
            model: model.to_owned(),
            bdf,
            state,
            uuid: uuid.map(str::to_owned),
        }
    }

    /// The same GPU in the same place: node ID, PCI address and UUID agree.
    pub fn same_place(&self, other: &GpuRow) -> bool {
        self.node == other.node && self.bdf == other.bdf && self.uuid == other.uuid
    }
}

/// A listing that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListingError {
    /// A `GPU#` line that does not read.
    #[error("line {line}: cannot read the GPU row {text:?}: {why}")]
    BadRow {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
        /// What was wrong.
        why: &'static str,
    },
    /// No GPU row at all, from a command that succeeded: an error, never "no GPUs".
    #[error("no GPU row in the listing")]
    NoRows,
}

/// Reads `mx-smi -L`: lines starting with `GPU#` are rows (spacing free), other lines (banners,
/// blank lines) are skipped; a row that does not read, or no row at all, is an error.
pub fn parse_listing(text: &str) -> Result<Vec<GpuRow>, ListingError> {
    let mut rows = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("GPU#") else {
            continue;
        };
        let bad = |why| ListingError::BadRow {
            line: number + 1,
            text: line.to_owned(),
            why,
        };
        let (node, rest) = rest
            .split_once(char::is_whitespace)
            .ok_or_else(|| bad("no fields after the node ID"))?;
        let node: u32 = node
            .parse()
            .map_err(|_| bad("the node ID is not a number"))?;
        let (state_part, uuid) = match rest.split_once("(UUID:") {
            Some((before, after)) => {
                let uuid = after
                    .trim()
                    .strip_suffix(')')
                    .ok_or_else(|| bad("the UUID is not closed"))?;
                (before, Some(uuid.trim().to_owned()))
            }
            None => (rest, None),
        };
        let words: Vec<&str> = state_part.split_whitespace().collect();
        let at = words
            .iter()
            .position(|word| word.parse::<Bdf>().is_ok())
            .ok_or_else(|| bad("no PCI address"))?;
        let bdf: Bdf = words[at].parse().map_err(|_| bad("no PCI address"))?;
        let model = words[..at].join(" ");
        let state = words[at + 1..].join(" ");
        if model.is_empty() || state.is_empty() {
            return Err(bad("no model or no state"));
        }
        rows.push(GpuRow {
            node,
            model,
            bdf,
            state: GpuState::parse(&state),
            uuid,
        });
    }
    if rows.is_empty() {
        return Err(ListingError::NoRows);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_documented_listing_reads() {
        let text = "GPU#0    MXC500    0000:06:00.0    Available (UUID: GPU-0a1b2c3d-0000-0000-0000-000000000000)\n\
                    GPU#1    MXC500    0000:07:00.0    In Use (UUID: GPU-0a1b2c3d-0000-0000-0000-000000000001)\n";
        let rows = parse_listing(text).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].node,
                rows[0].model.as_str(),
                rows[0].bdf.to_string()
            ),
            (0, "MXC500", "0000:06:00.0".to_owned())
        );
        assert_eq!(rows[1].state, GpuState::InUse);
        assert_eq!(
            rows[1].uuid.as_deref(),
            Some("GPU-0a1b2c3d-0000-0000-0000-000000000001")
        );
    }

    #[test]
    fn spacing_banners_and_blank_lines_do_not_matter() {
        let text = "mx-smi  version 2.2.1\n\n  GPU#3 MetaX C500\t0000:0a:00.0 Error\n";
        let rows = parse_listing(text).unwrap();
        assert_eq!(
            (
                rows[0].node,
                rows[0].model.as_str(),
                &rows[0].state,
                rows[0].uuid.as_deref()
            ),
            (3, "MetaX C500", &GpuState::Error, None)
        );
    }

    #[test]
    fn a_listing_without_gpu_rows_is_an_error_not_no_gpus() {
        assert_eq!(
            parse_listing("no devices found\n"),
            Err(ListingError::NoRows)
        );
        assert_eq!(parse_listing(""), Err(ListingError::NoRows));
    }

    #[test]
    fn a_gpu_row_that_does_not_read_is_an_error() {
        for text in [
            "GPU#x MXC500 0000:06:00.0 Available",
            "GPU#0 MXC500 Available",
            "GPU#0 MXC500 0000:06:00.0 Available (UUID: x",
        ] {
            assert!(
                matches!(parse_listing(text), Err(ListingError::BadRow { .. })),
                "{text}"
            );
        }
    }

    #[test]
    fn an_unknown_state_is_kept_as_shown() {
        let rows = parse_listing("GPU#0 MXC500 0000:06:00.0 Resetting").unwrap();
        assert_eq!(rows[0].state, GpuState::Other("Resetting".into()));
    }
}
