//! The integration tests of `fake-nvml`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod call_log;
mod command;
mod geometry;
#[path = "../profile_table/mod.rs"]
mod profile_table;
mod scenarios;
mod sysfs;
