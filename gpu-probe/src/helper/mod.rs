//! The GPU partition helper client: `--version` once, `read --device BDF --format 1` per card,
//! pages folded and decoded with `gpu-partition-types`, and a reason for every failed read.
//! The protocol's busy exit status is [`gpu_partition_types::EXIT_BUSY`], shared with the
//! reference helper.

mod client;
mod config;
mod reason;

pub use client::{ApplyFailure, CardRead, Helper, MIN_SHARE, ReadFailure, Unnegotiated};
pub use config::{DEFAULT_HELPER, HelperConfig, Wrapper};
pub use reason::reason_of;
