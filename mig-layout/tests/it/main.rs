//! The integration tests of `mig-layout`: one test binary (one link, one
//! process start per `cargo test`), one module per subject.

mod amd_apply;
mod amd_leave;
mod amd_plan;
mod amd_refusals;
mod apply;
mod apply_failures;
mod common;
mod dcm;
mod declared;
mod document;
mod export;
mod host_writers;
mod partition_vgpu;
mod plan;
mod props;
mod vgpu_apply;
mod vgpu_document;
mod vgpu_exec;
mod vgpu_plan;
