//! One partition's request through the executor: the card read under the host lock, the plan
//! held to exactly that one partition, the run, the row read back; and a create that failed
//! after its GPU instance was made, taken back under the same hold of the lock.

use super::base::{Base, DeclaredVfs, PARTITIONS_LABEL, Seen, base};
use super::refusal::PartitionRefusal;
use super::vgpu;
use crate::apply::job::{Job, declared_vgpu_job, take_lock};
use crate::apply::locked::run_locked_keeping;
use crate::apply::options::ApplyOptions;
use crate::apply::run::{ApplyError, ApplyRun};
use crate::report::{ApplyOutcome, ApplyReason, ApplyReport, Draft};
use crate::select::{HostGpu, Wanted, host_gpus};
use gpu_host_probe::helper::Helper;
use gpu_host_probe::{Host, HostLock};
use gpu_partition_types::{Bdf, Reply};
use layout_model::partition::{Partition, Slot};
use layout_model::{Card, Owned, Owner, Placed, ProfileKey, Unnamed, VfsRead, VgpuDeclared, Want};
use std::collections::BTreeMap;

/// How a partition request ended.
#[derive(Debug, Clone)]
pub enum PartitionOutcome {
    /// Refused before anything was read or written.
    Refused(PartitionRefusal),
    /// It went through the executor: its report (done, or blocked or failed with the
    /// executor's reason), and the partition's row as the closing sync read it (`None` for a
    /// destroy, and when it did not read).
    Ran {
        /// The executor's report.
        report: Box<ApplyReport>,
        /// The created partition's row, as read back.
        row: Option<Partition>,
        /// The GPU's layout generation after it, as read back.
        generation: Option<u64>,
        /// A create that failed after its GPU instance was made: that instance taken back
        /// under the same hold of the host lock, the declaration left as it stands. `None`
        /// where nothing was tried: a destroy, a create that did not fail or that was
        /// cancelled, one that made nothing; and where taking it back would write more than
        /// that instance, or the card did not read (the create's report says how the card
        /// differs; a restore brings it back).
        undone: Option<TakenBack>,
    },
}

/// What became of the GPU instance a failed create made.
#[derive(Debug, Clone)]
pub enum TakenBack {
    /// The run that took it back went through the executor: its report (done, or how it
    /// ended otherwise).
    Ran(Box<ApplyReport>),
    /// That run could not run (the store, the scan): the instance may still be on the card;
    /// the create's report says what the closing sync read, and a restore brings the card
    /// back to the declaration.
    CouldNotRun(std::sync::Arc<ApplyError>),
}

/// What the request reads of `device` under `lock`: its card, and its SR-IOV VFs.
fn seen(lock: &HostLock, helper: &Helper, device: Bdf) -> Result<Seen, PartitionRefusal> {
    let (reply, card) = read_card(lock, helper, device)?;
    let sriov = host_sync::sriov::read_sriov(lock.host().sysfs_root(), device);
    Ok(Seen {
        reply,
        card,
        sriov: !matches!(sriov, Ok(None)),
        vfs: host_sync::sriov::vf_types(&sriov),
    })
}

/// The card of `device`, read under `lock`.
fn read_card(
    lock: &HostLock,
    helper: &Helper,
    device: Bdf,
) -> Result<(Reply, Card), PartitionRefusal> {
    let unreadable = |why: String| PartitionRefusal::Unreadable { device, why };
    let format = helper
        .negotiate()
        .map_err(|refused| unreadable(refused.failure.to_string()))?;
    let read = helper
        .read_all(lock, &[device], format)
        .into_iter()
        .next()
        .ok_or_else(|| unreadable("the helper gave no read".to_owned()))?;
    let reply = read
        .into_reply()
        .map_err(|failure| unreadable(failure.to_string()))?;
    let card = Card::of(&reply).map_err(|card| unreadable(card.to_string()))?;
    if !card.current {
        return Err(PartitionRefusal::MigOff { device });
    }
    Ok((reply, card))
}

/// The want of a GPU whose instances are `placed`: MIG on, each profile counted, at those
/// placements, the card's other instances as `unnamed` says.
pub(super) fn want_of(placed: Vec<Placed>, unnamed: Unnamed) -> Want {
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for at in &placed {
        *counts.entry(at.profile_id).or_default() += 1;
    }
    Want::enabled(
        counts
            .into_iter()
            .map(|(id, count)| (ProfileKey::Id(id), count))
            .collect(),
    )
    .placed(placed)
    .unnamed(unnamed)
}

/// Whether planning `want` on the card of `reply` writes exactly one partition: a create of
/// `at` (one instance made, nothing else), or the destroy of GPU instance `destroyed` (its
/// compute instances and itself, nothing else). Anything more — an instance declared and
/// missing made again, compute instances refilled, another destroyed — is the card differing
/// from its declaration.
fn writes_one(
    reply: &Reply,
    want: &Want,
    at: Placed,
    destroyed: Option<u32>,
) -> Result<(), PartitionRefusal> {
    use gpu_partition_types::Step;
    let device = reply.device;
    let differs = PartitionRefusal::CardDiffers { device };
    let planned = crate::plan::plan(reply, want).map_err(|_| differs.clone())?;
    let still = planned.set_mode.is_none()
        && !planned.reset
        && !planned.deferred
        && planned.fill.is_empty();
    let one = match destroyed {
        None => {
            planned.destroy.is_empty()
                && matches!(planned.create.as_slice(),
                    [create] if create.profile_id == at.profile_id && create.placement == at.placement)
        }
        Some(id) => {
            planned.create.is_empty()
                && planned.destroy.iter().any(|step| {
                    matches!(step, Step::DestroyGpuInstance { gpu_instance_id } if *gpu_instance_id == id)
                })
                && planned.destroy.iter().all(|step| match step {
                    Step::DestroyComputeInstance {
                        gpu_instance_id, ..
                    }
                    | Step::DestroyGpuInstance { gpu_instance_id } => *gpu_instance_id == id,
                    _ => false,
                })
        }
    };
    if still && one { Ok(()) } else { Err(differs) }
}

/// The job of one GPU, wanted `want`, its owners `owners`, its VFs' types `vfs` (restored as a
/// declaration's are, each on its VF; `None`: no vGPU declared).
fn job(
    gpu: HostGpu,
    want: Want,
    owners: Vec<Owned>,
    vfs: Option<DeclaredVfs>,
) -> Result<Job, ApplyError> {
    let device = gpu.bdf;
    let declared = vfs.map(|vfs| VgpuDeclared::on(vfs.types, vfs.heterogeneous));
    let vgpu = declared_vgpu_job(device, declared.as_ref())?;
    let mut job = Job::nvidia(vec![Wanted {
        gpu,
        want,
        line: None,
        vgpu,
    }]);
    job.owners = BTreeMap::from([(device, owners)]);
    Ok(job)
}

/// The outcome of a job that went through the executor: its report, the row at `at` (a
/// create's) and the generation as the closing sync read them, and what became of a failed
/// create's instance.
fn ran(
    store: &mut dyn host_sync::StateStore,
    (host, device): (&Host, Bdf),
    report: ApplyReport,
    created: Option<(Placed, bool)>,
    started: u64,
    undone: Option<TakenBack>,
) -> Result<PartitionOutcome, ApplyError> {
    // Only a division read by the closing sync (at or after the start) and still current says
    // what the GPU holds now: a dry run, a blocked run, a read that failed say nothing.
    let now = host.now();
    let division = store
        .load()?
        .and_then(|state| state.gpus.get(&device).cloned())
        .and_then(|record| record.division)
        .filter(|division| division.read_at >= started && division.stale(device, &now).is_none());
    // A GPU instance's row; for a vGPU, the row of the VF on it.
    let row = created.and_then(|(at, vgpu)| {
        let rows = &division.as_ref()?.partitions;
        let instance = rows.iter().find(|row| match &row.profile {
            layout_model::partition::PartitionProfile::Mig { id, .. } => {
                *id == at.profile_id && row.placement == Some(at.placement)
            }
            _ => false,
        })?;
        if !vgpu {
            return Some(instance.clone());
        }
        let Slot::GpuInstance { id } = instance.slot else {
            return None;
        };
        rows.iter()
            .find(|row| matches!(row.slot, Slot::Vf { .. }) && row.on == Some(id))
            .cloned()
    });
    Ok(PartitionOutcome::Ran {
        report: Box::new(report),
        row,
        generation: division.map(|division| division.generation),
        undone,
    })
}

/// What one partition's request decided, once the card was read: the GPU's want and owners
/// after it, the partition it writes, and the owner whose partition it may destroy.
pub(super) struct Decided {
    pub(super) want: Want,
    pub(super) owners: Vec<Owned>,
    /// The partition created (its row is read back), or destroyed.
    pub(super) at: Placed,
    /// A destroy's GPU instance; `None` for a create.
    pub(super) destroyed: Option<u32>,
    pub(super) release: Option<Owner>,
    /// The GPU's VFs' declared types after it (as the base's, `None` where none are).
    pub(super) vfs: Option<DeclaredVfs>,
    /// Whether the partition is a vGPU (its type written or cleared, besides the instance).
    pub(super) vgpu: bool,
}

/// One partition's request on `device`: the host lock taken (or why not), the declaration and
/// the card read under it, `decide` asked what to write (or why not), the plan held to exactly
/// that one partition, then the executor (and a create that failed after it made its GPU
/// instance, that instance taken back: [`taken_back`]); the row (a create's) and the
/// generation as the closing sync read them.
pub(super) fn one_partition(
    mut run: ApplyRun<'_>,
    device: Bdf,
    options: &ApplyOptions,
    decide: impl FnOnce(&Base, &Seen) -> Result<Decided, PartitionRefusal>,
) -> Result<PartitionOutcome, ApplyError> {
    let host = run.host;
    let clock = run.reset.clock_or_real();
    let started = clock.now();
    let started_at = clock.unix_s();
    let lock = match take_lock(run.host, options)? {
        Ok(lock) => lock,
        Err(end) => {
            let report =
                Draft::new(PARTITIONS_LABEL).finish(end, clock.now().saturating_sub(started));
            return Ok(PartitionOutcome::Ran {
                report: Box::new(report),
                row: None,
                generation: None,
                undone: None,
            });
        }
    };
    let state = run.store.load()?.unwrap_or_default();
    let ownership = state.ownership_of(device);
    // An NVIDIA GPU of the host (one the helper reads), and ours.
    let Some(gpu) = host_gpus(run.host.sysfs_root())?
        .into_iter()
        .find(|gpu| gpu.bdf == device)
    else {
        return Ok(PartitionOutcome::Refused(PartitionRefusal::NotNvidia {
            device,
        }));
    };
    let ours = if ownership.is_ours() {
        Ok(())
    } else {
        Err(PartitionRefusal::NotOurs { device, ownership })
    };
    let decided = ours
        .and_then(|()| base(state.declared.as_ref(), device))
        .and_then(|base| {
            let seen = seen(&lock, run.helper, device)?;
            vgpu::as_declared(&base, &seen)?;
            let decided = decide(&base, &seen)?;
            writes_one(&seen.reply, &decided.want, decided.at, decided.destroyed)?;
            Ok((base, decided))
        });
    let (base, decided) = match decided {
        Ok(decided) => decided,
        Err(refused) => return Ok(PartitionOutcome::Refused(refused)),
    };
    let created = decided
        .destroyed
        .is_none()
        .then_some((decided.at, decided.vgpu));
    let gpu_again = gpu.clone();
    let job = job(gpu, decided.want, decided.owners, decided.vfs)?;
    let mut options = options.clone().devices(vec![device]).unnamed(base.unnamed);
    if let Some(owner) = decided.release {
        options = options.release(owner);
    }
    let mut draft = Draft::new(&base.label);
    let (end, _) = run_locked_keeping(
        run.reborrow(),
        &lock,
        &base.label,
        job,
        &options,
        &mut draft,
    )?;
    let failed =
        matches!(end.outcome, ApplyOutcome::Failed(reason) if reason != ApplyReason::Cancelled);
    let report = draft.finish(end, clock.now().saturating_sub(started));
    let undone = match created {
        Some((at, _)) if failed => {
            match taken_back(run.reborrow(), &lock, &base, gpu_again, at, &options) {
                Ok(ran) => ran.map(|report| TakenBack::Ran(Box::new(report))),
                // The create's report is the answer; why its instance stays goes with it.
                Err(error) => Some(TakenBack::CouldNotRun(std::sync::Arc::new(error))),
            }
        }
        _ => None,
    };
    drop(lock);
    ran(
        run.store,
        (host, device),
        report,
        created,
        started_at,
        undone,
    )
}

/// A create that failed after its GPU instance was made (the driver refused the vGPU type
/// write, say): the instance taken back under the same hold of the lock, through the executor,
/// wanting the GPU's declaration as it was (which a failed run keeps) and declaring nothing, so
/// that a create either makes its partition and declares it or leaves no instance of it. The
/// run's report; `None` where none ran: the card holds no instance at `at` (none was made), it
/// did not read, or taking it back would write more than that instance (the card differs
/// otherwise too; the report of the create says how).
fn taken_back(
    run: ApplyRun<'_>,
    lock: &HostLock,
    base: &Base,
    gpu: HostGpu,
    at: Placed,
    options: &ApplyOptions,
) -> Result<Option<ApplyReport>, ApplyError> {
    let clock = run.reset.clock_or_real();
    let started = clock.now();
    let Ok(mut seen) = seen(lock, run.helper, gpu.bdf) else {
        return Ok(None);
    };
    let Some(id) = seen
        .card
        .instances_now()
        .iter()
        .find(|instance| instance.profile_id == at.profile_id && instance.placement == at.placement)
        .map(|instance| instance.id)
    else {
        return Ok(None);
    };
    // Taken back as a destroy of it would be: a type its VF took cleared first, where the
    // GPU's VFs are declared (else a vGPU on it is the card differing); every other VF as
    // declared, and the plan that one instance's destroy.
    let Ok((vfs, _)) = vgpu::without_the_one_on(base, &seen, id) else {
        return Ok(None);
    };
    if let VfsRead::Read(found) = &mut seen.vfs {
        found.retain(|vf| vf.gpu_instance != Some(id));
    }
    let want = want_of(base.placed.clone(), base.unnamed).removing(vec![at]);
    if vgpu::as_declared(base, &seen).is_err()
        || writes_one(&seen.reply, &want, at, Some(id)).is_err()
    {
        return Ok(None);
    }
    let mut job = job(gpu, want, base.owners.clone(), vfs)?;
    job.declares = false;
    let mut draft = Draft::new(&base.label);
    let (end, _) = run_locked_keeping(run, lock, &base.label, job, options, &mut draft)?;
    Ok(Some(draft.finish(end, clock.now().saturating_sub(started))))
}
