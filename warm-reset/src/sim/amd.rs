//! [`SimAmd`]: a simulated AMD Instinct host — GPUs in an XGMI hive, holders of `/dev/kfd` and
//! the render nodes, a reset the kernel takes the whole hive through, and faults — behind the
//! same [`AmdBackend`] as the real host. It prints `amd-smi list` in its published layout and
//! the backend reads it back; a reset puts every GPU of the hive in reset (its partition files
//! answer `EPERM`) until it is back.

use super::kernel::SimKernelLog;
use super::{Scenario, bdf, holding, reset_ends, set_up, tool_found};
use crate::AmdBackend;
use crate::amd::amd_smi::AmdSmiGpu;
use crate::amd::{
    AMD_SMI_PLACES, AmdGpuState, AmdHost, AmdSmiError, KFD, PartitionFile, reset_args,
};
use crate::backend::BackendError;
use crate::tool::ToolEnd;
use gpu_host_probe::Clock;
use gpu_host_probe::Holder;
use gpu_host_probe::PciIdentity;
use gpu_partition_types::Bdf;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What goes wrong on the simulated AMD host.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AmdFault {
    /// `amd-smi reset` never ends.
    Hang,
    /// `amd-smi reset` exits 1 and says why.
    Error,
    /// `amd-smi reset` exits 0 but says it could not reset (as amd-smi's source does).
    SaysUnable,
    /// The GPU at this address is gone after the reset.
    GpuMissing(Bdf),
    /// The GPU at this address never comes out of reset (its partition files answer `EPERM`).
    StaysInReset(Bdf),
    /// The GPU at this address comes back in another compute partition.
    PartitionLost(Bdf),
    /// amdgpu logs that the reset of the GPU at this address failed (at information level).
    KernelErrors(Bdf),
}

/// A simulated AMD host behind the AMD backend; its fields are [`AmdSim`]'s.
pub type SimAmd = AmdBackend<AmdSim>;

/// The simulated AMD host itself.
#[derive(Debug)]
pub struct AmdSim {
    clock: Arc<dyn Clock>,
    /// The GPUs, by address; `amd-smi list` numbers them in this order.
    pub gpus: BTreeMap<Bdf, AmdGpuState>,
    /// Whether the run is root.
    pub root: bool,
    /// Whether `amd-smi` is there.
    pub amd_smi: bool,
    /// Processes holding `/dev/kfd` or a render node.
    pub holders: Vec<Holder>,
    /// The kernel log.
    pub kernel_log: SimKernelLog,
    /// How long a reset takes.
    pub reset_duration: Duration,
    /// How long after the reset command ends the hive is out of reset (0: at once).
    pub recovery: Duration,
    /// What goes wrong, if anything.
    pub fault: Option<AmdFault>,
    /// Every `amd-smi` reset command line the host received, in order (its arguments).
    pub resets: Vec<String>,
    /// When the GPUs reset are out of reset, and which.
    back_at: Option<(Duration, Vec<Bdf>)>,
}

/// The XGMI hive of the default host (a kernel prints it in decimal).
pub const SIM_HIVE: u64 = 12_930_883_541_387_935_051;

/// The addresses of the default host's eight GPUs, as an eight-way MI300X platform numbers them
/// (and `amd-smi list` lists them): tests of the host and of `mxctl` name its GPUs by these.
pub const SIM_HIVE_GPUS: [&str; 8] = [
    "0000:05:00.0",
    "0000:26:00.0",
    "0000:46:00.0",
    "0000:65:00.0",
    "0000:85:00.0",
    "0000:a6:00.0",
    "0000:c6:00.0",
    "0000:e5:00.0",
];

impl SimAmd {
    /// A host with eight MI300X (vendor `0x1002`, device `0x74a1`, a processing accelerator)
    /// bound to amdgpu, all in XGMI hive [`SIM_HIVE`], in CPX/NPS1, render nodes from 128.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let gpus = SIM_HIVE_GPUS
            .iter()
            .zip(128..)
            .map(|(address, node)| {
                let bdf = bdf(address);
                let mut gpu = AmdGpuState::new(
                    bdf,
                    PciIdentity::new(0x1002, 0x74a1, 0x120000),
                    Some(SIM_HIVE),
                    node,
                );
                gpu.compute_partition = PartitionFile::Reads("CPX".to_owned());
                (bdf, gpu)
            })
            .collect();
        AmdBackend::of(AmdSim {
            clock,
            gpus,
            root: true,
            amd_smi: true,
            holders: Vec::new(),
            kernel_log: SimKernelLog::default(),
            reset_duration: Duration::from_secs(2),
            recovery: Duration::ZERO,
            fault: None,
            resets: Vec::new(),
            back_at: None,
        })
    }
}

impl AmdSim {
    /// What `amd-smi list` prints on this host (the GPUs in address order, from ID 0).
    pub fn list_text(&self) -> String {
        self.gpus
            .keys()
            .zip(0..)
            .map(|(bdf, index)| {
                let uuid = format!("{:02x}ff74a1-0000-1000-8000-{:012x}", index, index);
                AmdSmiGpu::new(index, Some(*bdf), Some(&uuid), Some(0)).to_block()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The address of the GPU `amd-smi list` gives this ID.
    pub fn address(&self, index: usize) -> Option<Bdf> {
        self.gpus.keys().nth(index).copied()
    }

    fn recovering(&self, bdf: Bdf) -> bool {
        let stuck = self.fault == Some(AmdFault::StaysInReset(bdf)) && self.back_at.is_some();
        let not_yet = self
            .back_at
            .as_ref()
            .is_some_and(|(at, gpus)| self.clock.now() < *at && gpus.contains(&bdf));
        stuck || not_yet
    }
}

impl AmdHost for AmdSim {
    sim_host_basics!();

    fn find_amd_smi(&mut self) -> Result<(), BackendError> {
        Ok(tool_found(self.amd_smi, "amd-smi", &AMD_SMI_PLACES).map_err(AmdSmiError::Tool)?)
    }

    fn list(&mut self) -> Result<String, BackendError> {
        Ok(self.list_text())
    }

    fn gpus(&mut self) -> Result<Vec<Bdf>, BackendError> {
        Ok(self.gpus.keys().copied().collect())
    }

    fn gpu(&mut self, bdf: Bdf) -> Result<Option<AmdGpuState>, BackendError> {
        let recovering = self.recovering(bdf);
        Ok(self.gpus.get(&bdf).cloned().map(|mut gpu| {
            if recovering {
                gpu.compute_partition = PartitionFile::InReset;
                gpu.memory_partition = PartitionFile::InReset;
            }
            gpu
        }))
    }

    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        Ok(holding(&self.holders, files))
    }

    fn reset(&mut self, gpus: &[Bdf], within: Duration) -> ToolEnd {
        let args = reset_args(gpus).join(" ");
        self.resets.push(args.clone());
        let command = format!("amd-smi {args}");
        let hangs = self.fault == Some(AmdFault::Hang);
        if !reset_ends(&*self.clock, hangs, self.reset_duration, within) {
            return ToolEnd::Hung;
        }
        // The kernel resets every GPU of each hive named, and each GPU named in no hive.
        let hives: Vec<u64> = gpus
            .iter()
            .filter_map(|bdf| self.gpus.get(bdf).and_then(|gpu| gpu.hive))
            .collect();
        let reset: Vec<Bdf> = self
            .gpus
            .values()
            .filter(|gpu| gpus.contains(&gpu.bdf) || gpu.hive.is_some_and(|h| hives.contains(&h)))
            .map(|gpu| gpu.bdf)
            .collect();
        self.back_at = Some((self.clock.now() + self.recovery, reset.clone()));
        for bdf in &reset {
            self.kernel_log
                .push(6, format!("amdgpu {bdf}: amdgpu: GPU reset begin!"));
        }
        match &self.fault {
            Some(AmdFault::GpuMissing(gone)) => {
                self.gpus.remove(gone);
            }
            Some(AmdFault::PartitionLost(changed)) => {
                if let Some(gpu) = self.gpus.get_mut(changed) {
                    gpu.compute_partition = PartitionFile::Reads("SPX".to_owned());
                }
            }
            Some(AmdFault::KernelErrors(failed)) => {
                self.kernel_log
                    .push(6, format!("amdgpu {failed}: amdgpu: GPU reset(1) failed"));
            }
            Some(AmdFault::Error) => {
                return ToolEnd::Exited {
                    command,
                    code: 1,
                    said: "amdsmi.amdsmi_exception.AmdSmiLibraryException: Error code:\n30 | \
                           AMDSMI_STATUS_BUSY - Device busy (simulated)\n"
                        .to_owned(),
                };
            }
            Some(AmdFault::SaysUnable) => {
                return ToolEnd::Exited {
                    command,
                    code: 0,
                    said: "GPU: 0\n    GPU_RESET: [AMDSMI_STATUS_DRIVER_NOT_LOADED] Unable to \
                           reset GPU\n"
                        .to_owned(),
                };
            }
            Some(AmdFault::Hang | AmdFault::StaysInReset(_)) | None => {}
        }
        let said: String = gpus
            .iter()
            .filter_map(|bdf| self.gpus.keys().position(|other| other == bdf))
            .map(|index| format!("GPU: {index}\n    GPU_RESET: Successfully reset GPU\n"))
            .collect();
        ToolEnd::Exited {
            command,
            code: 0,
            said,
        }
    }
}

/// The AMD scenarios `mxctl reset --method amd --simulate` knows: what each shows and changes
/// on the default host ([`SimAmd::scenario`]).
pub const AMD_SCENARIOS: [Scenario<AmdSim>; 13] = [
    Scenario::new(
        "ok",
        "8 MI300X in one XGMI hive: GPU 0 is reset, the kernel takes the hive along, all 8 come back",
        |_| {},
    ),
    Scenario::new(
        "no-hive",
        "GPU 0 is in no XGMI hive: it is reset alone",
        |host| {
            if let Some(gpu) = host.gpus.get_mut(&bdf(SIM_HIVE_GPUS[0])) {
                gpu.hive = None;
            }
        },
    ),
    Scenario::new(
        "peer-busy",
        "a process holds the render node of GPU 3, a peer of GPU 0 in the hive",
        |host| host.holders = vec![Holder::new(2718, "rocm-smi-daemon", "/dev/dri/renderD131")],
    ),
    Scenario::new("kfd-held", "a ROCm process holds /dev/kfd", |host| {
        host.holders = vec![Holder::new(31415, "python3", KFD)];
    }),
    Scenario::new(
        "not-amdgpu",
        "GPU 0 is bound to vfio-pci, not amdgpu",
        |host| {
            if let Some(gpu) = host.gpus.get_mut(&bdf(SIM_HIVE_GPUS[0])) {
                gpu.driver = Some("vfio-pci".to_owned());
            }
        },
    ),
    fault_scenario!("error", "amd-smi reset exits 1", AmdFault::Error),
    fault_scenario!(
        "says-unable",
        "amd-smi reset exits 0 but says it was unable to reset",
        AmdFault::SaysUnable
    ),
    fault_scenario!("hang", "amd-smi reset never ends", AmdFault::Hang),
    fault_scenario!(
        "stays-in-reset",
        "GPU 3 of the hive never comes out of reset",
        AmdFault::StaysInReset(bdf(SIM_HIVE_GPUS[3]))
    ),
    fault_scenario!(
        "gpu-missing",
        "GPU 5 of the hive is gone after the reset",
        AmdFault::GpuMissing(bdf(SIM_HIVE_GPUS[5]))
    ),
    fault_scenario!(
        "partition-lost",
        "GPU 1 of the hive comes back in SPX where it was in CPX",
        AmdFault::PartitionLost(bdf(SIM_HIVE_GPUS[1]))
    ),
    fault_scenario!(
        "kernel-errors",
        "amdgpu says the reset of GPU 2 of the hive failed",
        AmdFault::KernelErrors(bdf(SIM_HIVE_GPUS[2]))
    ),
    Scenario::new("no-amd-smi", "amd-smi is absent", |host| {
        host.amd_smi = false;
    }),
];

impl SimAmd {
    /// The host of a named scenario (see [`AMD_SCENARIOS`]): the eight GPUs of [`SimAmd::new`],
    /// changed as the scenario says; `None` for an unknown name.
    pub fn scenario(name: &str, clock: Arc<dyn Clock>) -> Option<SimAmd> {
        set_up(&AMD_SCENARIOS, name, || SimAmd::new(clock))
    }
}
