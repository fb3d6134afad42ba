//! The writes of an apply, once the preflight let every GPU through: the destroys and the mode
//! (one batch per GPU), the resets that complete pending mode changes, then per GPU a new plan
//! from what the card says now (only creates may remain), the creates, and the read-back.

use super::Progress;
use super::ctx::{Ctx, Stop};
use super::reset::{ResetWith, reset_one};
use crate::plan::{CardPlan, plan};
use crate::report::{ApplyReason, ApplyReport, GpuReport};
use crate::select::Wanted;
use gpu_host_probe::helper::Helper;
use gpu_partition_types::{ApplyAnswer, ApplyRequest, Bdf, Reply, Step, StepOutcome};
use host_sync::{Board, Card, CardProfile, DeclaredGpu, differences};
use std::time::Duration;

/// How long one step of a batch may add to the helper's deadline: NVML takes about a second
/// to destroy a GPU instance.
pub const STEP_DEADLINE: Duration = Duration::from_secs(3);

/// One GPU through the apply: what it should be, what it last said, what was done.
pub(super) struct Gpu {
    pub wanted: Wanted,
    pub reply: Reply,
    pub report: GpuReport,
    /// A reset completes its mode change.
    pub needs_reset: bool,
    /// The plan the preflight made.
    pub first: CardPlan,
    /// The board found in the slot at the preflight.
    pub board: Board,
    /// What the GPU is declared to be, as far as the last plan of it decided (the placements
    /// once a plan chose them).
    pub declared: DeclaredGpu,
}

impl Gpu {
    /// Whether the preflight's plan changes the MIG mode (set, or completed by a reset).
    pub fn changes_mode(&self) -> bool {
        self.first.set_mode.is_some() || self.first.reset
    }

    /// Whether the preflight's plan destroys or creates instances.
    pub fn changes_instances(&self) -> bool {
        !self.first.destroy.is_empty()
            || !self.first.create.is_empty()
            || !self.first.fill.is_empty()
            || self.first.deferred
    }

    /// Keeps what `planned` (made over `card`) decides of the GPU's declaration: its placements,
    /// each with the compute instance that fills it (a deferred plan decides none).
    pub fn decided(&mut self, planned: &CardPlan, card: &Card) {
        let want = if planned.deferred {
            self.wanted.want.clone()
        } else {
            self.wanted.want.clone().placed(planned.target.clone())
        };
        self.declared = DeclaredGpu::new(&want, self.board.clone(), |profile| {
            card.profile(profile).and_then(CardProfile::filling)
        });
    }
}

/// Runs a batch of steps on one GPU with a deadline that grows with the batch; records each
/// step's result; a refused step, or a run that gave no answer, stops the apply.
fn run_batch(ctx: &mut Ctx<'_, '_>, gpu: &mut Gpu, steps: Vec<Step>) -> Result<ApplyAnswer, Stop> {
    let device = gpu.report.device;
    ctx.go_on(&format!("the next steps on {device}"))?;
    let count = u32::try_from(steps.len()).unwrap_or(u32::MAX);
    let deadline = ctx.helper.config().deadline + STEP_DEADLINE.saturating_mul(count);
    let batch = Helper::new(ctx.helper.config().clone().deadline(deadline));
    let request = ApplyRequest::new(steps);
    let answer = batch
        .apply(ctx.lock, device, ctx.format, &request)
        .map_err(|failure| {
            Stop::failed(
                ApplyReason::StepRefused,
                format!("{device}: the helper's apply gave no answer: {failure}"),
            )
        })?;
    let mut refused = None;
    for result in &answer.results {
        if let StepOutcome::Refused { .. } = result.outcome {
            refused.get_or_insert_with(|| format!("{device}: {result}"));
        }
        ctx.say(Progress::Step {
            device,
            step: result.clone(),
        });
        gpu.report.steps.push(result.clone());
    }
    gpu.reply = answer.reply.clone();
    match refused {
        Some(detail) => Err(Stop::failed(ApplyReason::StepRefused, detail)),
        None => Ok(answer),
    }
}

/// The destroys and the mode of every GPU, the resets, then the creates and read-back.
pub(super) fn run(
    ctx: &mut Ctx<'_, '_>,
    reset: &mut ResetWith<'_>,
    cards: &mut [Gpu],
    report: &mut ApplyReport,
) -> Result<(), Stop> {
    for gpu in cards.iter_mut() {
        let Ok(planned) = plan(&gpu.reply, &gpu.wanted.want) else {
            continue;
        };
        let steps = planned.first_batch();
        if steps.is_empty() {
            continue;
        }
        let answer = run_batch(ctx, gpu, steps)?;
        let pending = answer
            .results
            .iter()
            .any(|result| matches!(result.outcome, StepOutcome::Done { pending: true, .. }));
        gpu.needs_reset = gpu.needs_reset || pending;
    }
    resets(ctx, reset, cards, report)?;
    for gpu in cards.iter_mut() {
        finish(ctx, gpu)?;
    }
    Ok(())
}

/// Each GPU still holding its mode change pending gets one reset (a peer's may have done it),
/// and every GPU of the apply the reset touched is read again.
fn resets(
    ctx: &mut Ctx<'_, '_>,
    with: &mut ResetWith<'_>,
    cards: &mut [Gpu],
    report: &mut ApplyReport,
) -> Result<(), Stop> {
    let in_apply: Vec<Bdf> = cards.iter().map(|gpu| gpu.report.device).collect();
    for at in 0..cards.len() {
        let Some(gpu) = cards.get(at) else {
            continue;
        };
        let device = gpu.report.device;
        let enabled = gpu.wanted.want.enabled;
        let pending = Card::of(&gpu.reply).map_or(true, |card| card.pending.is_some());
        if !gpu.needs_reset || !pending {
            continue;
        }
        ctx.go_on(&format!("the warm reset of {device}"))?;
        ctx.say(Progress::Resetting { device });
        let done = reset_one(ctx, with, device, &in_apply, &mut report.resets)?;
        for other in cards.iter_mut() {
            let touched = done.verified.contains(&other.report.device);
            if touched || other.report.device == device {
                other.reply = ctx.reread(other.report.device, "after the reset")?;
            }
        }
        let card = cards
            .get(at)
            .map(|gpu| Card::of(&gpu.reply))
            .transpose()
            .map_err(|unreadable| {
                Stop::failed(ApplyReason::GpuUnreadable, unreadable.to_string())
            })?;
        if let Some(card) = card {
            if card.pending.is_some() || card.current != enabled {
                return Err(Stop::failed(
                    ApplyReason::ModePending,
                    format!(
                        "{device}: MIG is still {} after the reset; the mode change did not \
                         complete",
                        if card.current { "on" } else { "off" }
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Plans the GPU again from what it says now: only creates may remain. Creates them, then
/// reads back.
fn finish(ctx: &mut Ctx<'_, '_>, gpu: &mut Gpu) -> Result<(), Stop> {
    let device = gpu.report.device;
    let planned = plan(&gpu.reply, &gpu.wanted.want)
        .map_err(|impossible| Stop::failed(ApplyReason::LayoutImpossible, impossible.message))?;
    if !planned.destroy.is_empty()
        || planned.set_mode.is_some()
        || planned.reset
        || planned.deferred
    {
        let still = Card::of(&gpu.reply)
            .map(|card| {
                let lines: Vec<String> = planned
                    .describe(&card)
                    .iter()
                    .map(ToString::to_string)
                    .collect();
                lines.join("; ")
            })
            .unwrap_or_default();
        return Err(Stop::failed(
            ApplyReason::DidNotConverge,
            format!(
                "{device}: after the destroys and the mode change the card still needs: {still}"
            ),
        ));
    }
    if let Ok(card) = Card::of(&gpu.reply) {
        gpu.decided(&planned, &card);
    }
    create(ctx, gpu, &planned)?;
    // The read-back: what the layout wants, at the placements the plan chose.
    let placed = gpu.wanted.want.clone().placed(planned.target.clone());
    let differences = differences(&gpu.reply, &placed);
    if !differences.is_empty() {
        let detail = differences
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        gpu.report.differences = differences;
        return Err(Stop::failed(ApplyReason::ReadBackDiffers, detail));
    }
    ctx.say(Progress::ReadBack { device });
    Ok(())
}

/// Creates the plan's GPU instances, then their compute instances and those kept instances
/// lack.
fn create(ctx: &mut Ctx<'_, '_>, gpu: &mut Gpu, planned: &CardPlan) -> Result<(), Stop> {
    let mut created = Vec::new();
    let steps = planned.create_batch();
    if !steps.is_empty() {
        let answer = run_batch(ctx, gpu, steps)?;
        created = answer
            .results
            .iter()
            .filter_map(|result| match result.outcome {
                StepOutcome::Done {
                    gpu_instance_id, ..
                } => gpu_instance_id,
                _ => None,
            })
            .collect();
        if created.len() != planned.create.len() {
            return Err(Stop::failed(
                ApplyReason::StepRefused,
                format!(
                    "{}: the helper created {} GPU instances of {} and did not name the others",
                    gpu.report.device,
                    created.len(),
                    planned.create.len()
                ),
            ));
        }
    }
    let steps = planned.compute_batch(&created);
    if !steps.is_empty() {
        run_batch(ctx, gpu, steps)?;
    }
    Ok(())
}
