//! What an apply planned and did on one GPU ([`GpuReport`]): what every vendor's GPU has (its
//! address, index, line, the read-back's differences, how its writes ended) and what its side
//! did ([`GpuWork`]: an NVIDIA GPU's MIG plan and helper steps with its vGPU side, an AMD GPU's
//! partition steps), one vendor's per GPU.

use super::ApplyOutcome;
use crate::amd::AmdStep;
use crate::plan::PlanLine;
use crate::vgpu::VgpuStep;
use gpu_partition_types::{Bdf, StepOutcome, StepResult};
use layout_model::{Adopted, Difference, Vendor};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// What an apply planned and did on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GpuReport {
    /// The card.
    pub device: Bdf,
    /// Its index among its vendor's GPUs of the host (an NVIDIA GPU's as `nvidia-smi` numbers
    /// them, an AMD GPU's as a Device Config Manager profile's IDs).
    pub index: u32,
    /// The line of the layout's entry that names it; `None` for a GPU no document named (a
    /// leave, a restore).
    pub line: Option<usize>,
    /// What its vendor's side planned and did.
    pub work: GpuWork,
    /// How it differs from the layout after the apply (the read-back; empty when it holds).
    pub differences: Vec<Difference>,
    /// How its writes ended (`done`, or why it stopped: the apply's other GPUs go on); `None`
    /// when the apply wrote nothing (blocked, or a dry run).
    pub outcome: Option<ApplyOutcome>,
    /// Why it stopped, for people; `None` when it did not.
    pub detail: Option<String>,
    /// Why its write failed, as data (who refused it and how: NVML's answer, a program's typed
    /// end and what it said, the kernel's errno); `None` when none failed or the stop was not a
    /// refused write.
    pub failure: Option<super::WriteFailure>,
}

/// What a GPU's side planned and did: one vendor's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuWork {
    /// An NVIDIA GPU's.
    Nvidia(NvidiaWork),
    /// An AMD GPU's.
    Amd(AmdWork),
}

/// What an NVIDIA GPU's side planned and did: its MIG plan and the helper's steps, the
/// instances it adopted, and its vGPU side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NvidiaWork {
    /// The MIG plan, as data (empty: already as wanted); each line displays for people.
    pub plan: Vec<PlanLine>,
    /// The steps run, in order, each as the helper answered (the protocol's results).
    pub steps: Vec<StepResult>,
    /// The instances it has that the layout does not name, kept because the caller adopts them.
    pub adopted: Vec<Adopted>,
    /// Its vGPU plan, in the driver's order (empty for a MIG layout alone); each displays for
    /// people.
    pub vgpu_plan: Vec<VgpuStep>,
    /// The vGPU writes done, in order, each read back (`sriov-manage`, the type writes).
    pub vgpu_done: Vec<VgpuStep>,
}

/// What an AMD GPU's side planned and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdWork {
    /// Its plan: its memory request and its compute write (the driver reload, the host's, is
    /// [`ApplyReport::reload_planned`](super::ApplyReport::reload_planned)); each displays for
    /// people.
    pub plan: Vec<AmdStep>,
    /// The writes done on it, in order.
    pub done: Vec<AmdStep>,
}

impl GpuWork {
    /// Its vendor.
    pub fn vendor(&self) -> Vendor {
        match self {
            Self::Nvidia(_) => Vendor::Nvidia,
            Self::Amd(_) => Vendor::Amd,
        }
    }

    /// Whether nothing was planned or done: the GPU is as wanted.
    pub fn is_empty(&self) -> bool {
        match self {
            Self::Nvidia(work) => {
                work.plan.is_empty()
                    && work.steps.is_empty()
                    && work.vgpu_plan.is_empty()
                    && work.vgpu_done.is_empty()
            }
            Self::Amd(work) => work.plan.is_empty() && work.done.is_empty(),
        }
    }

    /// How many writes were made: the helper's steps done and the vGPU writes, or the AMD
    /// partition writes.
    pub fn writes(&self) -> usize {
        match self {
            Self::Nvidia(work) => {
                work.steps
                    .iter()
                    .filter(|step| matches!(step.outcome, StepOutcome::Done { .. }))
                    .count()
                    + work.vgpu_done.len()
            }
            Self::Amd(work) => work.done.len(),
        }
    }
}

impl GpuReport {
    /// An NVIDIA GPU's report before anything is planned or done.
    pub(crate) fn for_nvidia(device: Bdf, index: u32, line: Option<usize>) -> Self {
        Self::new(device, index, line, GpuWork::Nvidia(NvidiaWork::default()))
    }

    /// An AMD GPU's report before anything is planned or done.
    pub(crate) fn for_amd(device: Bdf, index: u32, line: Option<usize>) -> Self {
        Self::new(device, index, line, GpuWork::Amd(AmdWork::default()))
    }

    fn new(device: Bdf, index: u32, line: Option<usize>, work: GpuWork) -> Self {
        Self {
            device,
            index,
            line,
            work,
            differences: Vec::new(),
            outcome: None,
            detail: None,
            failure: None,
        }
    }

    /// How many writes were made on it.
    pub fn writes(&self) -> usize {
        self.work.writes()
    }

    /// What its side planned and did, where it is an NVIDIA GPU.
    pub fn nvidia_work(&self) -> Option<&NvidiaWork> {
        match &self.work {
            GpuWork::Nvidia(work) => Some(work),
            GpuWork::Amd(_) => None,
        }
    }

    /// What its side planned and did, where it is an AMD GPU.
    pub fn amd_work(&self) -> Option<&AmdWork> {
        match &self.work {
            GpuWork::Amd(work) => Some(work),
            GpuWork::Nvidia(_) => None,
        }
    }
}

/// A GPU's outcome as `{"outcome", "reason"}` tokens would be: written as its token and reason.
fn outcome_token(outcome: Option<&ApplyOutcome>) -> Option<String> {
    outcome.map(ToString::to_string)
}

/// `--json`'s GPU, one document for every vendor: `device`, `index`, `line`, `vendor`, the
/// members of each side (`plan`, `steps`, `adopted`, `vgpu_plan`, `vgpu_done`, `amd_plan`,
/// `amd_done`: empty where the GPU is another vendor's), `differences`, `outcome`, `detail`,
/// `failure` (`null`, or `{"by": "nvml" | "helper" | "program" | "vfs_not_as_asked" |
/// "kernel", …}`).
impl Serialize for GpuReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let empty = NvidiaWork::default();
        let none = AmdWork::default();
        let (nvidia, amd) = match &self.work {
            GpuWork::Nvidia(work) => (work, &none),
            GpuWork::Amd(work) => (&empty, work),
        };
        let mut gpu = serializer.serialize_struct("GpuReport", 15)?;
        gpu.serialize_field("device", &self.device)?;
        gpu.serialize_field("index", &self.index)?;
        gpu.serialize_field("line", &self.line)?;
        gpu.serialize_field("vendor", &self.work.vendor())?;
        gpu.serialize_field("plan", &nvidia.plan)?;
        gpu.serialize_field("steps", &nvidia.steps)?;
        gpu.serialize_field("differences", &self.differences)?;
        gpu.serialize_field("adopted", &nvidia.adopted)?;
        gpu.serialize_field("vgpu_plan", &nvidia.vgpu_plan)?;
        gpu.serialize_field("vgpu_done", &nvidia.vgpu_done)?;
        gpu.serialize_field("amd_plan", &amd.plan)?;
        gpu.serialize_field("amd_done", &amd.done)?;
        gpu.serialize_field("outcome", &outcome_token(self.outcome.as_ref()))?;
        gpu.serialize_field("detail", &self.detail)?;
        gpu.serialize_field("failure", &self.failure)?;
        gpu.end()
    }
}
