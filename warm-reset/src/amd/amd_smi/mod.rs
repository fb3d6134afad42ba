//! Reading what `amd-smi` prints, written against published outputs (kept with their sources in
//! `warm-reset/tests/data/amd-smi/`), failing closed on what they do not know.
//!
//! - [`parse_list`]: `amd-smi list`, one block per GPU (`GPU: <id>`, then its `BDF:`,
//!   `UUID:`, … lines): what turns an amd-smi GPU ID or UUID into a PCI address.
//! - [`read_reset_output`]: what `amd-smi reset --gpureset` printed: the GPUs it said it reset,
//!   the lines that say it could not, and what it does not know. The text a success prints is
//!   taken from amd-smi's source, not from a published run: the backend never relies on it (the
//!   exit status and the read-back of sysfs decide), only on the published failure words.

mod list;
mod reset_output;

pub(crate) use crate::parse_error::ParseError;
pub use list::{AmdSmiGpu, parse_list};
pub use reset_output::{ResetSaid, read_reset_output};
