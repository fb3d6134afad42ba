//! Test doubles for the crates that run the helper: [`FakeHelper`], a helper script that answers
//! `--version`, replies to `read` with a reply of your choosing, behaves as told per device (hang,
//! exit with a code, sleep, run a shell snippet), and records every call; and
//! [`redact_temp_dirs`], for snapshots of messages that name a test's files; and
//! [`isolated_host`], a host on a machine of its own, for tests that run at once.
//!
//! Behind the `test-util` feature: tests, examples and benchmarks enable it; nothing else does.

mod fake_helper;
mod redact;

pub use fake_helper::{Act, FakeHelper, PARTITIONS, write_executable};
pub use redact::redact_temp_dirs;

use crate::host::Host;
use std::path::PathBuf;

/// A host whose state lives in `dir`, on a machine of its own: its sysfs root is `dir` too (no
/// PCI bus there, so a scan finds no GPU), so its machine lock is its own, and tests running at
/// once (each with its own directory) never meet at the real machine's GPU lock, as two `Host`s
/// of the real `/sys` would.
pub fn isolated_host(dir: impl Into<PathBuf>) -> Host {
    let dir = dir.into();
    Host::new(&dir).with_sysfs_root(dir)
}
