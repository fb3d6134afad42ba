//! The preflight: every GPU the layout names read and planned under the lock before anything
//! is written; the first refusal (in index order) blocks the whole apply.

use super::busy;
use super::phases::Gpu;
use crate::plan::plan;
use crate::report::{ApplyReason, GpuReport};
use crate::select::{HostGpu, Wanted};
use gpu_host_probe::HostLock;
use gpu_host_probe::helper::{Helper, ReadFailure};
use gpu_partition_types::{FormatVersion, UnreadableReason};
use host_sync::Card;

/// Every GPU planned, or why not (with the reports of all, for the blocked report).
pub(super) enum Preflight {
    /// Every GPU may go on.
    Go(Vec<Gpu>),
    /// Refused: why, and each GPU's plan as far as it got.
    Refused {
        reason: ApplyReason,
        detail: String,
        gpus: Vec<GpuReport>,
    },
}

fn read_refusal(gpu: &HostGpu, failure: &ReadFailure) -> (ApplyReason, String) {
    let reason = match failure.reason {
        UnreadableReason::Busy => ApplyReason::GpuBusy,
        _ => ApplyReason::GpuUnreadable,
    };
    (reason, format!("{gpu}: {failure}"))
}

pub(super) fn preflight(
    lock: &HostLock,
    helper: &Helper,
    format: FormatVersion,
    wanted: Vec<Wanted>,
) -> Preflight {
    let mut cards: Vec<Gpu> = Vec::with_capacity(wanted.len());
    let mut others: Vec<GpuReport> = Vec::new();
    let mut refusal: Option<(ApplyReason, String)> = None;
    for wanted in wanted {
        let device = wanted.gpu.bdf;
        let mut report = GpuReport {
            device,
            index: wanted.gpu.index,
            line: wanted.line,
            plan: Vec::new(),
            steps: Vec::new(),
            differences: Vec::new(),
        };
        let reply = match helper.read_reply(lock, device, format) {
            Ok(reply) => reply,
            Err(failure) => {
                refusal.get_or_insert_with(|| read_refusal(&wanted.gpu, &failure));
                others.push(report);
                continue;
            }
        };
        match plan(&reply, &wanted.want) {
            Ok(planned) => {
                if let Ok(card) = Card::of(&reply) {
                    report.plan = planned.describe(&card);
                }
                if let Some(why) = busy::refusal(&reply, &planned) {
                    refusal.get_or_insert(why);
                }
                cards.push(Gpu {
                    wanted,
                    reply,
                    report,
                    needs_reset: planned.reset,
                });
            }
            Err(impossible) => {
                refusal.get_or_insert((ApplyReason::LayoutImpossible, impossible.message));
                others.push(report);
            }
        }
    }
    match refusal {
        None => Preflight::Go(cards),
        Some((reason, detail)) => {
            let mut gpus: Vec<GpuReport> = cards.into_iter().map(|gpu| gpu.report).collect();
            gpus.append(&mut others);
            gpus.sort_by_key(|gpu| gpu.index);
            Preflight::Refused {
                reason,
                detail,
                gpus,
            }
        }
    }
}
