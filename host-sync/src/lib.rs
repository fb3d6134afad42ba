//! Whether a host takes part in GPU partitioning and why, each GPU's partition mode, the sysfs
//! PCI scan, the state store, and the sync. What a card holds, what a layout wants and how they
//! differ, and the declaration with its check, are `layout_model`'s: this crate reads the cards
//! and keeps the state, and judges through it.
//!
//! - [`scan()`] finds display-class PCI physical functions (NVIDIA by vendor `10de`,
//!   never by driver); an entry it cannot read is skipped and named, never a failed scan.
//! - [`sriov::read_sriov`] reads a GPU's SR-IOV virtual functions and the vGPU files NVIDIA's
//!   driver adds to each, from sysfs (no NVML), failing closed on what it does not know;
//!   [`mdev::read_mdev_types`] the older mediated-device interface, so a host managed that
//!   way says what it is.
//! - [`classify()`] is a pure function over [`Facts`] and an ordered table of checks
//!   ([`CHECKS`]), most specific first, giving a [`HostStatus`] and a [`HostReason`].
//! - [`modes`] holds the partition-mode rules of a sync as pure functions over [`GpuRecord`]s.
//! - [`StateStore`] is where the state lives, with the contract a store keeps written on it;
//!   [`FileStore`] is the embedded default (one JSON file written atomically, with a last good
//!   copy beside it); [`MemoryStore`] keeps it in memory. [`HostState`] has a schema
//!   ([`SCHEMA`]) that moves with its members; [`save_checked`] finds a store that drops one.
//! - [`start_apply`], [`begin_apply`] and [`end_apply`] write the host state an apply leaves
//!   ([`LayoutRecord`], the declaration), under the host lock.
//! - [`sync()`] runs the whole sync on a [`Host`] (under its host GPU lock, reading the boot from
//!   its procfs); [`spawn_sync`] runs it on a thread of its own, as a toolstack does at start,
//!   and hands the store back with the report. Reports serialize to `mxctl --json`'s documents
//!   ([`SyncReport`], [`StatusReport`]), and every failed read carries its message next to its
//!   reason.
//! - `fake_sysfs` and `fake_amdgpu` (feature `sim`): a sysfs tree built on disk, and AMD GPUs
//!   that answer partition writes by the kernel's rules in it (in one process, or kept in a
//!   file between processes, as `mxctl --simulate` keeps them); `conformance` (feature
//!   `test-util`, which takes `sim` too): the conformance suite any [`StateStore`] runs in its
//!   tests. Enable them for your tests with `host-sync = { version = "…", features =
//!   ["test-util"] }` under `[dev-dependencies]`.
//!
//! The rules of a sync are in the project's `docs/sync.md`.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod after_boot;

mod apply_state;
mod classify;
mod clock;
#[cfg(feature = "test-util")]
pub mod conformance;
#[cfg(feature = "sim")]
pub mod fake_amdgpu;
#[cfg(feature = "sim")]
pub mod fake_sysfs;
mod gpu;
pub mod mdev;
pub mod modes;
mod ownership;
mod partitions;
mod pci;
mod reason;
mod record;
mod report;
mod spawn;
pub mod sriov;
mod state;
mod status;
mod store;
mod sync;
mod warning;

pub use apply_state::{
    ApplyEnd, ApplyStateError, BootRestoreStart, GpuRead, begin_apply, begin_boot_restore,
    end_apply, request_memory, requests_ended, start_apply,
};
pub use classify::{CHECKS, Check, Facts, HelperState, classify};
pub use gpu::{AmdRecord, GpuRecord, MemoryRequest};
pub use gpu_host_probe::{Boot, DEFAULT_LOCK_WAIT, Host};
pub use gpu_partition_types::Token;
pub use ownership::set_ownership;
pub use partitions::{GpuPartitions, GpuRestart, PartitionsReport, partitions};
pub use pci::{PciFunction, PciScan, ReadBy, ScanError, SkippedEntry, scan, scan_gpus};
pub use reason::{AmdUnread, GpuReason, NotRead, UnknownGpuReason};
pub use record::{BadLayoutOutcome, Direction, LayoutFailure, LayoutOutcome, LayoutRecord};
pub use report::StatusReport;
pub use spawn::{SyncDone, SyncHandle, SyncPanicked, spawn_sync};
pub use state::{
    BootRestore, FieldDifference, HostState, SCHEMA, StateLost, StateReadError, first_difference,
};
pub use status::{BadReason, HostReason, HostStatus, Pool, StoredReason};
pub use store::{
    FileStore, LAST_GOOD_FILE, MemoryStore, STATE_FILE, StateStore, StoreError, StoreNote,
    save_checked,
};
pub use sync::{AfterBoot, SETTLE_ROUNDS, SyncError, SyncOptions, SyncReport, sync, sync_under};
pub use warning::SyncWarning;
