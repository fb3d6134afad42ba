//! The reference GPU partition helper: reads one NVIDIA card through NVML (or serves a fixture)
//! and writes the reply of the GPU partition helper protocol, format 1, with the writers of
//! `gpu-partition-types`.
//!
//! - [`api`]: the NVML calls behind [`api::NvmlHost`] and [`api::NvmlCard`].
//! - [`read`]: the mapping from NVML's answers to a reply, pure over those traits.
//! - [`apply`]: a request's steps through NVML's write calls, answered by a fresh read.
//! - [`catalogue`]: enumerating profiles and compute instances as current NVML headers ask, with
//!   the v1 fallback for drivers that lack or refuse the V call.
//! - [`nvml`]: the real backend (`nvml-wrapper`, `libnvidia-ml.so.1` loaded at run time).
//! - [`fixture`]: a card described by a JSON file in the reply's own shape.
//! - [`cli`]: the command line (`--version`, `read --device BDF --format 1`, `apply --device
//!   BDF --format 1`).
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod api;
pub mod apply;
pub mod catalogue;
pub mod cli;
pub mod fixture;
pub mod nvml;
pub mod read;
