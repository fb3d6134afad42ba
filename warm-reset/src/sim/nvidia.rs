//! [`SimNvidia`]: a simulated NVIDIA host — GPUs, NVLink links, holders of `/dev/nvidia*`,
//! compute apps, a reset that takes time, and faults — behind the same [`NvidiaBackend`] as the
//! real host. It prints `nvidia-smi`'s published formats and the backend reads them back.

use super::kernel::SimKernelLog;
use super::{Scenario, reset_ends, set_up, tool_found};
use crate::NvidiaBackend;
use crate::backend::BackendError;
use crate::nvidia::nvidia_smi::NvidiaGpu;
use crate::nvidia::{NVIDIA_SMI_PLACES, NvidiaHost, NvidiaSmiError, reset_ids};
use crate::tool::ToolEnd;
use gpu_host_probe::Clock;
use gpu_host_probe::Holder;
use gpu_partition_types::Bdf;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What goes wrong on the simulated NVIDIA host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NvidiaFault {
    /// `--gpu-reset` prints the busy block and exits 255 (nothing is reset).
    BusyBlock,
    /// `--gpu-reset` exits 3 (not available) and says so.
    Error,
    /// `--gpu-reset` never ends.
    Hang,
    /// This index is gone after the reset.
    GpuMissing(u32),
    /// The kernel logs a failure of the first GPU during the reset.
    KernelErrors,
}

/// A simulated NVIDIA host behind the NVIDIA backend; its fields are [`NvidiaSim`]'s.
pub type SimNvidia = NvidiaBackend<NvidiaSim>;

/// The simulated NVIDIA host itself.
#[derive(Debug)]
pub struct NvidiaSim {
    clock: Arc<dyn Clock>,
    /// The GPUs, by index.
    pub gpus: Vec<NvidiaGpu>,
    /// The NVLink links (pairs of indices).
    pub links: Vec<(u32, u32)>,
    /// Whether the run is root.
    pub root: bool,
    /// Whether `nvidia-smi` is there.
    pub nvidia_smi: bool,
    /// Processes holding a GPU's device file: pid, name, GPU index.
    pub holders: Vec<(u32, String, u32)>,
    /// Compute apps: pid, GPU index.
    pub compute_apps: Vec<(u32, u32)>,
    /// The kernel log.
    pub kernel_log: SimKernelLog,
    /// How long a reset takes.
    pub reset_duration: Duration,
    /// What goes wrong, if anything.
    pub fault: Option<NvidiaFault>,
    reset_done: bool,
    /// Every `--gpu-reset -i` the host received, in order.
    pub resets: Vec<String>,
    /// How long after the reset command ends the reset GPUs are listed again (0: at once).
    pub recovery: Duration,
    /// When the reset GPUs are listed again, and which (by bus ID).
    back_at: Option<(Duration, Vec<String>)>,
}

impl SimNvidia {
    /// A host with `count` GPUs (indices from 0, bus IDs from `00000000:18:00.0`) and these
    /// NVLink links.
    pub fn new(clock: Arc<dyn Clock>, count: u32, links: &[(u32, u32)]) -> Self {
        let gpus = (0..count)
            .filter_map(|index| {
                NvidiaGpu::new(
                    index,
                    &format!("00000000:{:02X}:00.0", 0x18 + index),
                    &format!("GPU-5a1e0000-0000-0000-0000-{index:012x}"),
                    "NVIDIA H100 80GB HBM3",
                )
            })
            .collect();
        NvidiaBackend::of(NvidiaSim {
            clock,
            gpus,
            links: links.to_vec(),
            root: true,
            nvidia_smi: true,
            holders: Vec::new(),
            compute_apps: Vec::new(),
            kernel_log: SimKernelLog::default(),
            reset_duration: Duration::from_secs(3),
            fault: None,
            reset_done: false,
            resets: Vec::new(),
            recovery: Duration::ZERO,
            back_at: None,
        })
    }
}

impl NvidiaSim {
    fn listed(&self) -> impl Iterator<Item = &NvidiaGpu> {
        let now = self.clock.now();
        self.gpus.iter().filter(move |gpu| {
            let recovering = self
                .back_at
                .as_ref()
                .is_some_and(|(at, ids)| now < *at && ids.contains(&gpu.bus_id));
            let missing = self.reset_done && self.fault == Some(NvidiaFault::GpuMissing(gpu.index));
            !(recovering || missing)
        })
    }

    /// What `topo -m` prints on this host.
    pub fn topology_text(&self) -> String {
        let names: Vec<String> = self
            .gpus
            .iter()
            .map(|gpu| format!("GPU{}", gpu.index))
            .collect();
        let mut text = format!(
            "\t{}\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n",
            names.join("\t")
        );
        for a in &self.gpus {
            let cells: Vec<String> = self
                .gpus
                .iter()
                .map(|b| {
                    if a.index == b.index {
                        " X ".to_owned()
                    } else if self.links.contains(&(a.index, b.index))
                        || self.links.contains(&(b.index, a.index))
                    {
                        "NV18".to_owned()
                    } else {
                        "SYS".to_owned()
                    }
                })
                .collect();
            text.push_str(&format!(
                "GPU{}\t{}\t0-55\t0\t\tN/A\n",
                a.index,
                cells.join("\t")
            ));
        }
        text.push_str("\nLegend:\n\n  X    = Self\n  NV#  = Connection traversing a bonded set of # NVLinks\n");
        text
    }

    fn gpu_at(&self, bdf: Bdf) -> Option<&NvidiaGpu> {
        self.gpus.iter().find(|gpu| gpu.bdf == bdf)
    }
}

impl NvidiaHost for NvidiaSim {
    sim_host_basics!();

    fn find_nvidia_smi(&mut self) -> Result<(), BackendError> {
        Ok(
            tool_found(self.nvidia_smi, "nvidia-smi", &NVIDIA_SMI_PLACES)
                .map_err(NvidiaSmiError::Tool)?,
        )
    }

    fn query_gpus(&mut self) -> Result<String, BackendError> {
        Ok(self
            .listed()
            .map(|gpu| format!("{}\n", gpu.to_line()))
            .collect())
    }

    fn topology(&mut self) -> Result<String, BackendError> {
        Ok(self.topology_text())
    }

    fn compute_apps(&mut self) -> Result<String, BackendError> {
        Ok(self
            .compute_apps
            .iter()
            .filter_map(|(pid, index)| {
                let gpu = self.gpus.iter().find(|gpu| gpu.index == *index)?;
                Some(format!("{pid}, {}\n", gpu.bus_id))
            })
            .collect())
    }

    fn information(&mut self, bdf: Bdf) -> Result<String, BackendError> {
        let gpu = self.gpu_at(bdf).ok_or_else(|| NvidiaSmiError::DriverFile {
            path: PathBuf::from(format!("/proc/driver/nvidia/gpus/{bdf}/information")),
            source: std::io::Error::from(std::io::ErrorKind::NotFound).into(),
        })?;
        Ok(format!(
            "Model:           {}\nGPU UUID:        {}\nBus Location:    {bdf}\nDevice Minor:    {}\n",
            gpu.name, gpu.uuid, gpu.index
        ))
    }

    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        Ok(self
            .holders
            .iter()
            .filter_map(|(pid, name, index)| {
                let file = PathBuf::from(format!("/dev/nvidia{index}"));
                files.contains(&file).then(|| Holder::new(*pid, name, file))
            })
            .collect())
    }

    fn reset(&mut self, group: &[NvidiaGpu], within: Duration) -> ToolEnd {
        let ids = reset_ids(group);
        self.resets.push(ids.clone());
        let command = format!("nvidia-smi --gpu-reset -i {ids}");
        let bdfs: Vec<Bdf> = group.iter().map(|gpu| gpu.bdf).collect();
        match self.fault {
            Some(NvidiaFault::Hang) => {
                self.clock.sleep(within);
                return ToolEnd::Hung;
            }
            Some(NvidiaFault::BusyBlock) => {
                let lines: Vec<String> = group
                    .iter()
                    .map(|gpu| format!("  GPU {}: In use by another client", gpu.bus_id))
                    .collect();
                return ToolEnd::Exited {
                    command,
                    code: 255,
                    said: format!(
                        "The following GPUs could not be reset:\n{}\n\n1 device is currently being used by one or more other processes (simulated).\n",
                        lines.join("\n")
                    ),
                };
            }
            _ => {}
        }
        if !reset_ends(&*self.clock, false, self.reset_duration, within) {
            return ToolEnd::Hung;
        }
        self.reset_done = true;
        self.back_at = Some((
            self.clock.now() + self.recovery,
            group.iter().map(|gpu| gpu.bus_id.clone()).collect(),
        ));
        if self.fault == Some(NvidiaFault::KernelErrors) {
            if let Some(first) = bdfs.first() {
                self.kernel_log.push(
                    4,
                    format!("nvidia {first}: not ready 65535ms after FLR; giving up"),
                );
            }
        }
        if self.fault == Some(NvidiaFault::Error) {
            return ToolEnd::Exited {
                command,
                code: 3,
                said: "Unable to reset GPU: not available (simulated)\n".to_owned(),
            };
        }
        ToolEnd::Exited {
            command,
            code: 0,
            said: group
                .iter()
                .map(|gpu| format!("GPU {} was successfully reset.\n", gpu.bus_id))
                .collect(),
        }
    }
}

/// The NVIDIA scenarios `mxctl reset --method nvidia --simulate` knows: what each shows and
/// changes on the default host ([`SimNvidia::scenario`]).
pub const NVIDIA_SCENARIOS: [Scenario<NvidiaSim>; 9] = [
    Scenario::new(
        "ok",
        "4 GPUs, 0 and 1 joined by NVLink: GPU 0 is reset with its peer, both come back",
        |_| {},
    ),
    Scenario::new(
        "busy",
        "a process holds /dev/nvidia1 (the NVLink peer of 0)",
        |host| host.holders = vec![(2718, "nvidia-persiste".to_owned(), 1)],
    ),
    Scenario::new("compute-app", "a compute app runs on GPU 0", |host| {
        host.compute_apps = vec![(31415, 0)];
    }),
    fault_scenario!(
        "busy-block",
        "nvidia-smi refuses the reset as in use",
        NvidiaFault::BusyBlock
    ),
    fault_scenario!(
        "error",
        "nvidia-smi --gpu-reset exits 3",
        NvidiaFault::Error
    ),
    fault_scenario!(
        "hang",
        "nvidia-smi --gpu-reset never ends",
        NvidiaFault::Hang
    ),
    fault_scenario!(
        "gpu-missing",
        "GPU 1 is gone after the reset",
        NvidiaFault::GpuMissing(1)
    ),
    fault_scenario!(
        "kernel-errors",
        "the kernel gives up on GPU 0 after the reset",
        NvidiaFault::KernelErrors
    ),
    Scenario::new("no-nvidia-smi", "nvidia-smi is absent", |host| {
        host.nvidia_smi = false;
    }),
];

impl SimNvidia {
    /// The host of a named scenario (see [`NVIDIA_SCENARIOS`]): 4 GPUs, 0 and 1 joined by
    /// NVLink, changed as the scenario says; `None` for an unknown name.
    pub fn scenario(name: &str, clock: Arc<dyn Clock>) -> Option<SimNvidia> {
        set_up(&NVIDIA_SCENARIOS, name, || {
            SimNvidia::new(clock, 4, &[(0, 1)])
        })
    }
}
