//! The writes of an apply, once the preflight let every GPU through, each GPU side by side with
//! the others: its destroys and mode (one batch), then the resets that complete the pending mode
//! changes (together, in one window), then per GPU a new plan from what the card says now (only
//! creates may remain), the creates, and the read-back. A GPU that fails stops alone: the others
//! go on, and the report says which stopped and why.

use super::Progress;
use super::ctx::{Ctx, Shared, Stop, fan_out};
use super::gpu::{Gpu, run_batch};
use super::reset::reset_batch;
use super::vgpu;
use crate::plan::{CardPlan, plan};
use crate::report::ApplyReason;
use gpu_partition_types::{Bdf, StepOutcome};
use layout_model::{Card, differences};
use warm_reset::{ResetReport, ResetWith};

/// The writes, GPU by GPU side by side: each GPU's destroys and mode (one batch per GPU); the
/// resets that complete pending mode changes, together; then each GPU's creates and read-back.
/// A GPU that stops keeps its [`Gpu::stop`]; the others go on.
pub(super) fn run(
    ctx: &mut Ctx<'_, '_>,
    reset: &mut ResetWith<'_>,
    cards: &mut [Gpu],
    resets_run: &mut Vec<ResetReport>,
) {
    let first = fan_out(
        ctx,
        cards,
        |gpu| gpu.stop.is_none(),
        |shared, say, gpu| first_batch(shared, say, gpu),
    );
    keep_stops(cards, first);
    resets(ctx, reset, cards, resets_run);
    let last = fan_out(
        ctx,
        cards,
        |gpu| gpu.stop.is_none(),
        |shared, say, gpu| finish(shared, say, gpu),
    );
    keep_stops(cards, last);
}

/// Each GPU's `Err` kept as its stop.
fn keep_stops(cards: &mut [Gpu], results: Vec<Option<Result<(), Stop>>>) {
    for (gpu, result) in cards.iter_mut().zip(results) {
        if let Some(Err(stop)) = result {
            gpu.stop = Some(stop);
        }
    }
}

/// The GPU's destroys and its mode change, in one batch; whether its change is pending.
fn first_batch(shared: &Shared<'_>, say: &dyn Fn(Progress), gpu: &mut Gpu) -> Result<(), Stop> {
    vgpu::before_first_batch(shared, say, gpu)?;
    // The preflight's plan, made over the card as it still is (or as `sriov-manage -d` left it).
    let steps = gpu.first.first_batch();
    if steps.is_empty() {
        return Ok(());
    }
    let answer = run_batch(shared, say, gpu, steps)?;
    let pending = answer
        .results
        .iter()
        .any(|result| matches!(result.outcome, StepOutcome::Done { pending: true, .. }));
    gpu.needs_reset = gpu.needs_reset || pending;
    Ok(())
}

/// The GPUs still holding their mode change pending get one reset between them
/// ([`reset_batch`]); every GPU of the apply the reset touched is read again, and each whose
/// mode is still not as wanted stops.
fn resets(
    ctx: &mut Ctx<'_, '_>,
    with: &mut ResetWith<'_>,
    cards: &mut [Gpu],
    resets_run: &mut Vec<ResetReport>,
) {
    let in_apply: Vec<Bdf> = cards.iter().map(|gpu| gpu.report.device).collect();
    let due: Vec<Bdf> = cards
        .iter()
        .filter(|gpu| gpu.stop.is_none() && gpu.needs_reset)
        .filter(|gpu| Card::of(&gpu.reply).map_or(true, |card| card.pending.is_some()))
        .map(|gpu| gpu.report.device)
        .collect();
    if due.is_empty() {
        return;
    }
    let ended = reset_batch(ctx, with, &due, &in_apply, resets_run);
    for gpu in cards.iter_mut() {
        if ended.issued.contains(&gpu.report.device) {
            gpu.wrote = true;
        }
    }
    // The touched GPUs read again, side by side: those reset and the apply's others the
    // group took with them.
    let touched: Vec<Bdf> = in_apply
        .iter()
        .copied()
        .filter(|device| ended.touched.contains(device))
        .collect();
    let reads = ctx.shared.reread(&touched, "after the reset");
    for (device, read) in touched.iter().zip(reads) {
        let Some(gpu) = cards.iter_mut().find(|gpu| gpu.report.device == *device) else {
            continue;
        };
        if gpu.stop.is_some() {
            continue;
        }
        match read {
            Ok(reply) => gpu.reply = reply,
            Err(stop) => gpu.stop = Some(stop),
        }
    }
    for gpu in cards.iter_mut() {
        let device = gpu.report.device;
        if let Some(stop) = ended
            .stops
            .iter()
            .find(|(at, _)| *at == device)
            .map(|(_, stop)| stop)
        {
            gpu.stop.get_or_insert_with(|| stop.clone());
            continue;
        }
        if gpu.stop.is_some() || !due.contains(&device) {
            continue;
        }
        match Card::of(&gpu.reply) {
            Err(unreadable) => {
                gpu.stop = Some(Stop::failed(
                    ApplyReason::GpuUnreadable,
                    unreadable.to_string(),
                ));
            }
            Ok(card) if card.pending.is_some() || card.current != gpu.wanted.want.enabled => {
                gpu.stop = Some(Stop::failed(
                    ApplyReason::ModePending,
                    format!(
                        "{device}: MIG is still {} after the reset; the mode change did not \
                         complete",
                        if card.current { "on" } else { "off" }
                    ),
                ));
            }
            Ok(_) => {}
        }
    }
}

/// Plans the GPU again from what it says now: only creates may remain. Creates them, then
/// reads back.
fn finish(shared: &Shared<'_>, say: &dyn Fn(Progress), gpu: &mut Gpu) -> Result<(), Stop> {
    let device = gpu.report.device;
    vgpu::before_creates(shared, say, gpu)?;
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
    gpu.decided(&planned);
    create(shared, say, gpu, &planned)?;
    // The read-back: what the layout wants, at the placements the plan chose.
    let placed = gpu.wanted.want.clone().placed(planned.target.clone());
    let differences = differences(&gpu.reply, &placed);
    if !differences.is_empty() {
        return Err(Stop::read_back_differs(&mut gpu.report, differences));
    }
    vgpu::after_creates(shared, say, gpu)?;
    say(Progress::ReadBack { device });
    Ok(())
}

/// Creates the plan's GPU instances, then their compute instances and those kept instances
/// lack.
fn create(
    shared: &Shared<'_>,
    say: &dyn Fn(Progress),
    gpu: &mut Gpu,
    planned: &CardPlan,
) -> Result<(), Stop> {
    let mut created = Vec::new();
    let steps = planned.create_batch();
    if !steps.is_empty() {
        let answer = run_batch(shared, say, gpu, steps)?;
        created = answer
            .results
            .iter()
            .filter_map(|result| match result.outcome {
                StepOutcome::Done {
                    gpu_instance_id, ..
                } => gpu_instance_id,
                StepOutcome::Refused { .. } | StepOutcome::Skipped => None,
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
        run_batch(shared, say, gpu, steps)?;
    }
    Ok(())
}
