//! `mx-smi -L`: the banner, then one GPU per line.
//!
//! ```text
//! mx-smi  version: 2.2.9
//! GPU#0    MXC500      0000:08:00.0   Available (UUID: GPU-e702f06b-bbd6-bc06-5196-90a5554a24ba)
//! GPU#7    MXC500      0000:3c:00.0   Available (UUID: GPU-0e715b45-bcef-1500-e2db-752724095700)
//! ```
//!
//! Node IDs may be sparse; a card that cannot be read shows `Not Available(<why>)`, possibly
//! without a UUID.

use super::error::ParseError;
use super::identity::banner_version;
use super::lines::numbered;
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};
use std::fmt;

const OUTPUT: &str = "mx-smi -L";

/// A GPU's state as `mx-smi -L` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum GpuState {
    /// `Available`: usable.
    Available,
    /// `Not Available(<why>)`: present, not usable; why, as shown (may be empty).
    NotAvailable(String),
    /// A state this reader does not know, as shown: present, and not `Available`.
    Other(String),
}

impl GpuState {
    fn parse(text: &str) -> Self {
        if text == "Available" {
            return Self::Available;
        }
        match text.strip_prefix("Not Available") {
            Some(rest) => {
                let rest = rest.trim();
                let why = rest
                    .strip_prefix('(')
                    .and_then(|why| why.strip_suffix(')'))
                    .unwrap_or(rest);
                Self::NotAvailable(why.trim().to_owned())
            }
            None => Self::Other(text.to_owned()),
        }
    }
}

impl fmt::Display for GpuState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Available => f.write_str("Available"),
            Self::NotAvailable(why) => write!(f, "Not Available({why})"),
            Self::Other(text) => f.write_str(text),
        }
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

    /// The same GPU in the same place: node ID, PCI address and UUID agree. A UUID shown on
    /// only one side (a card `Not Available` may show none) does not count against it.
    pub fn same_place(&self, other: &GpuRow) -> bool {
        let uuid_agrees = match (&self.uuid, &other.uuid) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => true,
        };
        self.node == other.node && self.bdf == other.bdf && uuid_agrees
    }

    /// The row as `mx-smi -L` prints it.
    pub fn to_line(&self) -> String {
        let uuid = self
            .uuid
            .as_deref()
            .map(|uuid| format!(" (UUID: {uuid})"))
            .unwrap_or_default();
        format!(
            "GPU#{:<4} {:<11} {}   {}{uuid}",
            self.node, self.model, self.bdf, self.state
        )
    }
}

/// Reads `mx-smi -L`: the banner and blank lines, then `GPU#` rows. Any other line, a row that
/// does not read, a node ID listed twice, or no row at all (from a command that succeeded) is an
/// error naming the line, never "no GPUs".
pub fn parse_listing(text: &str) -> Result<Vec<GpuRow>, ParseError> {
    let mut rows: Vec<GpuRow> = Vec::new();
    for (number, line) in numbered(text) {
        if line.trim().is_empty() || banner_version(line).is_some() {
            continue;
        }
        let bad = |why| ParseError::line(OUTPUT, number, line, why);
        let Some(rest) = line.trim().strip_prefix("GPU#") else {
            return Err(bad("not a GPU row"));
        };
        let row = parse_row(rest).map_err(bad)?;
        if rows.iter().any(|seen| seen.node == row.node) {
            return Err(bad("a node ID listed twice"));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "no GPU row in the listing",
        });
    }
    Ok(rows)
}

fn parse_row(rest: &str) -> Result<GpuRow, &'static str> {
    let (node, rest) = rest
        .split_once(char::is_whitespace)
        .ok_or("no fields after the node ID")?;
    let node: u32 = node.parse().map_err(|_| "the node ID is not a number")?;
    let (state_part, uuid) = match rest.split_once("(UUID:") {
        Some((before, after)) => {
            let uuid = after
                .trim()
                .strip_suffix(')')
                .ok_or("the UUID is not closed")?
                .trim();
            if uuid.is_empty() || uuid.contains(char::is_whitespace) {
                return Err("the UUID does not read");
            }
            (before, Some(uuid.to_owned()))
        }
        None => (rest, None),
    };
    let words: Vec<&str> = state_part.split_whitespace().collect();
    let at = words
        .iter()
        .position(|word| word.parse::<Bdf>().is_ok())
        .ok_or("no PCI address")?;
    let bdf: Bdf = words[at].parse().map_err(|_| "no PCI address")?;
    let model = words[..at].join(" ");
    let state = words[at + 1..].join(" ");
    if model.is_empty() || state.is_empty() {
        return Err("no model or no state");
    }
    Ok(GpuRow {
        node,
        model,
        bdf,
        state: GpuState::parse(&state),
        uuid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_available_keeps_why_and_may_have_no_uuid() {
        let row = parse_row("3   MXC500   0000:0a:00.0   Not Available(link down)");
        assert_eq!(
            row.map(|row| (row.state, row.uuid)),
            Ok((GpuState::NotAvailable("link down".into()), None))
        );
    }

    #[test]
    fn a_row_prints_back_as_it_reads() {
        let row = GpuRow::new(
            7,
            "MXC500",
            "0000:3c:00.0".parse().unwrap_or_else(|_| unreachable!()),
            GpuState::NotAvailable("x".into()),
            None,
        );
        assert_eq!(parse_listing(&row.to_line()), Ok(vec![row]));
    }
}
