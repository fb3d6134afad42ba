//! The integration tests of `host-sync`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod amd;
mod amd_sync;
mod cancel;
mod classify;
mod common;
mod fake_amdgpu;
mod modes;
mod pci;
mod settle;
mod spawn;
mod sriov;
mod store;
mod store_schema;
