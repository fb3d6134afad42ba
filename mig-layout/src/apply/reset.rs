//! Completing the mode changes the cards hold pending: warm resets of those GPUs (with the
//! NVLink peers the nvidia method takes with them) through `warm-reset`, under the apply's host
//! lock — its preflight, window, journal and verification — in one command and one window for
//! them all, never a reset of a GPU that needs none.
//!
//! Before the reset: a reset still in flight in the journal (a run killed inside its window) is
//! waited out on the apply's clock — warm-reset says how long its window has left
//! ([`warm_reset::window_left`]) — so the machine verifies it instead of refusing, and two
//! resets never fall inside one window; when that reset completed the mode change, none is
//! issued at all. A dry run
//! names the group, and a peer the layout does not name that carries GPU instances refuses the
//! reset (they would be lost).

use super::Progress;
use super::ctx::{Ctx, Shared, Stop};
use crate::report::End;
use crate::report::{ApplyOutcome, ApplyReason};
use gpu_host_probe::Clock;
use gpu_host_probe::HostLock;
use gpu_partition_types::Bdf;
use layout_model::Card;
use std::time::Duration;
use warm_reset::{
    BlockedReason, ExecuteError, ResetOutcome, ResetReport, ResetTarget, ResetWith, window_left,
};

/// Waits on `clock` until a reset the journal records in flight, of this boot, is past its
/// window (warm-reset's rule, [`window_left`]): the machine then verifies it rather than
/// refusing, and issues no second reset inside it. How long it waited, if it did.
fn wait_out_in_flight(
    lock: &HostLock,
    clock: &dyn Clock,
) -> Result<Option<Duration>, ExecuteError> {
    let Some((target, left)) = window_left(lock, clock)? else {
        return Ok(None);
    };
    tracing::info!(
        "a reset of {} is in flight; waiting {:.1} s for its window to end",
        target.id,
        left.as_secs_f64()
    );
    clock.sleep(left);
    Ok(Some(left))
}

/// Runs the nvidia method's machine on `target` (one command for all its GPUs) under `lock`:
/// a dry run when `dry_run`.
fn run(
    lock: &HostLock,
    with: &mut ResetWith<'_>,
    target: &ResetTarget,
    dry_run: bool,
) -> Result<ResetReport, ExecuteError> {
    with.execute(target, dry_run, lock)
}

/// Before any write: the first GPU of `due` (those the plan may reset) whose reset group, as
/// warm-reset's dry run resolves it, takes a GPU that is not ours — an NVLink peer another
/// agent owns: the apply is blocked (`gpu_not_ours`), nothing written; so is one whose dry run
/// cannot run, or is blocked before it resolves the group (`reset_blocked`). Only asked while
/// `with` spares some GPU.
pub(super) fn takes_one_not_ours(
    shared: &Shared<'_>,
    with: &mut ResetWith<'_>,
    due: &[Bdf],
) -> Option<End> {
    // warm-reset holds the rule (the run spares `with.not_ours`): its dry run says so.
    if with.not_ours.is_empty() {
        return None;
    }
    for device in due {
        // A dry run that cannot run tells no group: nothing is written rather than risk it.
        let dry = match run(shared.lock, with, &ResetTarget::device(*device), true) {
            Ok(dry) => dry,
            Err(error) => {
                return Some(End::blocked(
                    ApplyReason::ResetBlocked,
                    format!(
                        "{device}: what its reset would take with it cannot be told ({}), and a \
                         GPU of the host is not ours: nothing is written",
                        gpu_host_probe::chain::Chain(&error)
                    ),
                ));
            }
        };
        match dry.outcome {
            ResetOutcome::Blocked(BlockedReason::GpuNotOurs) => {
                return Some(End::blocked(
                    ApplyReason::GpuNotOurs,
                    format!(
                        "{device}: {} (its mode change may wait for that reset: nothing is \
                         written)",
                        dry.detail
                    ),
                ));
            }
            // Blocked before it resolved the group (an earlier reset in flight, not root): no
            // group is told either.
            ResetOutcome::Blocked(reason) if dry.gpus.is_empty() => {
                return Some(End::blocked(
                    ApplyReason::ResetBlocked,
                    format!(
                        "{device}: what its reset would take with it cannot be told (its dry \
                         run is blocked, {reason}: {}), and a GPU of the host is not ours: \
                         nothing is written",
                        dry.detail
                    ),
                ));
            }
            _ => {}
        }
    }
    None
}

/// How a batch of resets ended: the GPUs it touched (reset, or verified after an earlier
/// run's reset), to read again; and each GPU of the batch that stops, with why.
pub(super) struct BatchEnd {
    pub touched: Vec<Bdf>,
    pub stops: Vec<(Bdf, Stop)>,
    /// The GPUs a reset of this batch was issued on (written, however it ended).
    pub issued: Vec<Bdf>,
}

/// Completes the pending mode changes of `due` with warm resets, together: an earlier run's
/// reset still in flight is waited out and verified (a GPU it completed needs no other);
/// each GPU is preflighted on its own (a dry run naming its group: a GPU whose reset is
/// blocked, or would take an NVLink peer the apply does not name that carries instances,
/// stops alone); the rest are reset in one command, in one window, each verified on its own —
/// one the verification does not find back needs a cold reboot, the others go on. Every reset
/// report is kept in `resets`.
pub(super) fn reset_batch(
    ctx: &mut Ctx<'_, '_>,
    with: &mut ResetWith<'_>,
    due: &[Bdf],
    in_apply: &[Bdf],
    resets: &mut Vec<ResetReport>,
) -> BatchEnd {
    let mut end = BatchEnd {
        touched: Vec::new(),
        stops: Vec::new(),
        issued: Vec::new(),
    };
    let Some(due) = earlier_reset(ctx, with, due, resets, &mut end) else {
        return end;
    };
    let batch = each_alone(ctx, with, &due, in_apply, &mut end);
    if batch.is_empty() {
        return end;
    }
    if let Err(stop) = ctx.shared.go_on("the warm reset") {
        end.stop_all(&batch, |_| stop.clone());
        return end;
    }
    issue(ctx, with, &batch, resets, &mut end);
    end
}

impl BatchEnd {
    fn stop_all(&mut self, devices: &[Bdf], stop: impl Fn(Bdf) -> Stop) {
        for device in devices {
            self.stops.push((*device, stop(*device)));
        }
    }

    /// Every one of `devices` stops: the reset machine could not run.
    fn could_not_run(&mut self, devices: &[Bdf], error: &ExecuteError) {
        let detail = machine(error);
        self.stop_all(devices, |device| {
            Stop::failed(ApplyReason::ResetBlocked, format!("{device}: {detail}"))
        });
    }
}

fn machine(error: &ExecuteError) -> String {
    format!(
        "the warm reset could not run: {}",
        gpu_host_probe::chain::Chain(error)
    )
}

/// An earlier run's reset still in its window: waited out, then verified by the machine; the
/// GPUs of `due` it did not complete (all of them when there was none), or `None` when every
/// GPU stopped (the journal or the machine could not be used).
fn earlier_reset(
    ctx: &mut Ctx<'_, '_>,
    with: &mut ResetWith<'_>,
    due: &[Bdf],
    resets: &mut Vec<ResetReport>,
    end: &mut BatchEnd,
) -> Option<Vec<Bdf>> {
    let lock = ctx.shared.lock;
    let Some(target) = ResetTarget::devices(due) else {
        return Some(Vec::new());
    };
    let waited = match wait_out_in_flight(lock, with.clock_or_real()) {
        Err(error) => {
            end.could_not_run(due, &error);
            return None;
        }
        Ok(None) => return Some(due.to_vec()),
        Ok(Some(waited)) => waited,
    };
    for device in due {
        ctx.say(Progress::WaitedForEarlierReset {
            device: *device,
            waited,
        });
    }
    let verified = match run(lock, with, &target, false) {
        Err(error) => {
            end.could_not_run(due, &error);
            return None;
        }
        Ok(verified) => verified,
    };
    let done = matches!(verified.outcome, ResetOutcome::Done);
    resets.push(verified);
    if !done {
        return Some(due.to_vec());
    }
    let reads = ctx.shared.reread(due, "after an earlier reset");
    let mut still = Vec::new();
    for (device, read) in due.iter().zip(reads) {
        match read {
            Ok(reply) if Card::of(&reply).is_ok_and(|c| c.pending.is_none()) => {
                ctx.say(Progress::EarlierResetCompleted { device: *device });
                end.touched.push(*device);
            }
            Ok(_) | Err(_) => still.push(*device),
        }
    }
    Some(still)
}

/// Each GPU of `due` preflighted alone — its group, and the peers it would take with it —:
/// those whose reset may go (the others stop, each with why).
fn each_alone(
    ctx: &Ctx<'_, '_>,
    with: &mut ResetWith<'_>,
    due: &[Bdf],
    in_apply: &[Bdf],
    end: &mut BatchEnd,
) -> Vec<Bdf> {
    let lock = ctx.shared.lock;
    let mut batch = Vec::new();
    for device in due {
        let dry = match run(lock, with, &ResetTarget::device(*device), true) {
            Ok(dry) => dry,
            Err(error) => {
                end.could_not_run(&[*device], &error);
                continue;
            }
        };
        if let ResetOutcome::Blocked(reason) = dry.outcome {
            end.stops
                .push((*device, blocked_stop(lock, *device, reason, &dry.detail)));
            continue;
        }
        if let Some(refusal) = busy_peer(&ctx.shared, *device, &dry.verified, in_apply) {
            end.stops.push((*device, refusal));
            continue;
        }
        batch.push(*device);
    }
    batch
}

/// The reset of `batch`, in one command and one window: how each GPU ends.
fn issue(
    ctx: &mut Ctx<'_, '_>,
    with: &mut ResetWith<'_>,
    batch: &[Bdf],
    resets: &mut Vec<ResetReport>,
    end: &mut BatchEnd,
) {
    let lock = ctx.shared.lock;
    let Some(target) = ResetTarget::devices(batch) else {
        return;
    };
    for device in batch {
        ctx.say(Progress::Resetting { device: *device });
    }
    let done = match run(lock, with, &target, false) {
        Ok(done) => done,
        Err(error) => {
            end.could_not_run(batch, &error);
            return;
        }
    };
    for device in batch {
        ctx.say(Progress::Reset {
            device: *device,
            outcome: done.outcome,
        });
    }
    if done.outcome.reset_issued() {
        end.issued.extend(batch.iter().copied());
    }
    match done.outcome {
        ResetOutcome::Done | ResetOutcome::DryRun => {
            end.touched.extend(done.verified.iter().copied());
        }
        ResetOutcome::Blocked(reason) => {
            end.stop_all(batch, |device| {
                blocked_stop(lock, device, reason, &done.detail)
            });
        }
        ResetOutcome::ColdRebootRequired(reason) => {
            // Where the verification tells the GPUs apart, only those not back need the cold
            // reboot; the others of the group are back and go on.
            let lost: Vec<Bdf> = if done.not_back.is_empty() {
                done.verified.clone()
            } else {
                done.not_back.clone()
            };
            for device in batch.iter().filter(|device| lost.contains(device)) {
                end.stops.push((
                    *device,
                    Stop {
                        outcome: ApplyOutcome::ColdRebootRequired(reason),
                        detail: format!(
                            "{device}: the warm reset did not work ({reason}): {}",
                            done.detail
                        ),
                        failure: None,
                    },
                ));
            }
            end.touched.extend(
                done.verified
                    .iter()
                    .filter(|device| !lost.contains(device))
                    .copied(),
            );
        }
    }
    resets.push(done);
}

/// Why `device` stops when its reset is blocked for `reason`: a reset of this boot that left it
/// needing a cold reboot keeps it so (the host keeps saying a cold reboot is needed, with the
/// reason that reset ended with); any other refusal is `reset_blocked`.
fn blocked_stop(lock: &HostLock, device: Bdf, reason: BlockedReason, detail: &str) -> Stop {
    let earlier = (reason == BlockedReason::ColdRebootPending)
        .then(|| {
            let boot_id = gpu_host_probe::read_boot_id(lock.host().proc_root());
            warm_reset::read_journal(lock.host())
                .ok()?
                .cold_reboots(boot_id.as_deref(), &[device])
                .into_iter()
                .next()
        })
        .flatten();
    match earlier {
        Some(earlier) => Stop {
            outcome: ApplyOutcome::ColdRebootRequired(earlier.reason),
            detail: format!("{device}: {detail}"),
            failure: None,
        },
        None if reason == BlockedReason::GpuNotOurs => {
            Stop::failed(ApplyReason::GpuNotOurs, format!("{device}: {detail}"))
        }
        None => Stop::failed(
            ApplyReason::ResetBlocked,
            format!("{device}: the warm reset is blocked ({reason}): {detail}"),
        ),
    }
}

/// The refusal of `device`'s reset when its group takes an NVLink peer the apply does not name
/// that carries GPU instances (they would be lost), or could not be read. (A peer not ours is
/// warm-reset's to refuse: the run spares it.)
fn busy_peer(shared: &Shared<'_>, device: Bdf, group: &[Bdf], in_apply: &[Bdf]) -> Option<Stop> {
    for peer in group.iter().filter(|peer| !in_apply.contains(peer)) {
        let carries = shared
            .format()
            .ok()
            .and_then(|format| shared.helper.read_reply(shared.lock, *peer, format).ok())
            .and_then(|reply| Card::of(&reply).ok())
            .map(|card| card.instances.len());
        if carries != Some(0) {
            return Some(Stop::failed(
                ApplyReason::ResetBlocked,
                format!(
                    "{device}: its reset also resets its NVLink peer {peer}, which the layout \
                     does not name and which {}; name it in the layout, or empty it first",
                    match carries {
                        Some(count) => format!("carries {count} GPU instance(s)"),
                        None => "could not be read".to_owned(),
                    }
                ),
            ));
        }
    }
    None
}
