//! The integration tests of `fake-nvml`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod call_log;
mod geometry;
mod scenarios;
mod sysfs;
