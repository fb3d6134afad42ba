//! A fake `libnvidia-ml.so.1`: the NVML functions the GPU partition helper (and `nvml-wrapper`
//! on its way) calls, with NVML's C ABI, answering from a JSON scenario named by the environment
//! variable `FAKE_NVML_SCENARIO`. It lets the helper's real NVML path run in CI without a GPU.
//!
//! - [`scenario`]: the scenario file (driver versions, devices, MIG mode and how a change of it
//!   takes effect, GPU-instance profiles by index and ID with their placements, GPU and compute
//!   instances, vGPUs, clients, and per-device failures).
//! - [`scenarios`]: the scenarios shipped with the crate, by name.
//! - [`rules`]: the driver's rules the fake enforces on writes (free placements, capacity,
//!   what fits, what is in use, what a GPU reset does), pure and unit-tested.
//! - [`store`]: the state that outlives a process (`FAKE_NVML_STATE`), written whole under a
//!   lock; `fake-nvml reset --device BDF` (the crate's binary) resets a GPU in it.
//! - [`exports`]: the C functions. Handles are numbers, never pointers to memory: a handle
//!   this library did not give out is `NVML_ERROR_INVALID_ARGUMENT`.
//! - [`reset`]: a warm-reset backend for tests (the nvidia method over the state file), so an
//!   apply's reset completes a card's pending MIG mode, with the scenario's NVLink groups.
//! - [`support`]: for tests and benchmarks, where the built library is, and a helper wrapper
//!   that runs the real helper binary against it.
//!
//! With `FAKE_NVML_LOG` set to a file, every call is appended to it, one line each (the
//! function and its arguments), so a test can count what the helper asked.
//!
//! The `without-profile-info-v` feature leaves out `nvmlDeviceGetGpuInstanceProfileInfoV`, as
//! older drivers do.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
// The C ABI needs `unsafe`: exported symbols and the caller's out-pointers. Every block says
// why it is sound.
#![allow(unsafe_code)]

pub mod exports;
mod out;
pub mod reset;
pub mod rules;
pub mod scenario;
pub mod scenarios;
mod state;
pub mod store;
pub mod support;
