//! [`Progress`]: what an apply does, as it does it, for an observer.

use crate::plan::PlanLine;
use gpu_partition_types::{Bdf, StepResult};
use std::time::Duration;
use warm_reset::ResetOutcome;

/// What an apply does, as it does it (each displays as a line for people).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// A line of a GPU's plan, shown before any write.
    Plan {
        /// The GPU.
        device: Bdf,
        /// The line.
        line: PlanLine,
    },
    /// A step of a GPU's vGPU plan, shown before any write.
    VgpuPlan {
        /// The GPU.
        device: Bdf,
        /// The step.
        step: crate::vgpu::VgpuStep,
    },
    /// A step of an AMD GPU's plan, shown before any write (the driver reload, which reaches
    /// every AMD GPU, on the first GPU of the apply).
    AmdPlan {
        /// The GPU.
        device: Bdf,
        /// The step.
        step: crate::amd::AmdStep,
    },
    /// A step the helper ran, as it answered.
    Step {
        /// The GPU.
        device: Bdf,
        /// Its result.
        step: StepResult,
    },
    /// A warm reset begins, to complete the GPU's mode change.
    Resetting {
        /// The GPU.
        device: Bdf,
    },
    /// An earlier run's reset still in flight was waited out.
    WaitedForEarlierReset {
        /// The GPU.
        device: Bdf,
        /// For how long.
        waited: Duration,
    },
    /// That earlier reset had completed the mode change: no reset is issued.
    EarlierResetCompleted {
        /// The GPU.
        device: Bdf,
    },
    /// The warm reset ended.
    Reset {
        /// The GPU.
        device: Bdf,
        /// How.
        outcome: ResetOutcome,
    },
    /// The read-back: the GPU is as the layout wants.
    ReadBack {
        /// The GPU.
        device: Bdf,
    },
    /// A write of the GPU's vGPU side done (`sriov-manage`, a VF's type), read back.
    Vgpu {
        /// The GPU.
        device: Bdf,
        /// The step.
        step: crate::vgpu::VgpuStep,
    },
    /// An AMD write done: a memory request, the driver reload (shown on the first GPU of the
    /// apply; it reaches every AMD GPU), a compute partition.
    Amd {
        /// The GPU.
        device: Bdf,
        /// The step.
        step: crate::amd::AmdStep,
    },
}

impl Progress {
    /// The GPU it is about.
    pub fn device(&self) -> Bdf {
        match self {
            Self::Plan { device, .. }
            | Self::VgpuPlan { device, .. }
            | Self::AmdPlan { device, .. }
            | Self::Step { device, .. }
            | Self::Resetting { device }
            | Self::WaitedForEarlierReset { device, .. }
            | Self::EarlierResetCompleted { device }
            | Self::Reset { device, .. }
            | Self::ReadBack { device }
            | Self::Vgpu { device, .. }
            | Self::Amd { device, .. } => *device,
        }
    }
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Plan { line, .. } => write!(f, "plan: {line}"),
            Self::VgpuPlan { step, .. } => write!(f, "vgpu plan: {step}"),
            Self::AmdPlan { step, .. } => write!(f, "amd plan: {step}"),
            Self::Step { step, .. } => write!(f, "{step}"),
            Self::Resetting { .. } => f.write_str("warm reset to complete the mode change"),
            Self::WaitedForEarlierReset { waited, .. } => write!(
                f,
                "waited {:.1} s for an earlier reset's window to end",
                waited.as_secs_f64()
            ),
            Self::EarlierResetCompleted { .. } => {
                f.write_str("the earlier reset completed the mode change")
            }
            Self::Reset { outcome, .. } => write!(f, "warm reset: {outcome}"),
            Self::ReadBack { .. } => f.write_str("read back: as the layout wants"),
            Self::Vgpu { step, .. } => write!(f, "{step}: done"),
            Self::Amd { step, .. } => write!(f, "{step}: done"),
        }
    }
}

/// What sees every step of an apply as it runs.
pub type ApplyObserver<'a> = &'a mut dyn FnMut(&Progress);
