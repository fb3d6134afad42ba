//! Simulated hosts, one per method, behind the same backends as the real ones: the machine,
//! the executor and the backends' rules run unchanged on them; tests run them on a
//! [`VirtualClock`](gpu_host_probe::VirtualClock).
//!
//! - [`SimMetax`]: MetaX (`mx-smi`'s published layouts, printed and read back).
//! - [`SimNvidia`]: NVIDIA (`nvidia-smi`'s published formats, printed and read back).
//! - [`SimPci`]: PCI functions in sysfs.
//! - [`SimAmd`]: AMD Instinct GPUs in an XGMI hive (`amd-smi list`'s published layout, printed
//!   and read back; sysfs as amdgpu shows it).
//! - [`scenario`]: a named [`Scenario`] of a method, for `mxctl reset --simulate`.
//! - [`interrupted_reset`]: the journal as a run killed inside its window leaves it.
//!
//! Every simulator is `Send` (its clock is shared through an `Arc`), and refuses with the
//! reasons of its method's real host.

/// The answers every simulated host gives alike, whatever its method: it is a simulation, root
/// as its `root` says, with its own `kernel_log`. A macro, not a supertrait: each method's host
/// trait is public and implemented outside the crate, so a new supertrait would break those hosts.
macro_rules! sim_host_basics {
    () => {
        fn simulation(&self) -> bool {
            true
        }

        fn is_root(&mut self) -> bool {
            self.root
        }

        fn kernel_log(&mut self) -> &mut dyn crate::backend::KernelLogSource {
            &mut self.kernel_log
        }
    };
}

/// A [`Scenario`] whose one change is the fault its host injects: every simulator keeps its
/// fault in a `fault` field, and most of each table's scenarios are a fault alone.
macro_rules! fault_scenario {
    ($name:expr, $shows:expr, $fault:expr $(,)?) => {
        Scenario::new($name, $shows, |host| host.fault = Some($fault))
    };
}

mod amd;
mod kernel;
mod metax;
mod nvidia;
mod pci;

pub use amd::{AMD_SCENARIOS, AmdFault, AmdSim, SIM_HIVE, SIM_HIVE_GPUS, SimAmd};
pub use kernel::SimKernelLog;
pub use metax::{METAX_SCENARIOS, MetaxFault, MetaxSim, SimMetax};
pub use nvidia::{NVIDIA_SCENARIOS, NvidiaFault, NvidiaSim, SimNvidia};
pub use pci::{PCI_SCENARIOS, PciFault, PciSim, SimPci, sim_function};

use crate::backend::{Backend, Refusal};
use crate::host_backend::HostBackend;
use crate::journal::{InFlight, Journal, JournalError};
use crate::method::Method;
use crate::reset_target::ResetTarget;
use crate::tool::ToolError;
use gpu_host_probe::Clock;
use gpu_host_probe::{Holder, Host, LockError};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A simulated host's answer to whether its method's `tool` is there: it is when `there`, and
/// otherwise absent from every one of the usual `places`, as the real host would say.
/// A simulated host's own address, written as text in its tables; the all-zero address where
/// one is misspelt (no address of the tables is, and the sims' tests read each one).
fn bdf(text: &str) -> gpu_partition_types::Bdf {
    text.parse().unwrap_or(gpu_partition_types::Bdf::on_bus(0))
}

fn tool_found(there: bool, tool: &'static str, places: &[&str]) -> Result<(), ToolError> {
    if there {
        Ok(())
    } else {
        Err(ToolError::absent(tool, places))
    }
}

/// Who of a simulated host's `holders` holds one of `files`: the answer its host trait's
/// `holders` gives, as the real host's scan of `/proc` would.
fn holding(holders: &[Holder], files: &[PathBuf]) -> Vec<Holder> {
    holders
        .iter()
        .filter(|holder| files.contains(&holder.file))
        .cloned()
        .collect()
}

/// Lets a simulated reset command take its time on `clock`, as the real one would under the
/// runner's deadline: `false` (after `within`, when it is killed) when it `hangs` or its
/// `duration` is longer than `within`; else `true`, after `duration`.
fn reset_ends(clock: &dyn Clock, hangs: bool, duration: Duration, within: Duration) -> bool {
    if hangs || duration > within {
        clock.sleep(within);
        return false;
    }
    clock.sleep(duration);
    true
}

/// A named scenario of one method's simulated host `H`: what it shows, and what it changes on
/// the method's default host. Each method's table ([`METAX_SCENARIOS`], [`NVIDIA_SCENARIOS`],
/// [`PCI_SCENARIOS`], [`AMD_SCENARIOS`]) is the one place a scenario is named.
pub struct Scenario<H> {
    /// Its name, as `mxctl reset --simulate` takes it.
    pub name: &'static str,
    /// What it shows.
    pub shows: &'static str,
    change: fn(&mut H),
}

impl<H> Scenario<H> {
    const fn new(name: &'static str, shows: &'static str, change: fn(&mut H)) -> Self {
        Self {
            name,
            shows,
            change,
        }
    }
}

impl<H> std::fmt::Debug for Scenario<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario")
            .field("name", &self.name)
            .field("shows", &self.shows)
            .finish_non_exhaustive()
    }
}

/// The scenario of `table` named `name`, set on the default host `default` builds; `None` (and
/// nothing built) for a name the table does not have.
fn set_up<M, H>(
    table: &[Scenario<H>],
    name: &str,
    default: impl FnOnce() -> HostBackend<M, H>,
) -> Option<HostBackend<M, H>> {
    let scenario = table.iter().find(|scenario| scenario.name == name)?;
    let mut sim = default();
    (scenario.change)(sim.host_mut());
    Some(sim)
}

/// The scenarios of a method, with what each shows, in the order of its table.
pub fn scenarios(method: Method) -> Vec<(&'static str, &'static str)> {
    fn listed<H>(table: &[Scenario<H>]) -> Vec<(&'static str, &'static str)> {
        table
            .iter()
            .map(|scenario| (scenario.name, scenario.shows))
            .collect()
    }
    match method {
        Method::Metax => listed(&METAX_SCENARIOS),
        Method::Nvidia => listed(&NVIDIA_SCENARIOS),
        Method::Pci => listed(&PCI_SCENARIOS),
        Method::Amd => listed(&AMD_SCENARIOS),
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
        Method::Amd => SimAmd::scenario(name, clock).map(|host| Box::new(host) as Box<dyn Backend>),
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
        let clock: Arc<dyn Clock> = Arc::new(gpu_host_probe::VirtualClock::new(0));
        sendable(&SimMetax::new(clock.clone(), &[2]));
        sendable(&SimNvidia::new(clock.clone(), 2, &[]));
        sendable(&SimPci::new(clock.clone()));
        sendable(&SimAmd::new(clock));
    }
}
