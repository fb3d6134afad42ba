//! What a method's host is written with, for a host written outside this crate (a test's, a
//! wrapper of the real one, fake-nvml's), and the causes a [`BackendError`](crate::BackendError)
//! carries:
//!
//! - how a vendor's reset command ended ([`ToolEnd`]) and why a tool gave no answer
//!   ([`ToolError`]);
//! - the kernel log a host keeps ([`KernelLogSource`], its [`KmsgRecord`]s, [`KernelLogError`]),
//!   read at [`DEFAULT_KMSG`] unless told otherwise;
//! - the processes holding a device file ([`holders`], each a [`Holder`], said by
//!   [`describe`]), or why they could not all be looked at ([`ProcError`]) — also what a VM
//!   holds open of a virtual function (`/dev/vfio/<group>`);
//! - the I/O and parse errors these carry ([`OsError`], [`ParseError`]).
//!
//! Each method's own host trait, and the error of its tool, are in its module
//! ([`crate::metax`], [`crate::nvidia`], [`crate::pci`]).

pub use crate::holders::{Holder, ProcError, describe, holders};
pub use crate::kmsg::{DEFAULT_KMSG, KernelLogError, KernelLogSource, KmsgRecord};
pub use crate::os_error::OsError;
pub use crate::parse_error::ParseError;
pub use crate::tool::{ToolEnd, ToolError};
