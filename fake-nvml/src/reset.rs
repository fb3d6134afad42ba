//! A warm-reset backend for tests: the nvidia method over the fake's state file, so an apply
//! (or any embedder's reset) completes the fake card's pending MIG mode as a GPU reset does.
//!
//! [`FakeNvmlHost`] is the host the nvidia method reads — `nvidia-smi`'s published outputs and
//! the driver's `information` files, made from the state file — and [`FakeNvmlBackend`] the
//! method's backend over it (`warm_reset::NvidiaBackend`, the same code the real host runs).
//! What it models:
//!
//! - `--query-gpu`: every device of the state, indexed in bus order, with its UUID and name.
//! - `topo -m`: the scenario's [`nvlink`](crate::Scenario::nvlink) groups as `NV12`
//!   cells (an A100 SXM4's twelve NVLinks), every other pair `SYS`; the nvidia method resets a
//!   card's whole group in one command, and refuses when a peer outside the apply is in use.
//! - holders of `/dev/nvidia<minor>` and compute apps: the device's `clients`.
//! - `--gpu-reset -i <bus ids>`: [`StateFile::reset_gpu`] on each (under the file's lock),
//!   after the scenario's reset cost on the given clock; the published success line per GPU.
//! - the kernel log: empty.
//! - what goes wrong, when a test asks ([`ResetFault`]): a reset without effect, a hung one, a
//!   card gone after its reset.

use crate::scenario::{Device, Scenario, parse_bus_id};
use crate::store::StateFile;
use gpu_host_probe::Clock;
use gpu_host_probe::Holder;
use gpu_partition_types::Bdf;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use warm_reset::BackendError;
use warm_reset::io::{KernelLogSource, KmsgRecord, ToolEnd};
use warm_reset::nvidia::nvidia_smi::NvidiaGpu;
use warm_reset::nvidia::{NvidiaHost, NvidiaSmiError, reset_ids};

/// The nvidia method's backend over the fake's state file.
pub type FakeNvmlBackend = warm_reset::NvidiaBackend<FakeNvmlHost>;

/// The NVIDIA host a fake NVML's state file describes.
#[derive(Debug)]
pub struct FakeNvmlHost {
    state: StateFile,
    clock: Arc<dyn Clock>,
    /// Every `--gpu-reset -i` received, in order (the bus IDs, comma-joined).
    pub resets: Vec<String>,
    /// What goes wrong with the resets, if anything (none by default).
    pub fault: Option<ResetFault>,
}

/// What goes wrong with a reset of the fake host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResetFault {
    /// The command says every GPU was reset, but nothing changed: the pending mode stays
    /// pending (as when the reset did not reach the card).
    NoEffect,
    /// The command never ends (it is killed at the end of the window given).
    Hang,
    /// The card at this bus ID is not listed again after its reset (fallen off the bus).
    Gone(String),
}

/// The nvidia method's backend over the state file `state` (the one a helper wrapper of
/// [`crate::support::stateful_helper_wrapper`] keeps), whose resets take the scenario's reset
/// cost on `clock`.
pub fn backend(state: impl Into<PathBuf>, clock: Arc<dyn Clock>) -> FakeNvmlBackend {
    warm_reset::NvidiaBackend::of(FakeNvmlHost {
        state: StateFile::new(state),
        clock,
        resets: Vec::new(),
        fault: None,
    })
}

/// A bus ID as `nvidia-smi` prints it (`00000000:3B:00.0`).
fn printed(bus_id: &str) -> Option<String> {
    let (domain, bus, device, function) = parse_bus_id(bus_id)?;
    Some(format!("{domain:08X}:{bus:02X}:{device:02X}.{function:X}"))
}

/// A file of the (fake) driver that does not read: the state file, or a GPU's `information`;
/// what the real driver's unreadable files give, `nvidia_smi_unavailable` before a reset.
fn unavailable(path: PathBuf, why: std::io::Error) -> BackendError {
    NvidiaSmiError::DriverFile {
        path,
        source: why.into(),
    }
    .into()
}

impl FakeNvmlHost {
    /// The state as the file holds it now.
    fn scenario(&self) -> Result<Scenario, BackendError> {
        self.state
            .read()
            .map_err(|why| unavailable(self.state.path().to_owned(), std::io::Error::other(why)))
    }

    /// The devices in bus order, each with its index (its minor too) and printed bus ID.
    fn listed(&self) -> Result<Vec<(u32, String, Device)>, BackendError> {
        let scenario = self.scenario()?;
        let gone = match &self.fault {
            Some(ResetFault::Gone(bus_id)) if !self.resets.is_empty() => parse_bus_id(bus_id),
            _ => None,
        };
        let mut devices: Vec<_> = scenario
            .devices
            .into_iter()
            .filter(|device| gone.is_none() || parse_bus_id(&device.pci_bus_id) != gone)
            .filter_map(|device| {
                let key = parse_bus_id(&device.pci_bus_id)?;
                Some((key, printed(&device.pci_bus_id)?, device))
            })
            .collect();
        devices.sort_by_key(|(key, _, _)| *key);
        Ok(devices
            .into_iter()
            .zip(0u32..)
            .map(|((_, printed, device), index)| (index, printed, device))
            .collect())
    }
}

impl KernelLogSource for FakeNvmlHost {
    fn mark_kernel_log(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    fn records_since_mark(&mut self) -> Result<Vec<KmsgRecord>, BackendError> {
        Ok(Vec::new())
    }
}

impl NvidiaHost for FakeNvmlHost {
    fn is_root(&mut self) -> bool {
        true
    }

    fn kernel_log(&mut self) -> &mut dyn KernelLogSource {
        self
    }

    fn find_nvidia_smi(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    fn query_gpus(&mut self) -> Result<String, BackendError> {
        Ok(self
            .listed()?
            .iter()
            .map(|(index, bus_id, device)| {
                format!(
                    "{index}, {bus_id}, {}, {}\n",
                    device.uuid_or_derived(),
                    device.name
                )
            })
            .collect())
    }

    fn topology(&mut self) -> Result<String, BackendError> {
        let listed = self.listed()?;
        let groups = self.scenario()?.nvlink;
        let key = |bus_id: &str| parse_bus_id(bus_id);
        let joined = |a: &str, b: &str| {
            groups.iter().any(|group| {
                group.iter().any(|x| key(x) == key(a)) && group.iter().any(|x| key(x) == key(b))
            })
        };
        let names: Vec<String> = listed
            .iter()
            .map(|(index, _, _)| format!("GPU{index}"))
            .collect();
        let mut text = format!(
            "\t{}\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n",
            names.join("\t")
        );
        for (a, _, left) in &listed {
            let cells: Vec<&str> = listed
                .iter()
                .map(|(b, _, right)| {
                    if a == b {
                        " X "
                    } else if joined(&left.pci_bus_id, &right.pci_bus_id) {
                        "NV12"
                    } else {
                        "SYS"
                    }
                })
                .collect();
            text.push_str(&format!("GPU{a}\t{}\t0-63\t0\t\tN/A\n", cells.join("\t")));
        }
        text.push_str(
            "\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP \
             interconnect between NUMA nodes (e.g., QPI/UPI)\n  NV#  = Connection traversing a \
             bonded set of # NVLinks\n",
        );
        Ok(text)
    }

    fn compute_apps(&mut self) -> Result<String, BackendError> {
        Ok(self
            .listed()?
            .iter()
            .flat_map(|(_, bus_id, device)| {
                device
                    .clients
                    .iter()
                    .map(move |client| format!("{}, {bus_id}\n", client.pid))
            })
            .collect())
    }

    fn information(&mut self, bdf: Bdf) -> Result<String, BackendError> {
        let listed = self.listed()?;
        let (index, _, device) = listed
            .iter()
            .find(|(_, bus_id, _)| parse_bus_id(bus_id) == parse_bus_id(&bdf.to_string()))
            .ok_or_else(|| {
                unavailable(
                    PathBuf::from(format!("/proc/driver/nvidia/gpus/{bdf}/information")),
                    std::io::Error::from(std::io::ErrorKind::NotFound),
                )
            })?;
        Ok(format!(
            "Model:           {}\nGPU UUID:        {}\nBus Location:    {bdf}\nDevice Minor:    \
             {index}\nGPU Excluded:    No\n",
            device.name,
            device.uuid_or_derived()
        ))
    }

    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        Ok(self
            .listed()?
            .iter()
            .flat_map(|(index, _, device)| {
                let file = PathBuf::from(format!("/dev/nvidia{index}"));
                device
                    .clients
                    .iter()
                    .map(move |client| Holder::new(client.pid, &client.name, file.clone()))
            })
            .filter(|holder| files.contains(&holder.file))
            .collect())
    }

    fn reset(&mut self, group: &[NvidiaGpu], within: Duration) -> ToolEnd {
        let ids = reset_ids(group);
        self.resets.push(ids.clone());
        let command = format!("nvidia-smi --gpu-reset -i {ids}");
        let cost = self
            .scenario()
            .map(|scenario| scenario.costs.reset())
            .unwrap_or_default();
        if self.fault == Some(ResetFault::Hang) {
            self.clock.sleep(within);
            return ToolEnd::Hung;
        }
        self.clock.sleep(cost.min(within));
        if cost > within {
            return ToolEnd::Hung;
        }
        let effect = self.fault != Some(ResetFault::NoEffect);
        let mut said = String::new();
        for id in group.iter().map(|gpu| gpu.bus_id.as_str()) {
            // A reset without effect still finds the card (one that is not there is not reset).
            let found = if effect {
                self.state.reset_gpu(id).is_ok()
            } else {
                self.state
                    .read()
                    .is_ok_and(|state| state.device_at(id).is_some())
            };
            if !found {
                said.push_str(&format!("Unable to reset GPU {id}: not found\n"));
                return ToolEnd::Exited {
                    command,
                    code: 3,
                    said,
                };
            }
            said.push_str(&format!("GPU {id} was successfully reset.\n"));
        }
        ToolEnd::Exited {
            command,
            code: 0,
            said,
        }
    }
}
