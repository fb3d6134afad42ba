//! [`NvidiaSmiError`]: why `nvidia-smi`, or the NVIDIA driver's files, gave no answer the
//! procedure can use.

/// `nvidia-smi` could not be found, did not run to a clean end, or printed what does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NvidiaSmiError {
    /// Placeholder.
    #[error("nvidia-smi")]
    Todo,
}
