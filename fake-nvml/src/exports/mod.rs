//! The NVML functions, with NVML's C ABI. Each answers from the scenario read by
//! [`system::nvmlInit_v2`] and fails as the scenario's `fail` says for its device.
//!
//! They are `unsafe extern "C"`: a caller must pass pointers valid as NVML's documentation
//! asks (null is answered with `NVML_ERROR_INVALID_ARGUMENT`, never dereferenced).
//!
//! The modules are private: each function is `#[unsafe(no_mangle)]`, so the cdylib exports
//! it by its C name (`nm -D` lists it; `tests/c_abi.rs` checks), and none is Rust API.
#![allow(non_snake_case)]

pub mod device;
pub mod instance;
pub mod lookup;
pub mod mig;
pub mod system;
pub mod unmodelled;
pub mod vgpu;
