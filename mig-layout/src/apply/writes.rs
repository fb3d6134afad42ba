//! The part of an apply that may write: the preflight of every GPU (refusing before any write),
//! the pre-hooks, the host written `entering`/`leaving`, the phases ([`super::phases`]), then
//! the record of how it ended with what the host is now declared to be, read back.

use super::amd::{self, AmdSide, AmdWith};
use super::ctx::Ctx;
use super::end::{classify, recorded, worst};
use super::hooks::{self, HookEnv, HookPoint};
use super::job::Job;
use super::locked::{cancelled, hook_failed};
use super::options::ApplyOptions;
use super::phases::{self, Gpu};
use super::preflight::{self, Preflight};
use super::progress::Progress;
use super::run::ApplyError;
use crate::report::{ApplyOutcome, ApplyReason, Draft, End};
use host_sync::{ApplyEnd, ApplyStateError, Direction, LayoutRecord, StateStore, StoreError};
use layout_model::{DeclaredGpu, Unnamed};
use std::time::Duration;
use warm_reset::ResetWith;

/// What the writes are for.
pub(super) struct Write<'a> {
    pub label: &'a str,
    pub job: Job,
    pub direction: Direction,
    pub options: &'a ApplyOptions,
    pub env: &'a HookEnv,
    /// How AMD GPUs are written.
    pub amd: &'a AmdWith<'a>,
}

/// The preflight, then (unless it refused, or this is a dry run) the pre-hooks and the writes,
/// recorded with what the host is now declared to be.
pub(super) fn go(
    ctx: &mut Ctx<'_, '_>,
    store: &mut dyn StateStore,
    reset: &mut ResetWith<'_>,
    write: Write<'_>,
    draft: &mut Draft,
) -> Result<End, ApplyError> {
    let unnamed = write.options.unnamed.unwrap_or(Unnamed::Match);
    let Job {
        wanted,
        amd: amd_wanted,
        boards,
    } = write.job;
    let mut cards = match preflighted(ctx, wanted, boards, unnamed, draft) {
        Ok(cards) => cards,
        Err(end) => return Ok(end),
    };
    let mut amd = match amd::preflight(ctx.shared.host, write.amd, amd_wanted, &mut *store)? {
        Ok(amd) => amd,
        Err(refused) => {
            draft.gpus = reports(cards, refused.gpus);
            return Ok(if ctx.shared.cancelled() {
                cancelled("while the cards were read")
            } else {
                End::blocked(refused.reason, refused.detail)
            });
        }
    };
    draft.reload_planned = amd.reloads_driver();
    if write.options.dry_run {
        draft.gpus = reports(cards, amd.reports());
        return Ok(End::new(ApplyOutcome::DryRun, None));
    }
    if let Some(end) = before_writes(ctx, (&cards, &amd), write.options, write.env, draft) {
        draft.gpus = reports(cards, amd.reports());
        return Ok(end);
    }
    // From here on the host is between layouts until the record says how the apply ended.
    let shared = ctx.shared;
    let record = host_sync::start_apply(shared.lock, store, write.label, write.direction)?;
    host_sync::begin_apply(shared.lock, store, &record)?;
    if !cards.is_empty() {
        phases::run(ctx, reset, &mut cards, &mut draft.resets);
    }
    let on = amd::AmdRun {
        ctx: &mut *ctx,
        with: write.amd,
        store: &mut *store,
    };
    amd::run(on, &mut amd)?;
    draft.reloads = amd.reloads;
    draft.warnings.append(&mut amd.warnings);
    let end = ended(&mut cards, &mut amd, shared.cancelled());
    // Whether any card may have been written: a step done, a reset issued, a batch that gave no
    // answer and left its card changed, an AMD write made.
    let wrote = cards.iter().any(|gpu| gpu.wrote) || amd.wrote;
    let mut applied = ApplyEnd::new(recorded(end.outcome), end.detail.clone(), wrote);
    applied.modes = cards
        .iter()
        .map(|gpu| (gpu.wanted.gpu.bdf, gpu.reply.outcome().partition_mode()))
        .collect();
    applied.amd = amd.devices();
    // The new declaration stands once the layout holds, and after any write (the host is then
    // between layouts until it holds; a restore finishes it); an apply that ended before its
    // first write without the layout holding leaves the one before.
    applied.declared = (wrote || end.outcome == ApplyOutcome::Done).then(|| {
        cards
            .iter()
            .map(|gpu| {
                (
                    gpu.wanted.gpu.bdf,
                    DeclaredGpu::Nvidia(gpu.declared.clone()),
                )
            })
            .chain(amd.declared())
            .collect()
    });
    draft.gpus = reports(cards, amd.reports());
    record_end(ctx, store, record, applied, &end, draft)?;
    draft.host = Some(classify(shared.lock, shared.helper, store, write.options)?);
    Ok(end)
}

/// Each GPU's report: the NVIDIA GPUs' (in index order), then the AMD GPUs' (in ID order).
fn reports(cards: Vec<Gpu>, amd: Vec<crate::report::GpuReport>) -> Vec<crate::report::GpuReport> {
    cards.into_iter().map(|gpu| gpu.report).chain(amd).collect()
}

/// Every GPU read and planned, the plans shown; or how the apply ends when the preflight
/// refused it (for a cancel while the cards were read, cancelled).
fn preflighted(
    ctx: &mut Ctx<'_, '_>,
    wanted: Vec<crate::select::Wanted>,
    boards: Option<std::collections::BTreeMap<gpu_partition_types::Bdf, layout_model::Board>>,
    unnamed: Unnamed,
    draft: &mut Draft,
) -> Result<Vec<Gpu>, End> {
    let shared = ctx.shared;
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let checked = preflight::preflight(&shared, wanted, boards.as_ref(), unnamed);
    let (cards, warnings) = match checked {
        Preflight::Go(cards, warnings) => (cards, warnings),
        Preflight::Refused { gpus, warnings, .. } if shared.cancelled() => {
            draft.warnings.extend(warnings);
            draft.gpus = gpus;
            return Err(cancelled("while the cards were read"));
        }
        Preflight::Refused {
            reason,
            detail,
            impossible,
            gpus,
            warnings,
        } => {
            draft.warnings.extend(warnings);
            draft.gpus = gpus;
            draft.impossible = impossible;
            return Err(End::blocked(reason, detail));
        }
    };
    draft.warnings.extend(warnings);
    for gpu in &cards {
        for line in &gpu.report.plan {
            ctx.say(Progress::Plan {
                device: gpu.report.device,
                line: line.clone(),
            });
        }
    }
    Ok(cards)
}

/// The hooks before the writes — a mode change (and its reset; an AMD driver reload), then the
/// instances (an AMD compute partition) — and a last look at the cancel: how the apply ends
/// when either stops it, else `None`.
fn before_writes(
    ctx: &Ctx<'_, '_>,
    (cards, amd): (&[Gpu], &AmdSide),
    options: &ApplyOptions,
    env: &HookEnv,
    draft: &mut Draft,
) -> Option<End> {
    let changes_mode = cards.iter().any(Gpu::changes_mode) || amd.reloads_driver();
    let changes_instances = cards.iter().any(Gpu::changes_instances) || amd.sets_compute();
    for (point, due) in [
        (HookPoint::PreApplyMode, changes_mode),
        (HookPoint::PreApplyConfig, changes_instances),
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
/// stands); else as the worst GPU, of both vendors.
fn ended(cards: &mut [Gpu], amd: &mut AmdSide, cancelled: bool) -> End {
    let wrote = cards.iter().any(|gpu| gpu.wrote) || amd.wrote;
    let gpus: Vec<(&mut crate::report::GpuReport, &mut Option<super::ctx::Stop>)> = cards
        .iter_mut()
        .map(|gpu| (&mut gpu.report, &mut gpu.stop))
        .chain(
            amd.gpus
                .iter_mut()
                .map(|gpu| (&mut gpu.report, &mut gpu.stop)),
        )
        .collect();
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
    match host_sync::end_apply(ctx.shared.lock, store, record, applied) {
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
