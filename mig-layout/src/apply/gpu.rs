//! One NVIDIA GPU through an apply's writes ([`Gpu`], with its vGPU side, [`GpuVgpu`]), and how
//! one batch of the helper's steps runs on it ([`run_batch`]): what the MIG phases and the vGPU
//! layer both act on.

use super::Progress;
use super::ctx::{Shared, Stop};
use crate::plan::CardPlan;
use crate::report::{ApplyReason, GpuReport, GpuWork, NvidiaWork, WriteFailure};
use crate::select::Wanted;
use crate::vgpu_plan::VgpuStep;
use gpu_host_probe::helper::{ApplyFailure, Helper};
use gpu_partition_types::{ApplyAnswer, ApplyRequest, Reply, Step, StepOutcome};
use layout_model::VgpuDeclared;
use layout_model::{Board, Card, NvidiaDeclared};
use std::time::Duration;

/// How long one step of a batch may add to the helper's deadline: NVML takes about a second
/// to destroy a GPU instance.
pub const STEP_DEADLINE: Duration = Duration::from_secs(3);

/// One GPU through the apply: what it should be, what it last said, what was done.
pub(super) struct Gpu {
    pub wanted: Wanted,
    pub reply: Reply,
    /// Its report, without its side's work until [`Gpu::into_report`].
    pub report: GpuReport,
    /// What its side planned and did.
    pub work: NvidiaWork,
    /// A reset completes its mode change.
    pub needs_reset: bool,
    /// The plan the preflight made.
    pub first: CardPlan,
    /// The board found in the slot at the preflight.
    pub board: Board,
    /// What the GPU is declared to be, as far as the last plan of it decided (the placements
    /// once a plan chose them).
    pub declared: NvidiaDeclared,
    /// Why it stopped, once it did (the apply's other GPUs go on).
    pub stop: Option<Stop>,
    /// Whether the card may have been written: a step done, a reset issued, or a batch that
    /// gave no answer and left the card changed (or unread).
    pub wrote: bool,
    /// Its vGPU side (empty for a MIG layout alone).
    pub vgpu: GpuVgpu,
    /// Its owned instances as declared before (and a created one's): each keeps its owner
    /// where the plan keeps it.
    pub owners: Vec<layout_model::Owned>,
}

impl Gpu {
    /// Whether the preflight's plan changes the MIG mode (set, or completed by a reset).
    pub fn changes_mode(&self) -> bool {
        self.first.set_mode.is_some() || self.first.reset
    }

    /// Whether the preflight's plan destroys or creates instances, or writes the vGPU side.
    pub fn changes_instances(&self) -> bool {
        self.vgpu.writes()
            || !self.first.destroy.is_empty()
            || !self.first.create.is_empty()
            || !self.first.fill.is_empty()
            || self.first.deferred
    }

    /// Its report, with its work.
    pub fn into_report(self) -> GpuReport {
        let mut report = self.report;
        report.work = GpuWork::Nvidia(self.work);
        report
    }

    /// Keeps what `planned` decides of the GPU's declaration: its placements (a deferred plan
    /// decides none).
    pub fn decided(&mut self, planned: &CardPlan) {
        let want = if planned.deferred {
            self.wanted.want.clone()
        } else {
            self.wanted.want.clone().placed(planned.target.clone())
        };
        self.declared = NvidiaDeclared::new(&want, self.board.clone()).with_owners(&self.owners);
        if let Some(vgpu) = &self.vgpu.declare {
            self.declared = self.declared.clone().with_vgpu(vgpu.clone());
        }
    }
}

/// The card as far as a write changes it: its mode and its instances.
fn as_written(reply: &Reply) -> Option<(bool, Option<bool>, Vec<layout_model::CardInstance>)> {
    Card::of(reply)
        .ok()
        .map(|card| (card.current, card.pending, card.instances))
}

/// Runs a batch of steps on one GPU with a deadline that grows with the batch; records each
/// step's result; a refused step, or a run that gave no answer, stops the GPU.
pub(super) fn run_batch(
    shared: &Shared<'_>,
    say: &dyn Fn(Progress),
    gpu: &mut Gpu,
    steps: Vec<Step>,
) -> Result<ApplyAnswer, Stop> {
    let device = gpu.report.device;
    shared.go_on(&format!("the next steps on {device}"))?;
    let count = u32::try_from(steps.len()).unwrap_or(u32::MAX);
    let deadline = shared.helper.config().deadline + STEP_DEADLINE.saturating_mul(count);
    let batch = Helper::new(shared.helper.config().clone().deadline(deadline));
    let request = ApplyRequest::new(steps);
    let answer = match batch.apply(shared.lock, device, shared.format()?, &request) {
        Ok(answer) => answer,
        Err(failure @ (ApplyFailure::NotRecorded(_) | ApplyFailure::Refused(_))) => {
            return Err(Stop::failed(
                ApplyReason::StepRefused,
                format!("{device}: {}", gpu_host_probe::chain::Chain(&failure)),
            ));
        }
        Err(ApplyFailure::Run(failure)) => {
            settle(shared, gpu);
            let failure = WriteFailure::Helper {
                reason: failure.reason,
                message: failure.message,
            };
            return Err(Stop::refused(device, failure));
        }
    };
    gpu.wrote = gpu.wrote
        || answer
            .results
            .iter()
            .any(|result| matches!(result.outcome, StepOutcome::Done { .. }));
    let mut refused = None;
    for result in &answer.results {
        if let StepOutcome::Refused { kind, message } = &result.outcome {
            refused.get_or_insert_with(|| WriteFailure::Nvml {
                op: result.op,
                kind: kind.clone(),
                message: message.clone(),
            });
        }
        say(Progress::Step {
            device,
            step: result.clone(),
        });
        gpu.work.steps.push(result.clone());
    }
    gpu.reply = answer.reply.clone();
    match refused {
        Some(failure) => Err(Stop::refused(device, failure)),
        None => Ok(answer),
    }
}

/// What a batch that gave no answer (killed by its deadline or a cancel, crashed) did to its
/// card is settled by one read without the cancel: the card as it was before means nothing was
/// written; anything else — or no read — means it may have been.
fn settle(shared: &Shared<'_>, gpu: &mut Gpu) {
    let before = as_written(&gpu.reply);
    let read = shared.format().map_err(|_| ()).and_then(|format| {
        shared
            .settle
            .read_reply(shared.lock, gpu.report.device, format)
            .map_err(|_| ())
    });
    match read {
        Ok(reply) => {
            gpu.wrote = gpu.wrote || before.is_none() || as_written(&reply) != before;
            gpu.reply = reply;
        }
        Err(_) => gpu.wrote = true,
    }
}

/// A GPU's vGPU side through the apply.
#[derive(Debug, Clone, Default)]
pub(super) struct GpuVgpu {
    /// The vGPU steps, in order (none for a MIG layout alone).
    pub steps: Vec<VgpuStep>,
    /// What its VFs are declared to hold once the apply writes, per VF (`None`: a MIG layout
    /// alone, whose declaration says nothing of VFs).
    pub declare: Option<VgpuDeclared>,
}

impl GpuVgpu {
    /// Whether the plan has this step.
    pub fn has(&self, step: &VgpuStep) -> bool {
        self.steps.contains(step)
    }

    /// Whether the plan writes to the card itself (the MIG steps are the MIG executor's).
    pub fn writes(&self) -> bool {
        self.steps
            .iter()
            .any(|step| !matches!(step, VgpuStep::MigMode(_) | VgpuStep::GpuInstances(_)))
    }
}
