//! [`SysfsError`]: a sysfs file of a PCI function that could not be read.

/// Placeholder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SysfsError {
    /// Placeholder.
    #[error("sysfs")]
    Todo,
}
