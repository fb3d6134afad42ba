//! The integration tests of `gpu-partition-types`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod apply;
mod bad_input;
mod catalogue;
mod common;
mod enumerations;
mod mutations;
mod mutations_inventory;
mod pages;
mod round_trip;
