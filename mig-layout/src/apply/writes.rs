//! The executor's frame, once the lock is held and nothing decided the apply before the cards
//! were read: every side's preflight before any write (a refusal of one blocks all), the
//! pre-hooks the sides' plans make due, the host written `entering`/`leaving`, each side's
//! writes and read-back, then one record of how the apply ended with what the host is now
//! declared to be, read back. The frame names no vendor: each is a [`Side`].

use super::ctx::{Ctx, Stop};
use super::end::{cancelled, classify, hook_failed, recorded, worst};
use super::hook_run::HookPoint;
use super::hooks::{self, HookEnv};
use super::options::ApplyOptions;
use super::run::ApplyError;
use super::side::{Due, Side, Writing};
use crate::report::{ApplyOutcome, ApplyReason, Draft, End, GpuReport};
use gpu_partition_types::Bdf;
use host_sync::{ApplyEnd, ApplyStateError, Direction, LayoutRecord, StateStore, StoreError};
use std::time::Duration;
use warm_reset::ResetWith;

/// What the writes are for.
pub(super) struct Write<'a> {
    pub label: &'a str,
    pub direction: Direction,
    pub options: &'a ApplyOptions,
    pub env: &'a HookEnv,
    /// Whether the host is declared to what the run wants once it holds (`Job::declares`).
    pub declares: bool,
}

/// Every side's preflight, then (unless one refused, or this is a dry run) the pre-hooks and
/// each side's writes, recorded with what the host is now declared to be.
pub(super) fn go(
    ctx: &mut Ctx<'_, '_>,
    store: &mut dyn StateStore,
    reset: &mut ResetWith<'_>,
    write: Write<'_>,
    mut sides: Vec<Box<dyn Side + '_>>,
    draft: &mut Draft,
) -> Result<End, ApplyError> {
    for at in 0..sides.len() {
        let Some(side) = sides.get_mut(at) else {
            continue;
        };
        if let Err(refusal) = side.preflight(ctx, store, draft)? {
            draft.gpus = reports(sides);
            return Ok(if ctx.shared.cancelled() {
                cancelled("while the cards were read")
            } else {
                draft.impossible = refusal.impossible;
                End::blocked(refusal.reason, refusal.detail)
            });
        }
    }
    // A reset the plan needs may take a GPU that is not ours with it: refused here, before
    // any write (a dry run says so as the apply would).
    let resets: Vec<Bdf> = sides.iter().flat_map(|side| side.resets()).collect();
    if let Some(end) = super::reset::takes_one_not_ours(&ctx.shared, reset, &resets) {
        draft.gpus = reports(sides);
        return Ok(end);
    }
    if write.options.dry_run {
        draft.gpus = reports(sides);
        return Ok(End::new(ApplyOutcome::DryRun, None));
    }
    let due = sides.iter().fold(Due::default(), |due, side| {
        let side = side.due();
        Due {
            mode: due.mode || side.mode,
            instances: due.instances || side.instances,
        }
    });
    if let Some(end) = before_writes(ctx, due, write.options, write.env, draft) {
        draft.gpus = reports(sides);
        return Ok(end);
    }
    // From here on the host is between layouts until the record says how the apply ended.
    let shared = ctx.shared;
    let record = host_sync::start_apply(
        shared.lock,
        store,
        shared.clock,
        write.label,
        write.direction,
    )?;
    host_sync::begin_apply(shared.lock, store, &record)?;
    for side in &mut sides {
        let mut on = Writing {
            store: &mut *store,
            reset: &mut *reset,
            draft: &mut *draft,
        };
        side.run(ctx, &mut on)?;
    }
    let end = ended(&mut sides, shared.cancelled());
    // Whether any card may have been written: a step done, a reset issued, a batch that gave no
    // answer and left its card changed, an AMD write made.
    let wrote = sides.iter().any(|side| side.wrote());
    let mut applied = ApplyEnd::new(recorded(end.outcome), end.detail.clone(), wrote);
    applied.read = sides.iter().flat_map(|side| side.read()).collect();
    // The new declaration stands once the layout holds. A failed apply never leaves the host
    // declared to a layout its cards refused: the declaration before stands (the closing sync
    // says how the cards now differ from it, and a restore brings them back to it). A cancel
    // keeps its rule: once writes began, the new declaration stands (a restore finishes it); so
    // does a warm reset that left a card needing a cold reboot, which no card refused (the
    // restore after the cold reboot finishes it).
    let declares = write.declares
        && match end.outcome {
            ApplyOutcome::Done => true,
            ApplyOutcome::Failed(ApplyReason::Cancelled) | ApplyOutcome::ColdRebootRequired(_) => {
                wrote
            }
            ApplyOutcome::Failed(_)
            | ApplyOutcome::Blocked(_)
            | ApplyOutcome::DryRun
            | ApplyOutcome::NothingNamed => false,
        };
    applied.declared = declares.then(|| sides.iter().flat_map(|side| side.declared()).collect());
    draft.gpus = reports(sides);
    record_end(ctx, store, record, applied, &end, draft)?;
    draft.host = Some(classify(
        shared.lock,
        shared.helper,
        store,
        shared.clock,
        write.options,
    )?);
    Ok(end)
}

/// Each side's GPU reports, in the sides' order.
fn reports(sides: Vec<Box<dyn Side + '_>>) -> Vec<GpuReport> {
    sides.into_iter().flat_map(|side| side.reports()).collect()
}

/// The hooks before the writes — a mode change (and its reset; an AMD driver reload), then
/// what the GPUs are divided into — and a last look at the cancel: how the apply ends when
/// either stops it, else `None`.
fn before_writes(
    ctx: &Ctx<'_, '_>,
    due: Due,
    options: &ApplyOptions,
    env: &HookEnv,
    draft: &mut Draft,
) -> Option<End> {
    for (point, due) in [
        (HookPoint::PreApplyMode, due.mode),
        (HookPoint::PreApplyConfig, due.instances),
    ] {
        if !due {
            continue;
        }
        if let Some(failed) = hooks::run_point(&options.hooks, point, env, draft) {
            return Some(hook_failed(&failed));
        }
    }
    ctx.shared
        .cancelled()
        .then(|| cancelled("before the writes"))
}

/// How the writes ended: nothing written and cancelled is blocked (the declaration before
/// stands); else as the worst GPU, of every side.
fn ended(sides: &mut [Box<dyn Side + '_>], cancelled: bool) -> End {
    let wrote = sides.iter().any(|side| side.wrote());
    let gpus: Vec<(&mut GpuReport, &mut Option<Stop>)> =
        sides.iter_mut().flat_map(|side| side.stops()).collect();
    if cancelled && !wrote {
        for (report, _) in gpus {
            report.outcome = None;
        }
        return End::blocked(
            ApplyReason::Cancelled,
            "the apply was cancelled before its first write; nothing was written, and the \
             declared layout is as it was",
        );
    }
    worst(gpus, cancelled)
}

/// Records how the apply ended; a store that did not keep it fails the apply, naming the
/// member, with the report of what was done.
fn record_end(
    ctx: &Ctx<'_, '_>,
    store: &mut dyn StateStore,
    record: LayoutRecord,
    applied: ApplyEnd,
    end: &End,
    draft: &Draft,
) -> Result<(), ApplyError> {
    match host_sync::end_apply(ctx.shared.lock, store, ctx.shared.clock, record, applied) {
        Ok(()) => Ok(()),
        Err(ApplyStateError::Store(StoreError::NotKept { difference })) => {
            Err(ApplyError::NotKept {
                difference,
                report: Box::new(draft.clone().finish(end.clone(), Duration::ZERO)),
            })
        }
        Err(error) => Err(error.into()),
    }
}
