//! NVIDIA GPUs through `nvidia-smi` (the published messages and the man page's rules are in
//! `warm-reset/tests/data/nvidia-smi/README.md`), with the checks `nvidia-smi -r` leaves to its
//! operator:
//!
//! - preflight: `nvidia-smi` present; the GPU listed by `--query-gpu`; its NVLink peers from
//!   `topo -m` (`NV<n>` cells, followed transitively) join the group and are reset in the same
//!   command — the man page asks for it when Fabric Manager is absent or a GPU predates Ampere,
//!   and always doing so is the safe superset; nobody holds the group's `/dev/nvidia<minor>`
//!   (minors from `/proc/driver/nvidia/gpus/<bdf>/information`; Fabric Manager, persistenced
//!   and DCGM count) and `--query-compute-apps` lists none of them (else `gpu_busy`). The
//!   `nvidia` module's use count is no idle test.
//! - the reset: `nvidia-smi --gpu-reset -i <bus ids>` inside the window. The busy block means
//!   nothing was reset: `blocked (gpu_busy)`. Success needs a `was successfully reset` line for
//!   every GPU of the group and exit 0; anything else is `reset_error`.
//! - the verification: `--query-gpu` lists every GPU of the group with its UUID at its address
//!   again, then the kernel log.

pub(crate) mod backend;
mod error;
mod host;
pub mod nvidia_smi;
mod target;

pub use error::NvidiaSmiError;
pub use host::{NVIDIA_SMI_PLACES, NvidiaHost, NvidiaSmiHost, reset_ids};
pub use target::NvidiaTarget;
