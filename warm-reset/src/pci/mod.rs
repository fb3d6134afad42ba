//! Any PCI function through the kernel's sysfs `reset` file.

mod error;
mod target;

pub use error::SysfsError;
pub use target::PciTarget;
