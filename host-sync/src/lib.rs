//! Whether a host takes part in GPU partitioning and why, each GPU's partition mode, the sysfs
//! PCI scan, and the state store.
//!
//! - [`pci::scan`] finds display-class PCI physical functions (NVIDIA by vendor `10de`,
//!   never by driver); an entry it cannot read is skipped and named, never a failed scan.
//! - [`classify()`] is a pure function over [`Facts`] and an ordered table of checks
//!   ([`CHECKS`]), most specific first, giving a [`HostStatus`] and a [`Reason`].
//! - [`modes`] holds the partition-mode rules of a sync as pure functions over [`GpuRecord`]s.
//! - [`StateStore`] is where the state lives; [`FileStore`] the embedded default (one JSON file
//!   written atomically); [`MemoryStore`] keeps it in memory.
//! - [`sync()`] runs the whole sync under the host GPU lock of `gpu-host-probe`; [`spawn_sync`] runs it
//!   on a thread of its own, as a toolstack does at start, and its [`SyncHandle`] is told the
//!   report.
//! - `fake_sysfs` (feature `test-util`): a sysfs tree built on disk, for tests and examples.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod boot;
pub mod classify;
#[cfg(feature = "test-util")]
pub mod fake_sysfs;
pub mod gpu;
pub mod modes;
pub mod pci;
pub mod reason;
pub mod spawn;
pub mod state;
pub mod status;
pub mod store;
pub mod sync;

pub use boot::Boot;
pub use classify::{CHECKS, Check, Facts, HelperState, classify};
pub use gpu::GpuRecord;
pub use pci::{NVIDIA_VENDOR, PciFunction, PciScan, ScanError, SkippedEntry, scan, scan_gpus};
pub use reason::{GpuReason, NotRead};
pub use spawn::{SyncHandle, SyncPanicked, spawn_sync};
pub use state::{HostState, SCHEMA};
pub use status::{HostReason, HostStatus, Reason};
pub use store::{FileStore, MemoryStore, STATE_FILE, StateStore, StoreError};
pub use sync::{AfterBoot, DEFAULT_LOCK_WAIT, HostPaths, SyncError, SyncOptions, SyncReport, sync};
