//! Reading what MetaX's `mx-smi` prints, written against its published outputs (the samples
//! and their sources are in `warm-reset/tests/data/mx-smi/`), strict about what it does not
//! know: every parser fails with the line it cannot read, and none ever reads "idle" or
//! "fine" from text that does not say so.
//!
//! - [`is_metax`]: whether the tool that answered is MetaX's (another vendor ships an `mx-smi`).
//! - [`parse_header`] and [`check_versions`]: the versions in the bordered header of plain
//!   `mx-smi`, against the vendor's minimums for warm reset.
//! - [`parse_processes`]: the process section that ends plain `mx-smi`.
//! - [`parse_listing`]: `mx-smi -L`.
//! - [`parse_topology`]: `mx-smi topo -m`, whose `MX` cells give the interconnect groups.
//! - [`reset_failure`]: whether what `mx-smi -r` printed says it failed.

mod error;
mod header;
mod identity;
mod lines;
mod listing;
mod processes;
mod reset_output;
mod topology;
mod version;

pub(crate) use error::ParseError;
pub use header::{Versions, parse_header};
pub use identity::is_metax;
pub use listing::{GpuRow, GpuState, parse_listing};
pub use processes::{GpuProcess, describe_processes, parse_processes};
pub use reset_output::reset_failure;
pub use topology::{Topology, parse_topology};
pub use version::{MINIMUMS, Version, VersionCheck, check_versions};
