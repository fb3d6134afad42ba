//! Test doubles for the crates that run the helper: [`FakeHelper`], a helper script that answers
//! `--version`, replies to `read` with a reply of your choosing, behaves as told per device (hang,
//! exit with a code, sleep, run a shell snippet), and records every call.
//!
//! Behind the `test-util` feature: tests, examples and benchmarks enable it; nothing else does.

mod fake_helper;

pub use fake_helper::{Act, FakeHelper, write_executable};
