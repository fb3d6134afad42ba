//! The preflight: every GPU the layout names read and planned under the lock before anything
//! is written; the first refusal (in index order) blocks the whole apply. A restore also holds
//! each card against the board declared in its slot: another model blocks, another board of
//! the same model is a warning.

use super::busy;
use super::ctx::Shared;
use super::gpu::Gpu;
use super::gpu::GpuVgpu;
use super::vgpu;
use crate::plan::{Impossible, plan};
use crate::report::{ApplyReason, ApplyWarning, GpuReport, GpuWork, NvidiaWork};
use crate::select::{HostGpu, VgpuJob, Wanted};
use crate::vgpu::VgpuStep;
use gpu_host_probe::chain::Chain;
use gpu_host_probe::helper::{CardRead, ReadFailure};
use gpu_host_probe::{Host, Program};
use gpu_partition_types::{Bdf, UnreadableReason};
use layout_model::{
    Adopted, Board, BoardChange, Card, NvidiaDeclared, Owned, Owner, Placed, Unnamed,
};
use std::collections::BTreeMap;

/// Every GPU planned, or why not (with the reports of all, for the blocked report).
pub(super) enum Preflight {
    /// Every GPU may go on (and what a person should know).
    Go(Vec<Gpu>, Vec<ApplyWarning>),
    /// Refused: why, and each GPU's plan as far as it got.
    Refused {
        reason: ApplyReason,
        detail: String,
        /// The impossible layout that refused it, when one did.
        impossible: Option<Impossible>,
        gpus: Vec<GpuReport>,
        /// What a person should know all the same.
        warnings: Vec<ApplyWarning>,
    },
}

/// A read that failed refuses the apply: `gpu_busy` when another client holds the card, else
/// `gpu_unreadable`.
fn read_refusal(gpu: &HostGpu, failure: &ReadFailure) -> (ApplyReason, String) {
    let reason = if failure.reason == UnreadableReason::Busy {
        ApplyReason::GpuBusy
    } else {
        ApplyReason::GpuUnreadable
    };
    (reason, format!("{gpu}: {failure}"))
}

/// One GPU after its read: planned and free to go on, or refused (with its report as far as
/// it got).
enum Checked {
    Go(Box<Gpu>, Option<(ApplyReason, String)>),
    Refused(
        Box<GpuReport>,
        (ApplyReason, String),
        Option<Box<Impossible>>,
    ),
}

pub(super) fn preflight(
    shared: &Shared<'_>,
    wanted: Vec<Wanted>,
    boards: Option<&BTreeMap<Bdf, Board>>,
    unnamed: Unnamed,
    (owners, released): (&BTreeMap<Bdf, Vec<Owned>>, &[Owner]),
) -> Preflight {
    let (lock, helper) = (shared.lock, shared.helper);
    let mut cards: Vec<Gpu> = Vec::with_capacity(wanted.len());
    let mut others: Vec<GpuReport> = Vec::new();
    let mut refusal: Option<(ApplyReason, String)> = None;
    let mut impossible_first: Option<Impossible> = None;
    let mut warnings = Vec::new();
    // Every card read side by side (the helper's fan-out), then each planned in index order;
    // the first refusal in index order is the apply's.
    let devices: Vec<Bdf> = wanted.iter().map(|w| w.gpu.bdf).collect();
    let reads = match shared.format() {
        Ok(format) => helper.read_all(lock, &devices, format),
        // No NVIDIA GPU in the job: nothing to read.
        Err(_) if devices.is_empty() => Vec::new(),
        Err(stop) => {
            return Preflight::Refused {
                reason: ApplyReason::HelperUnavailable,
                detail: stop.detail,
                impossible: None,
                gpus: Vec::new(),
                warnings: Vec::new(),
            };
        }
    };
    for (wanted, read) in wanted.into_iter().zip(reads) {
        let declared = boards.and_then(|boards| boards.get(&wanted.gpu.bdf));
        let on = (shared.host, &shared.vgpu.sriov_manage.program);
        let owned = owners.get(&wanted.gpu.bdf).map_or(&[][..], Vec::as_slice);
        match check(
            on,
            wanted,
            read,
            declared,
            unnamed,
            (owned, released),
            &mut warnings,
        ) {
            Checked::Go(gpu, busy) => {
                if let Some(why) = busy {
                    refusal.get_or_insert(why);
                }
                cards.push(*gpu);
            }
            Checked::Refused(report, why, impossible) => {
                if refusal.is_none() {
                    refusal = Some(why);
                    impossible_first = impossible.map(|impossible| *impossible);
                }
                others.push(*report);
            }
        }
    }
    let Some((reason, detail)) = refusal else {
        return Preflight::Go(cards, warnings);
    };
    let mut gpus: Vec<GpuReport> = cards.into_iter().map(Gpu::into_report).collect();
    gpus.append(&mut others);
    gpus.sort_by_key(|gpu| gpu.index);
    Preflight::Refused {
        reason,
        detail,
        impossible: impossible_first,
        gpus,
        warnings,
    }
}

/// A GPU's read, its board against the one declared in its slot (a restore), and its plan.
fn check(
    (host, sriov_manage): (&Host, &Program),
    mut wanted: Wanted,
    read: CardRead,
    declared: Option<&Board>,
    unnamed: Unnamed,
    (owned, released): (&[Owned], &[Owner]),
    warnings: &mut Vec<ApplyWarning>,
) -> Checked {
    let device = wanted.gpu.bdf;
    let mut report = GpuReport::for_nvidia(device, wanted.gpu.index, wanted.line);
    let mut work = NvidiaWork::default();
    let reply = match read.into_reply() {
        Ok(reply) => reply,
        Err(failure) => {
            return Checked::Refused(Box::new(report), read_refusal(&wanted.gpu, &failure), None);
        }
    };
    let board = Board::of(&reply);
    match declared.and_then(|declared| declared.change(&board)) {
        Some(change @ BoardChange::OtherModel { .. }) => {
            let why = format!(
                "{}: {change}; nothing is restored on a card of another model: apply a layout \
                 for it",
                wanted.gpu
            );
            return Checked::Refused(Box::new(report), (ApplyReason::CardChanged, why), None);
        }
        Some(change @ BoardChange::OtherBoard { .. }) => {
            warnings.push(ApplyWarning::OtherBoard { device, change });
        }
        None => {}
    }
    // A vGPU job: the MIG layout its vGPUs need is decided by the card's catalogue, here.
    let mut vgpu_side = GpuVgpu::default();
    if let Some(job) = &wanted.vgpu {
        match vgpu::preflight(host, &wanted.gpu, job, &reply, unnamed) {
            Ok(planned) => {
                // A plan that runs sriov-manage runs it only when root may (before any write,
                // as the helper's own check).
                let runs = planned.vgpu.has(&VgpuStep::EnableVfs)
                    || planned.vgpu.has(&VgpuStep::DisableVfs);
                if let Some(refused) = runs.then(|| sriov_manage.for_host(host).err()).flatten() {
                    let why = (
                        ApplyReason::ToolUnavailable,
                        format!("{}: {}", wanted.gpu, Chain(&refused)),
                    );
                    return Checked::Refused(Box::new(report), why, None);
                }
                // A restore (or one partition) keeps the placements its declaration gives,
                // so each GPU instance, with its owner, comes back where it was; an apply
                // takes the layout its vGPUs need, anywhere it fits.
                let placed =
                    matches!(job, VgpuJob::Restore { .. }) && wanted.want.placements.is_some();
                if !placed {
                    wanted.want = planned.want;
                }
                work.vgpu_plan = planned.vgpu.steps.clone();
                vgpu_side = planned.vgpu;
            }
            Err((reason, detail, impossible)) => {
                let why = (reason, detail);
                return Checked::Refused(Box::new(report), why, impossible.map(Box::new));
            }
        }
    }
    let card = Card::of(&reply).ok();
    if let Some(card) = card
        .as_ref()
        .filter(|card| !card.unread_profiles.is_empty())
    {
        warnings.push(ApplyWarning::ProfilesUnread {
            device,
            positions: card.unread_profiles.clone(),
        });
    }
    let planned = match plan(&reply, &wanted.want) {
        Ok(planned) => planned,
        Err(impossible) => {
            let why = (ApplyReason::LayoutImpossible, impossible.message.clone());
            report.work = GpuWork::Nvidia(work);
            return Checked::Refused(Box::new(report), why, Some(Box::new(impossible)));
        }
    };
    if let Some(card) = &card {
        work.plan = planned.describe(card);
        work.adopted = adopted(card, &planned);
    }
    // `sriov-manage` wipes every GPU instance, enabling the VFs as disabling them.
    let wipes = vgpu_side.has(&VgpuStep::DisableVfs) || vgpu_side.has(&VgpuStep::EnableVfs);
    if let Some(why) = card
        .as_ref()
        .and_then(|card| owned_destroyed(card, &planned, wipes, owned, released))
    {
        report.work = GpuWork::Nvidia(work);
        return Checked::Refused(Box::new(report), (ApplyReason::PartitionOwned, why), None);
    }
    let busy = busy::refusal(&reply, &planned);
    let mut gpu = Gpu {
        declared: NvidiaDeclared::new(&wanted.want, board.clone()),
        wanted,
        reply,
        report,
        work,
        needs_reset: planned.reset,
        board,
        first: planned,
        stop: None,
        wrote: false,
        vgpu: vgpu_side,
        owners: owned.to_vec(),
    };
    let first = gpu.first.clone();
    gpu.decided(&first);
    Checked::Go(Box::new(gpu), busy)
}

/// The instances the plan adopts, as the report names them.
fn adopted(card: &Card, planned: &crate::plan::CardPlan) -> Vec<Adopted> {
    planned
        .adopted
        .iter()
        .filter_map(|id| card.instances.iter().find(|i| i.id == *id))
        .map(|instance| {
            Adopted::new(
                card.device,
                instance.id,
                card.named(instance.profile_id),
                instance.placement,
            )
        })
        .collect()
}

/// The first owned instance on the card that `planned` does not keep as it is, whose owner is
/// not `released`, as the refusal's detail (naming the GPU instance and its owner); `None` when
/// it keeps every one. Not kept: destroyed, its compute instances destroyed or refilled, left
/// out of what the layout places (adopted: its owner would be lost), or wiped by a mode change,
/// a reset or VFs disabled (`wipes`).
fn owned_destroyed(
    card: &Card,
    planned: &crate::plan::CardPlan,
    wipes: bool,
    owned: &[Owned],
    released: &[Owner],
) -> Option<String> {
    use gpu_partition_types::Step;
    let all = wipes || planned.set_mode.is_some() || planned.reset;
    let touched: Vec<u32> = planned
        .destroy
        .iter()
        .filter_map(|step| match step {
            Step::DestroyGpuInstance { gpu_instance_id }
            | Step::DestroyComputeInstance {
                gpu_instance_id, ..
            } => Some(*gpu_instance_id),
            _ => None,
        })
        .chain(planned.fill.iter().map(|fill| fill.gpu_instance_id))
        .collect();
    card.instances_now().iter().find_map(|instance| {
        let at = Placed::new(instance.profile_id, instance.placement);
        let owned = owned.iter().find(|owned| owned.at == at)?;
        let kept = !all && !touched.contains(&instance.id) && planned.target.contains(&at);
        (!kept && !released.contains(&owned.owner)).then(|| {
            format!(
                "{}: GPU instance {} ({} at {}+{}) is in use by {}: the layout would destroy, \
                 change or drop it; its owner destroys it, or the caller releases it",
                card.device,
                instance.id,
                card.label(instance.profile_id),
                instance.placement.start,
                instance.placement.size,
                owned.owner
            )
        })
    })
}
