//! Completing a mode change the card holds pending: a warm reset of that GPU (with the NVLink
//! peers the nvidia method takes with it) through `warm-reset`, under the apply's host lock —
//! its preflight, window, journal and verification — never a reset of every GPU.
//!
//! Before the reset: a reset still in flight in the journal (a run killed inside its window) is
//! waited out, so the machine verifies it instead of refusing, and two resets never fall inside
//! one window; when that reset completed the mode change, none is issued at all. A dry run
//! names the group, and a peer the layout does not name that carries GPU instances refuses the
//! reset (they would be lost).

use super::phases::{Ctx, Stop};
use crate::report::{ApplyOutcome, ApplyReason};
use gpu_host_probe::HostLock;
use gpu_partition_types::Bdf;
use host_sync::Card;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use warm_reset::{
    Backend, Clock, ExecuteError, MachineConfig, Method, ResetOutcome, ResetReport, ResetRun,
    execute, read_journal,
};

/// How a reset is run: the backend (the nvidia method's), the window, the clock.
pub struct ResetWith<'a> {
    /// The backend.
    pub backend: &'a mut dyn Backend,
    /// The window from the reset to the end of its verification.
    pub window: Duration,
    /// The clock.
    pub clock: Option<&'a dyn Clock>,
}

impl std::fmt::Debug for ResetWith<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResetWith")
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// Waits until a reset the journal records in flight, of this boot, is past its window (at most
/// that window): the machine then verifies it rather than refusing, and issues no second reset
/// inside it.
fn wait_out_in_flight(lock: &HostLock) -> Result<Option<Duration>, ExecuteError> {
    let journal = read_journal(lock.host())?;
    let Some(in_flight) = journal.in_flight else {
        return Ok(None);
    };
    let boot = gpu_host_probe::boot::read_boot_id(lock.host().proc_root());
    if in_flight.boot_id.is_some() && boot.is_some() && in_flight.boot_id != boot {
        return Ok(None);
    }
    let ends = in_flight
        .started_unix_ms
        .saturating_add(in_flight.window_ms);
    let now = now_ms();
    if now >= ends {
        return Ok(None);
    }
    let wait = Duration::from_millis((ends - now).min(in_flight.window_ms) + 50);
    tracing::info!(
        "a reset of {} is in flight; waiting {:.1} s for its window to end",
        in_flight.target.id,
        wait.as_secs_f64()
    );
    std::thread::sleep(wait);
    Ok(Some(wait))
}

/// Runs the nvidia method's machine on `device` under `lock`: a dry run when `dry_run`.
fn run(
    lock: &HostLock,
    with: &mut ResetWith<'_>,
    device: Bdf,
    dry_run: bool,
) -> Result<ResetReport, ExecuteError> {
    let mut config = MachineConfig::new(&device.to_string()).method(Method::Nvidia);
    config.window = with.window;
    config.dry_run = dry_run;
    let mut run = ResetRun::under(&config, lock, &mut *with.backend);
    if let Some(clock) = with.clock {
        run = run.clock(clock);
    }
    execute(run)
}

/// Completes `device`'s pending mode change with a warm reset: an in-flight reset waited out,
/// a dry run naming the group, a peer outside the apply that carries instances refused, then
/// the reset (its report kept in `resets`, however it ended).
pub(super) fn reset_one(
    ctx: &mut Ctx<'_, '_>,
    with: &mut ResetWith<'_>,
    device: Bdf,
    in_apply: &[Bdf],
    resets: &mut Vec<ResetReport>,
) -> Result<ResetReport, Stop> {
    let machine = |error: ExecuteError| {
        Stop::failed(
            ApplyReason::ResetBlocked,
            format!(
                "{device}: the warm reset could not run: {}",
                gpu_host_probe::chain::Chain(&error)
            ),
        )
    };
    if let Some(waited) = wait_out_in_flight(ctx.lock).map_err(machine)? {
        ctx.say(
            device,
            format!(
                "waited {:.1} s for an earlier reset's window to end",
                waited.as_secs_f64()
            ),
        );
        // The machine verifies the earlier reset and closes its record; when that reset (a
        // killed run's) already completed the mode change, there is nothing left to reset.
        let verified = run(ctx.lock, with, device, false).map_err(machine)?;
        let reply = ctx.reread(device, "after an earlier reset")?;
        if matches!(verified.outcome, ResetOutcome::Done)
            && Card::of(&reply).is_ok_and(|card| card.pending.is_none())
        {
            ctx.say(
                device,
                "the earlier reset completed the mode change".to_owned(),
            );
            resets.push(verified.clone());
            return Ok(verified);
        }
    }
    let dry = run(ctx.lock, with, device, true).map_err(machine)?;
    if let ResetOutcome::Blocked(reason) = dry.outcome {
        return Err(Stop::failed(
            ApplyReason::ResetBlocked,
            format!(
                "{device}: the warm reset is blocked ({reason}): {}",
                dry.detail
            ),
        ));
    }
    for peer in dry.verified.iter().filter(|peer| !in_apply.contains(peer)) {
        let carries = ctx
            .helper
            .read_reply(ctx.lock, *peer, ctx.format)
            .ok()
            .and_then(|reply| Card::of(&reply).ok())
            .map(|card| card.instances.len());
        if carries != Some(0) {
            return Err(Stop::failed(
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
    let done = run(ctx.lock, with, device, false).map_err(machine)?;
    ctx.say(device, format!("warm reset: {}", done.outcome));
    resets.push(done.clone());
    match done.outcome {
        ResetOutcome::Done | ResetOutcome::DryRun => Ok(done),
        ResetOutcome::Blocked(reason) => Err(Stop::failed(
            ApplyReason::ResetBlocked,
            format!(
                "{device}: the warm reset is blocked ({reason}): {}",
                done.detail
            ),
        )),
        ResetOutcome::ColdRebootRequired(reason) => Err(Stop {
            outcome: ApplyOutcome::ColdRebootRequired(reason),
            detail: format!(
                "{device}: the warm reset did not work ({reason}): {}",
                done.detail
            ),
        }),
    }
}
