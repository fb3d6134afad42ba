//! The real MetaX host, in one place: [`MxSmiBackend`] (what the procedure asks of the host,
//! answered by `mx-smi`, `/proc/modules`, the kernel log and the effective user), the
//! [`mx_smi`] parsers it reads `mx-smi` with, the `metax` module's use count ([`metax_use`]),
//! and [`MxSmiError`] for what `mx-smi` did not answer.
//!
//! These were `warm_reset::real`, `warm_reset::host_files` and `warm_reset::mx_smi`; the kernel
//! log, which any vendor's reset is verified against, is [`crate::kmsg`].

mod backend;
mod error;
mod modules;
pub mod mx_smi;

pub use backend::{MX_SMI_PLACES, MxSmiBackend, QUERY_DEADLINE};
pub use error::MxSmiError;
pub use modules::{DriverUse, metax_use};
