//! An apply once it holds the host lock: the `apply-start` hooks, what decides before any card
//! is read (the pool switch, a layout that names nothing), the helper's `apply` format, the
//! writes ([`super::writes`]), the record of a blocked apply, and the `apply-exit` hooks. Each
//! end of the run gives its [`End`]: none is assumed.

use super::ctx::{Ctx, Shared};
use super::end::{classify, hook_failed, recorded};
use super::hook_run::HookPoint;
use super::hooks::{self, HookEnv};
use super::job::Job;
use super::options::ApplyOptions;
use super::progress::Progress;
use super::run::{ApplyError, ApplyRun};
use super::side::Side;
use super::writes::{self, Write};
use crate::report::{ApplyOutcome, ApplyReason, ApplyWarning, Draft, End};
use gpu_host_probe::HostLock;
use gpu_partition_types::Bdf;
use host_sync::{ApplyEnd, Direction};

/// Which way the sides go: into partitioning when a side divides a GPU (MIG on, vGPUs, an AMD
/// GPU divided).
fn direction(sides: &[Box<dyn Side + '_>]) -> Direction {
    if sides.iter().any(|side| side.divides()) {
        Direction::Entering
    } else {
        Direction::Leaving
    }
}

/// What ends the apply before any card is read: a failed `apply-start` hook, a GPU divided with
/// the pool off, a layout that names no GPU of this host (or only GPUs not ours, `left_out`);
/// `None` when it goes on.
fn before_reading(
    options: &ApplyOptions,
    env: &HookEnv,
    (sides, restore, left_out): (&[Box<dyn Side + '_>], bool, &[Bdf]),
    draft: &mut Draft,
) -> Option<End> {
    if !options.dry_run {
        if let Some(failed) = hooks::run_point(&options.hooks, HookPoint::ApplyStart, env, draft) {
            return Some(hook_failed(&failed));
        }
    }
    if direction(sides) == Direction::Entering && !options.pool.is_enabled() {
        return Some(End::blocked(
            ApplyReason::PoolDisabled,
            "the pool switch is off, and the layout divides a GPU: switch the pool on first",
        ));
    }
    if sides.iter().all(|side| side.devices().is_empty()) {
        let what = match (left_out, restore) {
            ([], true) => {
                "no GPU the host is declared to have is on it, bound to its vendor's driver"
                    .to_owned()
            }
            ([], false) => "the layout names no GPU of this host".to_owned(),
            (left_out, _) => format!(
                "every GPU it names is not ours ({}: their ownership is another agent's)",
                left_out
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return Some(End::new(
            ApplyOutcome::NothingNamed,
            Some(format!("{what}: nothing was read or written")),
        ));
    }
    None
}

/// Every program of the machine's own (at its installed path) that a side of `job` would run,
/// refused on a host whose roots are not the machine's, before anything is read or written:
/// the helper (an NVIDIA GPU), `sriov-manage` (a vGPU job), `modprobe` (an AMD GPU written by
/// the kernel's files). A side given a writer of its own (a fake for its tree) needs none.
pub(super) fn programs_for_host(
    host: &gpu_host_probe::Host,
    helper: &gpu_host_probe::helper::Helper,
    (vgpu, amd): (&super::with::VgpuWith<'_>, &super::with::AmdWith<'_>),
    job: &Job,
) -> Result<(), ApplyError> {
    let mut programs = Vec::new();
    if !job.wanted.is_empty() {
        programs.push(&helper.config().program);
    }
    if job.wanted.iter().any(|w| w.vgpu.is_some()) {
        programs.push(&vgpu.sriov_manage.program);
    }
    if !job.amd.is_empty() && amd.writes.is_none() {
        programs.push(&amd.modprobe.program);
    }
    programs
        .into_iter()
        .try_for_each(|program| program.allowed_on(host))
        .map_err(ApplyError::NotThisHosts)
}

/// An apply under `lock`, labelled `label`: everything after the lock is taken.
pub(super) fn run_locked(
    run: ApplyRun<'_>,
    lock: &HostLock,
    label: &str,
    job: Job,
    options: &ApplyOptions,
    draft: &mut Draft,
) -> Result<End, ApplyError> {
    run_locked_keeping(run, lock, label, job, options, draft).map(|(end, _)| end)
}

/// [`run_locked`], giving the store back for what the caller reads after (one partition's row).
pub(super) fn run_locked_keeping<'a>(
    run: ApplyRun<'a>,
    lock: &HostLock,
    label: &str,
    job: Job,
    options: &ApplyOptions,
    draft: &mut Draft,
) -> Result<(End, &'a mut dyn host_sync::StateStore), ApplyError> {
    let ApplyRun {
        host,
        helper,
        store,
        mut reset,
        mut observe,
        vgpu,
        amd,
    } = run;
    // Who owns each GPU, as stored now (under the lock): a GPU not ours is left out, or, named
    // by the caller, refuses the apply before anything is read or written.
    let owned_by = store
        .load()?
        .map(|state| state.not_ours())
        .unwrap_or_default();
    let mut left_out = Vec::new();
    let (job, not_ours) = match job.names_not_ours(&owned_by, &options.devices) {
        // Refused: the job is kept whole (the record says which way it went), and nothing of
        // it runs.
        Some(not) => (job, Some(not.blocked())),
        None => {
            let (job, left) = job.ours(&owned_by);
            left_out.extend(left.iter().map(|not| not.device));
            draft
                .warnings
                .extend(left.into_iter().map(|not| ApplyWarning::NotOurs {
                    device: not.device,
                    ownership: not.ownership,
                }));
            (job, None)
        }
    };
    programs_for_host(host, helper, (&vgpu, &amd), &job)?;
    // Every reset of the apply spares the GPUs not ours (warm-reset blocks a group that takes
    // one), whatever the caller's `ResetWith` said.
    reset
        .not_ours
        .extend(owned_by.iter().map(|(device, owner)| (*device, *owner)));
    let clock = reset.clock_or_real();
    // Every run of the helper ends when the caller cancels (the closing sync's too); the one read
    // that settles what a batch without an answer did runs without it.
    let reader = &helper.ending_on(options.cancel.as_ref());
    let restore = job.boards.is_some();
    let declares = job.declares;
    let sides = job.sides(options, &amd);
    let direction = direction(&sides);
    let mut env = HookEnv {
        label: label.to_owned(),
        devices: sides
            .iter()
            .flat_map(|side| side.devices())
            .map(|bdf| bdf.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        outcome: None,
    };
    let mut progress = |progress: Progress| {
        tracing::debug!("{}: {progress}", progress.device());
        if let Some(observe) = observe.as_mut() {
            observe(&progress);
        }
    };
    let end = match not_ours
        .or_else(|| before_reading(options, &env, (&sides, restore, &left_out), draft))
    {
        Some(end) => end,
        None => {
            let mut ctx = Ctx {
                shared: Shared {
                    lock,
                    helper: reader,
                    settle: helper,
                    format: None,
                    cancel: options.cancel.as_ref(),
                    host,
                    vgpu: &vgpu,
                    clock,
                    not_ours: &owned_by,
                },
                progress: &mut progress,
            };
            let write = Write {
                label,
                direction,
                options,
                env: &env,
                declares,
            };
            writes::go(&mut ctx, store, &mut reset, write, sides, draft)?
        }
    };
    if matches!(end.outcome, ApplyOutcome::Blocked(_)) && draft.host.is_none() {
        // A blocked apply is recorded too (for monitoring), and the host classified.
        let record = host_sync::start_apply(lock, store, clock, label, direction)?;
        let blocked = ApplyEnd::new(recorded(end.outcome), end.detail.clone(), false);
        host_sync::end_apply(lock, store, clock, record, blocked)?;
        draft.host = Some(classify(lock, reader, store, clock, options)?);
    }
    if !options.dry_run {
        env.outcome = Some(end.outcome);
        exit_hooks(options, &env, draft);
    }
    Ok((end, store))
}

/// The `apply-exit` hooks, once the apply is over (one that fails is a warning).
fn exit_hooks(options: &ApplyOptions, env: &HookEnv, draft: &mut Draft) {
    if let Some(failed) = hooks::run_point(&options.hooks, HookPoint::ApplyExit, env, draft) {
        draft.warnings.push(ApplyWarning::ExitHookFailed(failed));
    }
}
