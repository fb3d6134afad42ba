//! Simulated hosts, one per method, behind the same backends as the real ones: the machine,
//! the executor and the backends' rules run unchanged on them; tests run them on a
//! [`VirtualClock`](crate::VirtualClock).
//!
//! - [`SimHost`]: MetaX (`mx-smi`'s published layouts, printed and read back).
//! - [`SimKernelLog`]: a simulated host's kernel log.

mod kernel;
mod metax;

pub use kernel::SimKernelLog;
pub use metax::{Fault, MetaxSim, SCENARIOS, SimHost};
