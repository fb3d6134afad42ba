//! Test doubles for the crates that run the helper: [`FakeHelper`], a helper script that answers
//! `--version`, replies to `read` with a reply of your choosing, behaves as told per device (hang,
//! exit with a code, sleep, run a shell snippet), and records every call; and
//! [`redact_temp_dirs`], for snapshots of messages that name a test's files; and
//! [`isolated_host`], a host on a machine of its own, for tests that run at once; and
//! [`machine_host`], a host of this machine's own sysfs whose default directory of machine
//! locks is a test's.
//!
//! Behind the `test-util` feature: tests, examples and benchmarks enable it; nothing else does.

mod fake_helper;
mod redact;

pub use fake_helper::{Act, FakeHelper, PARTITIONS, write_executable};
pub use redact::redact_temp_dirs;

use crate::host::Host;
use std::path::PathBuf;

/// A host whose state lives in `dir`, on a machine of its own: its sysfs root is `dir` too (no
/// PCI bus there, so a scan finds no GPU), so tests running at once (each with its own
/// directory) never meet at the real machine's GPU lock, as two `Host`s of the real `/sys`
/// would. Its machine's locks are in `dir/locks`: a built tree's are kept beside it by default,
/// and beside `dir` is the temporary directory, no private place for a lock.
pub fn isolated_host(dir: impl Into<PathBuf>) -> Host {
    let dir = dir.into();
    Host::new(&dir)
        .with_sysfs_root(&dir)
        .with_lock_dir(dir.join(LOCK_DIR))
}

/// A host of this machine's own sysfs (`/sys`, the kernel's) whose state lives in `state_dir`,
/// taking `default_lock_dir` for the user's default directory of machine locks
/// (`/run/gpu-host-probe` for root): the rules of the machine's sysfs (one directory of machine
/// locks, another refused unless named as the machine's) are tested with it, as any user and
/// without touching the machine's own locks. It reads the real `/sys` and `/proc`: a test
/// that scans or resets through it reaches the real machine, so it is for tests of the lock
/// and the record of writes only.
pub fn machine_host(state_dir: impl Into<PathBuf>, default_lock_dir: impl Into<PathBuf>) -> Host {
    Host::new(state_dir).with_default_lock_dir(default_lock_dir)
}

/// Where a test host's machine locks go inside its directory ([`isolated_host`],
/// [`test_host`]).
pub const LOCK_DIR: &str = "locks";

/// A test host: its state in `state_dir`, its sysfs at `sysfs_root`, its procfs at
/// `proc_root`, its machine's locks in `locks` beside the state directory — nothing of a test in
/// the real directory of machine locks.
pub fn test_host(
    state_dir: impl Into<PathBuf>,
    sysfs_root: impl Into<PathBuf>,
    proc_root: impl Into<PathBuf>,
) -> Host {
    let state_dir = state_dir.into();
    let locks = state_dir
        .parent()
        .map_or_else(|| state_dir.join(LOCK_DIR), |parent| parent.join(LOCK_DIR));
    Host::new(state_dir)
        .with_sysfs_root(sysfs_root)
        .with_proc_root(proc_root)
        .with_lock_dir(locks)
}
