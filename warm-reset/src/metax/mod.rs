//! The real MetaX host, in one place: [`MxSmiBackend`](crate::MxSmiBackend) (the machine's
//! questions answered by `mx-smi`, `/proc/modules`, the kernel log and the effective user,
//! through a [`MetaxHost`]), the [`mx_smi`] parsers it reads `mx-smi` with, the `metax`
//! module's use count ([`metax_use`]), [`MetaxTarget`], and [`MxSmiError`] for what `mx-smi`
//! did not answer.
//!
//! These were `warm_reset::real`, `warm_reset::host_files` and `warm_reset::mx_smi`; the kernel
//! log, which any vendor's reset is verified against, is a host's
//! [`KernelLogSource`](crate::io::KernelLogSource).

pub(crate) mod backend;
mod error;
mod host;
mod modules;
pub mod mx_smi;
mod target;

pub use error::MxSmiError;
pub use host::{MX_SMI_PLACES, MetaxHost, MxSmiHost};
pub use modules::{DriverUse, metax_use};
pub use target::MetaxTarget;
