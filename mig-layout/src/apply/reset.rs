//! Completing a mode change the card holds pending: a warm reset of that GPU (with the NVLink
//! peers the nvidia method takes with it) through `warm-reset`, under the apply's host lock —
//! its preflight, window, journal and verification — never a reset of every GPU.
//!
//! Before the reset: a reset still in flight in the journal (a run killed inside its window) is
//! waited out on the apply's clock — warm-reset says how long its window has left
//! ([`warm_reset::window_left`]) — so the machine verifies it instead of refusing, and two
//! resets never fall inside one window; when that reset completed the mode change, none is
//! issued at all. A dry run
//! names the group, and a peer the layout does not name that carries GPU instances refuses the
//! reset (they would be lost).

use super::Progress;
use super::ctx::{Ctx, Stop};
use crate::report::{ApplyOutcome, ApplyReason};
use gpu_host_probe::HostLock;
use gpu_partition_types::Bdf;
use host_sync::Card;
use std::time::Duration;
use warm_reset::{
    Backend, Clock, ExecuteError, MachineConfig, Method, ResetOutcome, ResetReport, ResetRun,
    SystemClock, execute, window_left,
};

/// How a reset is run: the backend (the nvidia method's), the window, the clock.
pub struct ResetWith<'a> {
    /// The backend.
    pub backend: &'a mut dyn Backend,
    /// The window from the reset to the end of its verification.
    pub window: Duration,
    /// The clock the apply runs on: its resets, the wait for an earlier reset's window, its
    /// elapsed time (`None`: the real one).
    pub clock: Option<&'a dyn Clock>,
}

impl<'a> ResetWith<'a> {
    /// The apply's clock.
    pub(super) fn clock(&self) -> &'a dyn Clock {
        self.clock.unwrap_or(&*SYSTEM)
    }
}

/// The real clock, for an apply given none.
static SYSTEM: std::sync::LazyLock<SystemClock> = std::sync::LazyLock::new(SystemClock::new);

impl std::fmt::Debug for ResetWith<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResetWith")
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

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
    let clock = with.clock.unwrap_or(&*SYSTEM);
    execute(ResetRun::under(&config, lock, &mut *with.backend).clock(clock))
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
    if let Some(waited) = wait_out_in_flight(ctx.lock, with.clock()).map_err(machine)? {
        ctx.say(Progress::WaitedForEarlierReset { device, waited });
        // The machine verifies the earlier reset and closes its record; when that reset (a
        // killed run's) already completed the mode change, there is nothing left to reset.
        let verified = run(ctx.lock, with, device, false).map_err(machine)?;
        let reply = ctx.reread(device, "after an earlier reset")?;
        if matches!(verified.outcome, ResetOutcome::Done)
            && Card::of(&reply).is_ok_and(|card| card.pending.is_none())
        {
            ctx.say(Progress::EarlierResetCompleted { device });
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
    ctx.say(Progress::Reset {
        device,
        outcome: done.outcome,
    });
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
