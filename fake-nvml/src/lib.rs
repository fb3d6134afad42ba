//! A fake `libnvidia-ml.so.1`: the NVML functions the GPU partition helper (and `nvml-wrapper`
//! on its way) calls, with NVML's C ABI, answering from a JSON scenario named by the environment
//! variable `FAKE_NVML_SCENARIO`. It lets the helper's real NVML path run in CI without a GPU.
//!
//! The Rust API is what a test needs around the library; the C functions are exported by the
//! cdylib under their NVML names and are no part of it.
//!
//! - [`Scenario`] and its parts: the scenario file (driver versions, devices, MIG mode and how a
//!   change of it takes effect, GPU-instance profiles by index and ID with their placements,
//!   GPU and compute instances, vGPUs, clients, and per-device failures), read strictly
//!   ([`Scenario::from_json`]; a fault is a [`ScenarioError`] naming the member).
//! - [`scenarios`]: the scenarios shipped with the crate, by name.
//! - [`StateFile`]: the state that outlives a process (`FAKE_NVML_STATE`), written whole under
//!   a lock; read, written and changed by a test, a GPU reset ([`StateFile::reset_gpu`]) and a
//!   reboot ([`StateFile::reboot`]) of its cards.
//! - [`backend`]: a warm-reset backend for tests (the nvidia method over the state file), so an
//!   apply's reset completes a card's pending MIG mode, with the scenario's NVLink groups.
//! - [`support`]: for tests and benchmarks, where the built library, the helper and the
//!   `fake-nvml` binary are, helper wrappers that run the real helper against the fake, and a
//!   test host's `/proc` whose boot a test changes ([`support::ProcRoot`], [`support::reboot`]).
//!
//! With `FAKE_NVML_LOG` set to a file, every call is appended to it, one whole line each (the
//! function and its arguments), so a test can count what the helper asked.
//!
//! The `without-profile-info-v` feature leaves out `nvmlDeviceGetGpuInstanceProfileInfoV`, as
//! older drivers do.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
// The C ABI needs `unsafe`: exported symbols and the caller's out-pointers. Every block says
// why it is sound.
#![allow(unsafe_code)]

mod call_log;
mod complain;
mod exports;
mod nvml_names;
mod out;
mod profile_enum;
mod read;
mod reset;
mod rules;
mod scenario;
pub mod scenarios;
mod state;
mod store;
pub mod support;
pub mod sysfs;

pub use read::{Refusal, ScenarioError};
pub use reset::{FakeNvmlBackend, FakeNvmlHost, ResetFault, backend};
pub use rules::sriov::Managed;
pub use scenario::{
    BadMigMode, Client, ComputeInstance, Costs, Device, GpuInstance, MigMode, MigModeAtBoot,
    MigModeChange, Placement, Profile, Scenario, Sriov, Vgpu, VgpuType, VirtualFunction,
};
pub use store::{ChangeError, StateFile, StateFileError};
