//! Test doubles for the crates that run the helper: [`FakeHelper`], a helper script that answers
//! `--version`, replies to `read` with a reply of your choosing, behaves as told per device (hang,
//! exit with a code, sleep, run a shell snippet), and records every call; and
//! [`redact_temp_dirs`], for snapshots of messages that name a test's files.
//!
//! Behind the `test-util` feature: tests, examples and benchmarks enable it; nothing else does.

mod fake_helper;
mod redact;

pub use fake_helper::{Act, FakeHelper, PARTITIONS, write_executable};
pub use redact::redact_temp_dirs;
