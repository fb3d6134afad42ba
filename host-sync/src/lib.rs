//! Whether a host takes part in GPU partitioning and why, each GPU's partition mode, the sysfs
//! PCI scan, and the state store.
//!
//! This crate is laid out by the workspace foundation and filled by the host-sync issue. It
//! exports nothing yet.
#![deny(missing_docs)]
