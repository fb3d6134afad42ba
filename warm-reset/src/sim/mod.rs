//! Simulated hosts, one per method, behind the same backends as the real ones: the machine,
//! the executor and the backends' rules run unchanged on them; tests run them on a
//! [`VirtualClock`](crate::VirtualClock).
//!
//! - [`SimMetax`]: MetaX (`mx-smi`'s published layouts, printed and read back).
//! - [`SimNvidia`]: NVIDIA (`nvidia-smi`'s published formats, printed and read back).
//! - [`SimPci`]: PCI functions in sysfs.
//! - [`scenario`]: a named scenario of a method, for `mxctl reset --simulate`.
//! - [`interrupted_reset`]: the journal as a run killed inside its window leaves it.
//!
//! Every simulator is `Send` (its clock is shared through an `Arc`), and refuses with the
//! reasons of its method's real host.

mod kernel;
mod metax;
mod nvidia;
mod pci;

pub use kernel::SimKernelLog;
pub use metax::{METAX_SCENARIOS, MetaxFault, MetaxSim, SimMetax};
pub use nvidia::{NVIDIA_SCENARIOS, NvidiaFault, NvidiaSim, SimNvidia};
pub use pci::{PCI_SCENARIOS, PciFault, PciSim, SimPci, sim_function};

use crate::backend::{Backend, Refusal};
use crate::clock::Clock;
use crate::journal::{InFlight, Journal, JournalError};
use crate::method::Method;
use crate::reset_target::ResetTarget;
use gpu_host_probe::{Host, LockError};
use std::sync::Arc;
use std::time::Duration;

/// The scenarios of a method, with what each shows.
pub fn scenarios(method: Method) -> &'static [(&'static str, &'static str)] {
    match method {
        Method::Metax => &METAX_SCENARIOS,
        Method::Nvidia => &NVIDIA_SCENARIOS,
        Method::Pci => &PCI_SCENARIOS,
    }
}

/// The simulated host of a method's named scenario; `None` for a name the method does not know.
pub fn scenario(method: Method, name: &str, clock: Arc<dyn Clock>) -> Option<Box<dyn Backend>> {
    match method {
        Method::Metax => {
            SimMetax::scenario(name, clock).map(|host| Box::new(host) as Box<dyn Backend>)
        }
        Method::Nvidia => {
            SimNvidia::scenario(name, clock).map(|host| Box::new(host) as Box<dyn Backend>)
        }
        Method::Pci => SimPci::scenario(name, clock).map(|host| Box::new(host) as Box<dyn Backend>),
    }
}

/// Why [`interrupted_reset`] could not leave its record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InterruptedError {
    /// The host lock is held (the error names its holder), or its file could not be opened.
    #[error("cannot take the host lock")]
    Lock(#[source] LockError),
    /// The backend does not know the target.
    #[error("the simulated host refuses \"{target}\": {}", refusal.detail)]
    Resolve {
        /// The target.
        target: ResetTarget,
        /// Its refusal.
        refusal: Refusal,
    },
    /// The journal could not be written.
    #[error("cannot write the journal")]
    Journal(#[from] JournalError),
}

/// Leaves the journal of `host` as a run killed inside its window leaves it: a reset of `target`
/// (resolved through `backend`) in flight since `started_unix_ms`, with `window`, under
/// `boot_id` — what a test of a restarted run starts from. Written under the host lock, like
/// every journal write.
pub fn interrupted_reset(
    host: &Host,
    backend: &mut dyn Backend,
    target: &ResetTarget,
    started_unix_ms: u64,
    window: Duration,
    boot_id: Option<&str>,
) -> Result<(), InterruptedError> {
    let lock = host.try_lock().map_err(InterruptedError::Lock)?;
    let (target, _) = backend
        .resolve(target)
        .map_err(|refusal| InterruptedError::Resolve {
            target: target.clone(),
            refusal,
        })?;
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    Journal::new(&lock).begin(InFlight::new(
        target,
        started_unix_ms,
        window_ms,
        boot_id.map(str::to_owned),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sendable<T: Send>(_: &T) {}

    #[test]
    fn every_simulator_moves_to_another_thread() {
        let clock: Arc<dyn Clock> = Arc::new(crate::clock::VirtualClock::new(0));
        sendable(&SimMetax::new(clock.clone(), &[2]));
        sendable(&SimNvidia::new(clock.clone(), 2, &[]));
        sendable(&SimPci::new(clock));
    }
}
