//! Simulated hosts, one per method, behind the same backends as the real ones: the machine,
//! the executor and the backends' rules run unchanged on them; tests run them on a
//! [`VirtualClock`](crate::VirtualClock).
//!
//! - [`SimHost`]: MetaX (`mx-smi`'s published layouts, printed and read back).
//! - [`SimNvidia`]: NVIDIA (`nvidia-smi`'s published formats, printed and read back).
//! - [`SimPci`]: PCI functions in sysfs.
//! - [`scenario`]: a named scenario of a method, for `mxctl reset --simulate`.

mod kernel;
mod metax;
mod nvidia;
mod pci;

pub use kernel::SimKernelLog;
pub use metax::{Fault, MetaxSim, SCENARIOS, SimHost};
pub use nvidia::{NVIDIA_SCENARIOS, NvidiaFault, NvidiaSim, SimNvidia};
pub use pci::{PCI_SCENARIOS, PciFault, PciSim, SimPci, sim_function};

use crate::backend::Backend;
use crate::clock::Clock;
use crate::method::Method;
use std::rc::Rc;

/// The scenarios of a method, with what each shows.
pub fn scenarios(method: Method) -> &'static [(&'static str, &'static str)] {
    match method {
        Method::Metax => &SCENARIOS,
        Method::Nvidia => &NVIDIA_SCENARIOS,
        Method::Pci => &PCI_SCENARIOS,
    }
}

/// The simulated host of a method's named scenario; `None` for a name the method does not know.
pub fn scenario(method: Method, name: &str, clock: Rc<dyn Clock>) -> Option<Box<dyn Backend>> {
    match method {
        Method::Metax => {
            SimHost::scenario(name, clock).map(|host| Box::new(host) as Box<dyn Backend>)
        }
        Method::Nvidia => {
            SimNvidia::scenario(name, clock).map(|host| Box::new(host) as Box<dyn Backend>)
        }
        Method::Pci => SimPci::scenario(name, clock).map(|host| Box::new(host) as Box<dyn Backend>),
    }
}
