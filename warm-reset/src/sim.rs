//! A simulated MetaX host: GPUs in interconnect groups, processes, the driver's use count, a
//! reset that takes time, and faults. It implements [`Backend`], so the same machine and
//! executor run on it; tests run it on a [`VirtualClock`](crate::VirtualClock).

use crate::backend::{Backend, ResetEnd};
use crate::clock::Clock;
use crate::host_files::DriverUse;
use crate::mx_smi::{self, GpuRow, GpuState, VersionCheck};
use gpu_partition_types::Bdf;
use std::rc::Rc;
use std::time::Duration;

/// What goes wrong on the simulated host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// `mx-smi -r` never ends.
    Hang,
    /// `mx-smi -r` reports an error.
    Error,
    /// This node is gone after the reset.
    GpuMissing(u32),
    /// This node stays `Unavailable` after the reset.
    GpuUnavailable(u32),
    /// The kernel logs errors during the reset.
    KernelErrors,
    /// Two nodes swap PCI addresses after the reset.
    TopologyWrong,
}

/// The simulated host.
#[derive(Debug)]
pub struct SimHost {
    clock: Rc<dyn Clock>,
    gpus: Vec<(GpuRow, u32)>,
    /// Pids using the GPUs.
    pub processes: Vec<u32>,
    /// The `metax` use count; `None` = not loaded.
    pub driver_use: Option<u32>,
    /// Whether the run is root.
    pub root: bool,
    /// Whether `mx-smi` is there.
    pub mx_smi: bool,
    /// What `mx-smi --show-version` prints.
    pub versions: String,
    /// How long a reset takes.
    pub reset_duration: Duration,
    /// How long after `mx-smi -r` returns the GPUs are listed `Available` again.
    pub recovery: Duration,
    /// What goes wrong, if anything.
    pub fault: Option<Fault>,
    back_at: Option<(Duration, Vec<u32>)>,
    kernel_log: Vec<(u64, u8, String)>,
    mark: u64,
    /// Every `mx-smi -r -i` the host received, in order.
    pub resets: Vec<String>,
}

impl std::fmt::Debug for dyn Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({:?})", self.now())
    }
}

impl SimHost {
    /// A host with `groups`: each inner list is an interconnect group of that many GPUs. Node
    /// IDs count from 0, PCI addresses from `0000:06:00.0`.
    pub fn new(clock: Rc<dyn Clock>, groups: &[usize]) -> Self {
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
            versions: "mx-smi version: 2.2.1\nKernel Mode Driver Version: 2.9.0\nVBIOS Version: 1.14.0.0\n".to_owned(),
            reset_duration: Duration::from_secs(2),
            recovery: Duration::ZERO,
            fault: None,
            back_at: None,
            kernel_log: vec![(1, 6, "metax: loaded".to_owned())],
            mark: 0,
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

impl Backend for SimHost {
    fn is_root(&mut self) -> bool {
        self.root
    }

    fn find_mx_smi(&mut self) -> Result<(), String> {
        if self.mx_smi {
            Ok(())
        } else {
            Err("no usable mx-smi (simulated)".to_owned())
        }
    }

    fn driver_use(&mut self) -> DriverUse {
        self.driver_use
            .map_or(DriverUse::NotLoaded, DriverUse::Loaded)
    }

    fn versions(&mut self) -> Result<VersionCheck, String> {
        Ok(mx_smi::check_versions(&self.versions))
    }

    fn processes(&mut self) -> Result<Vec<u32>, String> {
        Ok(self.processes.clone())
    }

    fn list(&mut self) -> Result<Vec<GpuRow>, String> {
        let now = self.clock.now();
        let mut rows = Vec::new();
        for (row, _) in &self.gpus {
            let mut row = row.clone();
            if let Some((back_at, nodes)) = &self.back_at {
                if nodes.contains(&row.node) {
                    match &self.fault {
                        Some(Fault::GpuMissing(node)) if *node == row.node => continue,
                        Some(Fault::GpuUnavailable(node)) if *node == row.node => {
                            row.state = GpuState::Unavailable
                        }
                        _ if now < *back_at => row.state = GpuState::Unavailable,
                        _ => {}
                    }
                }
            }
            rows.push(row);
        }
        if self.back_at.is_some() && self.fault == Some(Fault::TopologyWrong) && rows.len() >= 2 {
            let first = rows[0].bdf;
            rows[0].bdf = rows[1].bdf;
            rows[1].bdf = first;
        }
        Ok(rows)
    }

    fn mark_kernel_log(&mut self) -> Result<(), String> {
        self.mark = self
            .kernel_log
            .iter()
            .map(|(sequence, _, _)| *sequence)
            .max()
            .unwrap_or(0);
        Ok(())
    }

    fn kernel_errors(&mut self) -> Result<Vec<String>, String> {
        Ok(self
            .kernel_log
            .iter()
            .filter(|(sequence, level, _)| *sequence > self.mark && *level <= 3)
            .map(|(_, _, message)| message.clone())
            .collect())
    }

    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ResetEnd {
        self.resets.push(mx_smi_id.to_owned());
        let nodes = self.reset_nodes(mx_smi_id);
        let started = self.clock.now();
        let next = self.kernel_log.len() as u64 + 1;
        self.kernel_log
            .push((next, 6, format!("metax: warm reset of {mx_smi_id}")));
        if self.fault == Some(Fault::KernelErrors) {
            self.kernel_log.push((
                next + 1,
                3,
                "metax 0000:06:00.0: PCIe link training failed".to_owned(),
            ));
        }
        if self.fault == Some(Fault::Hang) {
            self.clock.sleep(within);
            self.back_at = Some((Duration::MAX, nodes));
            return ResetEnd::Hung;
        }
        let took = self.reset_duration.min(within);
        self.clock.sleep(took);
        self.back_at = Some((started + took + self.recovery, nodes));
        if self.reset_duration > within {
            return ResetEnd::Hung;
        }
        if self.fault == Some(Fault::Error) {
            return ResetEnd::Failed(
                "mx-smi: reset failed: device 0 timed out (simulated)".to_owned(),
            );
        }
        ResetEnd::Finished
    }

    fn group_of(&mut self, node: u32) -> Option<Vec<u32>> {
        let group = self.gpus.iter().find(|(row, _)| row.node == node)?.1;
        Some(
            self.gpus
                .iter()
                .filter(|(_, g)| *g == group)
                .map(|(row, _)| row.node)
                .collect(),
        )
    }
}

/// The scenarios `mxctl reset --simulate` knows, with what each shows.
pub const SCENARIOS: [(&str, &str); 14] = [
    (
        "ok",
        "4 GPUs in 2 MetaXLink groups; the reset takes 2 s and every GPU comes back",
    ),
    (
        "slow",
        "the reset takes 10 s and the GPUs come back 5 s later",
    ),
    ("hang", "mx-smi -r never ends: killed at the window's end"),
    ("error", "mx-smi -r reports an error"),
    ("gpu-missing", "GPU#1 is gone after the reset"),
    ("gpu-unavailable", "GPU#1 stays Unavailable"),
    ("kernel-errors", "the kernel logs an error during the reset"),
    ("topology-wrong", "GPU#0 and GPU#1 swap PCI addresses"),
    ("busy", "a process uses the GPUs"),
    ("driver-in-use", "the metax use count is 2"),
    ("driver-not-loaded", "no metax line in /proc/modules"),
    ("too-old", "the kernel driver is 2.3.0"),
    ("not-root", "the run is not root"),
    ("no-mx-smi", "mx-smi is absent"),
];

impl SimHost {
    /// The host of a named scenario (see [`SCENARIOS`]); `None` for an unknown name.
    pub fn scenario(name: &str, clock: Rc<dyn Clock>) -> Option<SimHost> {
        let mut host = SimHost::new(clock, &[2, 2]);
        match name {
            "ok" => {}
            "slow" => {
                host.reset_duration = Duration::from_secs(10);
                host.recovery = Duration::from_secs(5);
            }
            "hang" => host.fault = Some(Fault::Hang),
            "error" => host.fault = Some(Fault::Error),
            "gpu-missing" => host.fault = Some(Fault::GpuMissing(1)),
            "gpu-unavailable" => host.fault = Some(Fault::GpuUnavailable(1)),
            "kernel-errors" => host.fault = Some(Fault::KernelErrors),
            "topology-wrong" => host.fault = Some(Fault::TopologyWrong),
            "busy" => host.processes = vec![4242],
            "driver-in-use" => host.driver_use = Some(2),
            "driver-not-loaded" => host.driver_use = None,
            "too-old" => host.versions = host.versions.replace("2.9.0", "2.3.0"),
            "not-root" => host.root = false,
            "no-mx-smi" => host.mx_smi = false,
            _ => return None,
        }
        Some(host)
    }
}
