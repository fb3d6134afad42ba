//! Reading what `mx-smi` prints: tolerant of spacing, strict about what it cannot read.

mod listing;
mod processes;
mod version;

pub use listing::{GpuRow, GpuState, ListingError, parse_listing};
pub use processes::{ProcessesError, parse_processes};
pub use version::{MINIMUMS, Version, VersionCheck, check_versions, is_metax};
