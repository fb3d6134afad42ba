//! What a method's host is written with, for a host written outside this crate (a test's, a
//! wrapper of the real one, fake-nvml's), and the causes a [`BackendError`](crate::BackendError)
//! carries:
//!
//! - how a vendor's reset command ended ([`ToolEnd`]) and why a tool gave no answer
//!   ([`ToolError`]);
//! - the kernel log a host keeps ([`KernelLogSource`], its [`KmsgRecord`]s, [`KernelLogError`]),
//!   read at [`DEFAULT_KMSG`] unless told otherwise;
//! - the parse errors these carry ([`ParseError`]).
//!
//! Who holds a device file (`gpu_host_probe::holders`) and the I/O error the events carry
//! (`gpu_host_probe::OsError`) are `gpu-host-probe`'s: every vendor's side uses them.
//!
//! Each method's own host trait, and the error of its tool, are in its module
//! ([`crate::metax`], [`crate::nvidia`], [`crate::pci`]).

pub use crate::backend::KernelLogSource;
pub use crate::kmsg::{DEFAULT_KMSG, KernelLogError, KmsgRecord};
pub use crate::parse_error::ParseError;
pub use crate::tool::{ToolEnd, ToolError};
