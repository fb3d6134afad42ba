//! `amd-smi list`: one block per GPU, its ID on a line of its own, then its fields indented,
//! one `KEY: value` a line (published in amd-smi's changelog and in user reports):
//!
//! ```text
//! GPU: 0
//!     BDF: 0000:23:00.0
//!     UUID: <redacted>
//!     KFD_ID: 45412
//!     NODE_ID: 1
//!     PARTITION_ID: 0
//! ```
//!
//! The ID is what `amd-smi -g` takes; `BDF` and `UUID` are read (`N/A` where the tool cannot
//! tell, as in a guest), `PARTITION_ID` where it is there; the other fields (`KFD_ID`,
//! `NODE_ID`, and `RENDER`, `CARD`, `HSA_ID`, `HIP_ID`, `HIP_UUID` of `list -e`) are passed over,
//! since releases add them. A line of another shape, a field before the first `GPU:` line, an
//! ID listed twice, a block without `BDF` or `UUID`, an address that does not read, or an
//! output with no block at all is an error naming the line.
//!
//! In CPX each partition is a GPU of its own, listed at the GPU's address with the partition's
//! number as its function (`0000:0c:00.1` for partition 1 of `0000:0c:00.0`): such an address
//! names no PCI function in sysfs, and the backend refuses it rather than guess the GPU.

use crate::nvidia::nvidia_smi::parse_bus_id;
use crate::parse_error::{ParseError, numbered};
use gpu_partition_types::Bdf;
use std::collections::BTreeSet;

const OUTPUT: &str = "amd-smi list";

/// What amd-smi writes where it cannot tell a value.
const NOT_AVAILABLE: &str = "N/A";

/// One GPU as `amd-smi list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdSmiGpu {
    /// Its ID (what `amd-smi -g` takes; a partition in CPX is a GPU of its own).
    pub index: u32,
    /// Its PCI address; `None` where amd-smi prints `N/A`.
    pub bdf: Option<Bdf>,
    /// Its UUID as printed; `None` where amd-smi prints `N/A`.
    pub uuid: Option<String>,
    /// Its partition's number (0 for a GPU that is not partitioned); `None` where the line is
    /// absent (older releases) or `N/A`.
    pub partition_id: Option<u32>,
}

impl AmdSmiGpu {
    /// A GPU (for simulators and tests).
    pub fn new(
        index: u32,
        bdf: Option<Bdf>,
        uuid: Option<&str>,
        partition_id: Option<u32>,
    ) -> Self {
        Self {
            index,
            bdf,
            uuid: uuid.map(str::to_owned),
            partition_id,
        }
    }

    /// The block `amd-smi list` prints for it (without the blank line between blocks).
    pub fn to_block(&self) -> String {
        let or_na = |value: Option<String>| value.unwrap_or_else(|| NOT_AVAILABLE.to_owned());
        let mut block = format!(
            "GPU: {}\n    BDF: {}\n    UUID: {}\n",
            self.index,
            or_na(self.bdf.map(|bdf| bdf.to_string())),
            or_na(self.uuid.clone()),
        );
        if let Some(partition) = self.partition_id {
            block.push_str(&format!("    PARTITION_ID: {partition}\n"));
        }
        block
    }
}

/// A block being read: its header's line number and what it holds so far.
struct Block {
    line: usize,
    header: String,
    index: u32,
    bdf: Option<Option<Bdf>>,
    uuid: Option<Option<String>>,
    partition_id: Option<u32>,
}

impl Block {
    fn finish(self) -> Result<AmdSmiGpu, ParseError> {
        let missing = |why| ParseError::line(OUTPUT, self.line, &self.header, why);
        let bdf = self
            .bdf
            .ok_or_else(|| missing("a GPU without a BDF line"))?;
        let uuid = self
            .uuid
            .clone()
            .ok_or_else(|| missing("a GPU without a UUID line"))?;
        Ok(AmdSmiGpu {
            index: self.index,
            bdf,
            uuid,
            partition_id: self.partition_id,
        })
    }
}

/// `KEY: value` with a key of capitals, digits and underscores, as amd-smi writes its fields.
fn field(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(':')?;
    let key = key.trim();
    let known_shape = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    known_shape.then_some((key, value.trim()))
}

/// Reads the listing.
pub fn parse_list(text: &str) -> Result<Vec<AmdSmiGpu>, ParseError> {
    let mut gpus = Vec::new();
    let mut seen = BTreeSet::new();
    let mut block: Option<Block> = None;
    for (number, line) in numbered(text) {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why| ParseError::line(OUTPUT, number, line, why);
        if !line.starts_with(char::is_whitespace) {
            let index = line
                .strip_prefix("GPU:")
                .and_then(|id| id.trim().parse::<u32>().ok())
                .ok_or_else(|| bad("neither a `GPU: <id>` line nor an indented field"))?;
            if !seen.insert(index) {
                return Err(bad("a GPU ID listed twice"));
            }
            if let Some(done) = block.take() {
                gpus.push(done.finish()?);
            }
            block = Some(Block {
                line: number,
                header: line.to_owned(),
                index,
                bdf: None,
                uuid: None,
                partition_id: None,
            });
            continue;
        }
        let Some(current) = block.as_mut() else {
            return Err(bad("a field before the first `GPU:` line"));
        };
        let (key, value) = field(line).ok_or_else(|| bad("not a `KEY: value` field"))?;
        match key {
            "BDF" => {
                if current.bdf.is_some() {
                    return Err(bad("a second BDF line for the same GPU"));
                }
                current.bdf = Some(if value == NOT_AVAILABLE {
                    None
                } else {
                    Some(parse_bus_id(value).ok_or_else(|| bad("the BDF is not a PCI address"))?)
                });
            }
            "UUID" => {
                if current.uuid.is_some() {
                    return Err(bad("a second UUID line for the same GPU"));
                }
                if value.is_empty() {
                    return Err(bad("an empty UUID"));
                }
                current.uuid = Some((value != NOT_AVAILABLE).then(|| value.to_owned()));
            }
            "PARTITION_ID" => {
                current.partition_id = if value == NOT_AVAILABLE {
                    None
                } else {
                    Some(
                        value
                            .parse()
                            .map_err(|_| bad("the partition ID is not a number"))?,
                    )
                };
            }
            // Fields releases add (KFD_ID, NODE_ID, and list -e's RENDER, CARD, HSA_ID, HIP_ID,
            // HIP_UUID): nothing here depends on them.
            _ => {}
        }
    }
    if let Some(done) = block.take() {
        gpus.push(done.finish()?);
    }
    if gpus.is_empty() {
        return Err(ParseError::Missing {
            output: OUTPUT,
            why: "no `GPU:` block (a listing that ends 0 with no GPU is no answer)",
        });
    }
    Ok(gpus)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_block_reads_back_from_what_it_prints() {
        let gpu = AmdSmiGpu::new(
            3,
            "0000:26:00.0".parse().ok(),
            Some("58ff74a1-0000-1000-8000-000000000003"),
            Some(0),
        );
        assert_eq!(parse_list(&gpu.to_block()).unwrap(), vec![gpu]);
    }

    #[test]
    fn a_field_the_reader_passes_over_may_hold_anything() {
        let text = "GPU: 0\n    BDF: 0000:23:00.0\n    UUID: x\n    HIP_UUID: GPU-<Redacted>\n";
        assert_eq!(parse_list(text).unwrap().len(), 1);
    }
}
