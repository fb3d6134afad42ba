//! The integration tests of `gpu-partition-helper`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod apply;
mod common;
mod fake_nvml;
mod fixture;
mod mapping;
mod recorded;
