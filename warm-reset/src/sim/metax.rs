//! [`SimMetax`]: a simulated MetaX host — GPUs in interconnect groups, processes, the driver's
//! use count, a reset that takes time, and faults — behind the same [`MetaxBackend`] as the
//! real host, so the same rules, machine and executor run on it; tests run it on a
//! [`VirtualClock`](crate::VirtualClock).
//!
//! What it answers goes through the real parsers: it prints plain `mx-smi`, `mx-smi -L` and
//! `mx-smi topo -m` in their published layouts and the backend reads them back.

use super::kernel::SimKernelLog;
use super::{Scenario, set_up, tool_found};
use crate::MetaxBackend;
use crate::backend::BackendError;
use crate::metax::mx_smi::{GpuProcess, GpuRow, GpuState, Topology, Versions};
use crate::metax::{DriverUse, MX_SMI_PLACES, MetaxHost, MxSmiError};
use crate::tool::ToolEnd;
use gpu_host_probe::Clock;
use gpu_partition_types::Bdf;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What goes wrong on the simulated host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetaxFault {
    /// `mx-smi -r` never ends.
    Hang,
    /// `mx-smi -r` exits 1 with an error.
    Error,
    /// `mx-smi -r` exits 0 but prints that the reset failed.
    SaysFailed,
    /// This node is gone after the reset.
    GpuMissing(u32),
    /// This node stays `Not Available` after the reset.
    GpuUnavailable(u32),
    /// The kernel logs errors during the reset.
    KernelErrors,
    /// Two nodes swap PCI addresses after the reset.
    TopologyWrong,
    /// The MetaXLink between these two nodes does not come back.
    LinkLost(u32, u32),
}

/// A simulated MetaX host behind the MetaX backend: build it with [`SimMetax::new`] or
/// [`SimMetax::scenario`]; its fields are [`MetaxSim`]'s.
pub type SimMetax = MetaxBackend<MetaxSim>;

/// The simulated MetaX host itself.
#[derive(Debug)]
pub struct MetaxSim {
    clock: Arc<dyn Clock>,
    gpus: Vec<(GpuRow, u32)>,
    /// Processes using the GPUs.
    pub processes: Vec<GpuProcess>,
    /// The `metax` use count; `None` = not loaded.
    pub driver_use: Option<u32>,
    /// Whether the run is root.
    pub root: bool,
    /// Whether `mx-smi` is there.
    pub mx_smi: bool,
    /// The versions plain `mx-smi` prints in its header.
    pub versions: Versions,
    /// The kernel log.
    pub kernel_log: SimKernelLog,
    /// How long a reset takes.
    pub reset_duration: Duration,
    /// How long after `mx-smi -r` returns the GPUs are listed `Available` again.
    pub recovery: Duration,
    /// What goes wrong, if anything.
    pub fault: Option<MetaxFault>,
    back_at: Option<(Duration, Vec<u32>)>,
    /// Every `mx-smi -r -i` the host received, in order.
    pub resets: Vec<String>,
}

impl SimMetax {
    /// A host with `groups`: each inner list is an interconnect group of that many GPUs. Node
    /// IDs count from 0, PCI addresses from `0000:06:00.0`.
    pub fn new(clock: Arc<dyn Clock>, groups: &[usize]) -> Self {
        MetaxBackend::of(MetaxSim::new(clock, groups))
    }
}

impl MetaxSim {
    /// See [`SimMetax::new`].
    pub fn new(clock: Arc<dyn Clock>, groups: &[usize]) -> Self {
        let mut gpus = Vec::new();
        for (group, size) in groups.iter().enumerate() {
            for _ in 0..*size {
                let node = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
                let bdf = Bdf {
                    domain: 0,
                    bus: u8::try_from(6 + gpus.len()).unwrap_or(u8::MAX),
                    device: 0,
                    function: 0,
                };
                let uuid = format!("GPU-5a1e0000-0000-0000-0000-{node:012x}");
                let row = GpuRow::new(node, "MXC500", bdf, GpuState::Available, Some(&uuid));
                gpus.push((row, u32::try_from(group).unwrap_or(u32::MAX)));
            }
        }
        Self {
            clock,
            gpus,
            processes: Vec::new(),
            driver_use: Some(0),
            root: true,
            mx_smi: true,
            versions: Versions {
                mx_smi: Some("2.3.1".to_owned()),
                kernel_driver: Some("3.8.30".to_owned()),
                bios: Some("1.33.5.0".to_owned()),
                maca: Some("3.7.1.5".to_owned()),
            },
            kernel_log: {
                let mut log = SimKernelLog::default();
                log.push(6, "metax: loaded");
                log
            },
            reset_duration: Duration::from_secs(2),
            recovery: Duration::ZERO,
            fault: None,
            back_at: None,
            resets: Vec::new(),
        }
    }

    /// The nodes of the group(s) that the ID names (the kernel driver resets whole groups).
    fn reset_nodes(&self, mx_smi_id: &str) -> Vec<u32> {
        if mx_smi_id == "all" {
            return self.gpus.iter().map(|(row, _)| row.node).collect();
        }
        let Ok(node) = mx_smi_id.parse::<u32>() else {
            return Vec::new();
        };
        let Some(group) = self
            .gpus
            .iter()
            .find(|(row, _)| row.node == node)
            .map(|(_, group)| *group)
        else {
            return Vec::new();
        };
        self.gpus
            .iter()
            .filter(|(_, g)| *g == group)
            .map(|(row, _)| row.node)
            .collect()
    }
}

/// Adds to `text` a line of `mx-smi`'s box: `inner` padded to the box's width.
fn boxed(text: &mut String, inner: &str) {
    let _ = writeln!(text, "| {inner:<80}|");
}

impl MetaxSim {
    /// What plain `mx-smi` prints on this host (the `Board Name` layout of mx-smi 2.3.1).
    pub fn plain_text(&self) -> String {
        let version = |value: &Option<String>| value.clone().unwrap_or_else(|| "unknown".into());
        let mut text = format!(
            "mx-smi  version: {}\n\n=================== MetaX System Management Interface Log ===================\n\
             Timestamp                                         : Mon Sep  7 07:00:31 2026\n\n\
             Attached GPUs                                     : {}\n",
            version(&self.versions.mx_smi),
            self.gpus.len()
        );
        let edge = format!("+{}+\n", "-".repeat(81));
        text.push_str(&edge);
        // Two versions a line, the second at column 35 of the box.
        for (left, first, right, second) in [
            (
                "MX-SMI ",
                &self.versions.mx_smi,
                "Kernel Mode Driver Version",
                &self.versions.kernel_driver,
            ),
            (
                "MACA Version: ",
                &self.versions.maca,
                "BIOS Version",
                &self.versions.bios,
            ),
        ] {
            let head = format!("{left}{}", version(first));
            boxed(
                &mut text,
                &format!("{head:<35}{right}: {}", version(second)),
            );
        }
        text.push_str(
            "|------------------+-----------------+---------------------+----------------------|\n",
        );
        text.push_str(
            "| Board       Name | GPU   Persist-M | Bus-id              | GPU-Util      sGPU-M |\n",
        );
        text.push_str(
            "| Pwr:Usage/Cap    | Temp   Perf     | Memory-Usage        | GPU-State            |\n",
        );
        text.push_str(
            "|==================+=================+=====================+======================|\n",
        );
        for (row, _) in &self.gpus {
            let _ = writeln!(
                text,
                "| {:<5} MetaX C500 | {:<11} Off | {}        | 0%          Disabled |",
                row.node, row.node, row.bdf
            );
            text.push_str("| 37W / 350W       | 32C          P0 | 826/65536 MiB       | Available            |\n");
            text.push_str("+------------------+-----------------+---------------------+----------------------+\n");
        }
        text.push('\n');
        text.push_str(&edge);
        boxed(&mut text, "Process:");
        text.push_str(
            "|  GPU                    PID         Process Name                 GPU Memory     |\n",
        );
        text.push_str(
            "|                                                                  Usage(MiB)     |\n",
        );
        text.push_str(&format!("|{}|\n", "=".repeat(81)));
        if self.processes.is_empty() {
            text.push_str(&format!("|  {:<79}|\n", "no process found"));
        }
        for process in &self.processes {
            text.push_str(&format!(
                "|  {:<19}{:<16}{:<29}{:<15}|\n",
                process.gpu, process.pid, process.name, process.memory_mib
            ));
        }
        text.push_str(&edge);
        text.push_str("\nEnd of Log\n");
        text
    }

    /// What `mx-smi -L` prints on this host now.
    pub fn listing_text(&self) -> String {
        let now = self.clock.now();
        let mut rows = Vec::new();
        for (row, _) in &self.gpus {
            let mut row = row.clone();
            if let Some((back_at, nodes)) = &self.back_at {
                if nodes.contains(&row.node) {
                    match &self.fault {
                        Some(MetaxFault::GpuMissing(node)) if *node == row.node => continue,
                        Some(MetaxFault::GpuUnavailable(node)) if *node == row.node => {
                            row.state = GpuState::NotAvailable("reset".into());
                            row.uuid = None;
                        }
                        _ if now < *back_at => {
                            row.state = GpuState::NotAvailable("resetting".into());
                            row.uuid = None;
                        }
                        _ => {}
                    }
                }
            }
            rows.push(row);
        }
        if self.back_at.is_some()
            && self.fault == Some(MetaxFault::TopologyWrong)
            && rows.len() >= 2
        {
            let first = rows[0].bdf;
            rows[0].bdf = rows[1].bdf;
            rows[1].bdf = first;
        }
        let mut text = format!(
            "mx-smi  version: {}\n",
            self.versions.mx_smi.as_deref().unwrap_or("2.3.1")
        );
        for row in rows {
            text.push_str(&row.to_line());
            text.push('\n');
        }
        text
    }

    /// The MetaXLink links now: every pair inside a group, less a lost link after a reset.
    pub fn topology_now(&self) -> Topology {
        let nodes: Vec<u32> = self.gpus.iter().map(|(row, _)| row.node).collect();
        let mut links = Vec::new();
        for (a, group_a) in &self.gpus {
            for (b, group_b) in &self.gpus {
                if a.node < b.node && group_a == group_b {
                    links.push((a.node, b.node));
                }
            }
        }
        if let (Some(_), Some(MetaxFault::LinkLost(x, y))) = (&self.back_at, &self.fault) {
            links.retain(|link| *link != ((*x).min(*y), (*x).max(*y)));
        }
        Topology::new(nodes, links)
    }
}

impl MetaxHost for MetaxSim {
    sim_host_basics!();

    fn find_mx_smi(&mut self) -> Result<(), BackendError> {
        Ok(tool_found(self.mx_smi, "mx-smi", &MX_SMI_PLACES).map_err(MxSmiError::Tool)?)
    }

    fn mx_smi_path(&self) -> PathBuf {
        PathBuf::from("mx-smi")
    }

    fn driver_use(&mut self) -> DriverUse {
        self.driver_use
            .map_or(DriverUse::NotLoaded, DriverUse::Loaded)
    }

    fn plain(&mut self) -> Result<String, BackendError> {
        Ok(self.plain_text())
    }

    fn listing(&mut self) -> Result<String, BackendError> {
        Ok(self.listing_text())
    }

    fn topology(&mut self) -> Result<String, BackendError> {
        Ok(self.topology_now().to_text())
    }

    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ToolEnd {
        self.resets.push(mx_smi_id.to_owned());
        let nodes = self.reset_nodes(mx_smi_id);
        let started = self.clock.now();
        self.kernel_log
            .push(6, format!("metax: warm reset of {mx_smi_id}"));
        if self.fault == Some(MetaxFault::KernelErrors) {
            self.kernel_log
                .push(3, "metax 0000:06:00.0: PCIe link training failed");
        }
        if self.fault == Some(MetaxFault::Hang) {
            self.clock.sleep(within);
            self.back_at = Some((Duration::MAX, nodes));
            return ToolEnd::Hung;
        }
        let took = self.reset_duration.min(within);
        self.clock.sleep(took);
        self.back_at = Some((started + took + self.recovery, nodes));
        if self.reset_duration > within {
            return ToolEnd::Hung;
        }
        let command = format!("mx-smi -r -i {mx_smi_id}");
        match self.fault {
            Some(MetaxFault::Error) => ToolEnd::Exited {
                command,
                code: 1,
                said: "reset failed: device 0 timed out\n".to_owned(),
            },
            Some(MetaxFault::SaysFailed) => ToolEnd::Exited {
                command,
                code: 0,
                said: format!("GPU#{mx_smi_id}: warm reset failed (simulated)\n"),
            },
            _ => ToolEnd::Exited {
                command,
                code: 0,
                said: String::new(),
            },
        }
    }
}

/// The scenarios `mxctl reset --simulate` knows: what each shows and changes on the default host
/// ([`SimMetax::scenario`]).
pub const METAX_SCENARIOS: [Scenario<MetaxSim>; 17] = [
    Scenario::new(
        "ok",
        "4 GPUs in 2 MetaXLink groups; the reset takes 2 s and every GPU comes back",
        |_| {},
    ),
    Scenario::new(
        "slow",
        "the reset takes 10 s and the GPUs come back 5 s later",
        |host| {
            host.reset_duration = Duration::from_secs(10);
            host.recovery = Duration::from_secs(5);
        },
    ),
    fault_scenario!(
        "hang",
        "mx-smi -r never ends: killed at the window's end",
        MetaxFault::Hang
    ),
    fault_scenario!(
        "error",
        "mx-smi -r exits 1 with an error",
        MetaxFault::Error
    ),
    fault_scenario!(
        "error-exit-0",
        "mx-smi -r exits 0 but prints that the reset failed",
        MetaxFault::SaysFailed
    ),
    fault_scenario!(
        "gpu-missing",
        "GPU#1 is gone after the reset",
        MetaxFault::GpuMissing(1)
    ),
    fault_scenario!(
        "gpu-unavailable",
        "GPU#1 stays Not Available",
        MetaxFault::GpuUnavailable(1)
    ),
    fault_scenario!(
        "kernel-errors",
        "the kernel logs an error during the reset",
        MetaxFault::KernelErrors
    ),
    fault_scenario!(
        "topology-wrong",
        "GPU#0 and GPU#1 swap PCI addresses",
        MetaxFault::TopologyWrong
    ),
    fault_scenario!(
        "link-lost",
        "the MetaXLink between GPU#0 and GPU#1 does not come back",
        MetaxFault::LinkLost(0, 1)
    ),
    Scenario::new("busy", "a process uses the GPUs", |host| {
        host.processes = vec![GpuProcess::new(0, 4242, "python3 train.py", 4066)];
    }),
    Scenario::new("driver-in-use", "the metax use count is 2", |host| {
        host.driver_use = Some(2);
    }),
    Scenario::new(
        "driver-not-loaded",
        "no metax line in /proc/modules",
        |host| host.driver_use = None,
    ),
    Scenario::new("too-old", "the kernel driver is 2.3.0", |host| {
        host.versions.kernel_driver = Some("2.3.0".to_owned());
    }),
    Scenario::new("not-root", "the run is not root", |host| host.root = false),
    Scenario::new("no-mx-smi", "mx-smi is absent", |host| host.mx_smi = false),
    Scenario::new(
        "kernel-log-unreadable",
        "the kernel log cannot be read: the reset could not be verified",
        |host| host.kernel_log.readable = false,
    ),
];

impl SimMetax {
    /// The host of a named scenario (see [`METAX_SCENARIOS`]): 4 GPUs in 2 MetaXLink groups,
    /// changed as the scenario says; `None` for an unknown name.
    pub fn scenario(name: &str, clock: Arc<dyn Clock>) -> Option<SimMetax> {
        set_up(&METAX_SCENARIOS, name, || SimMetax::new(clock, &[2, 2]))
    }
}
