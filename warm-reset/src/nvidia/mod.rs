//! NVIDIA GPUs through `nvidia-smi`.

mod error;
mod target;

pub use error::NvidiaSmiError;
pub use target::NvidiaTarget;
