//! An apply once it holds the host lock: the `apply-start` hooks, what decides before any card
//! is read (the pool switch, a layout that names nothing), the helper's `apply` format, the
//! writes ([`super::writes`]), the record of a blocked apply, and the `apply-exit` hooks. Each
//! end of the run gives its [`End`]: none is assumed.

use super::ctx::{Ctx, Shared};
use super::end::{classify, recorded};
use super::hooks::{self, HookEnv, HookPoint, HookRun};
use super::job::Job;
use super::options::ApplyOptions;
use super::progress::Progress;
use super::run::{ApplyError, ApplyRun};
use super::writes::{self, Write};
use crate::report::{ApplyOutcome, ApplyReason, ApplyWarning, Draft, End};
use crate::select::VgpuJob;
use gpu_host_probe::HostLock;
use host_sync::{ApplyEnd, Direction};

/// How the apply ends: a pre-hook that failed blocks it.
pub(super) fn hook_failed(failed: &HookRun) -> End {
    let said = failed.stderr.trim();
    End::blocked(
        ApplyReason::HookFailed,
        if said.is_empty() {
            format!("{failed}; nothing was changed")
        } else {
            format!("{failed} ({said}); nothing was changed")
        },
    )
}

/// How the apply ends: the caller cancelled it before any write.
pub(super) fn cancelled(when: &str) -> End {
    End::blocked(
        ApplyReason::Cancelled,
        format!("the apply was cancelled {when}; nothing was changed"),
    )
}

/// Which way the job goes: into partitioning when some GPU of it has MIG on, is to hold
/// vGPUs, or (an AMD GPU) is to be divided.
fn direction(job: &Job) -> Direction {
    if job
        .wanted
        .iter()
        .any(|w| w.want.enabled || matches!(w.vgpu, Some(VgpuJob::Apply(_))))
        || job.amd.iter().any(|w| w.want.is_divided())
    {
        Direction::Entering
    } else {
        Direction::Leaving
    }
}

/// What ends the apply before any card is read: a failed `apply-start` hook, MIG turned on with
/// the pool off, a layout that names no GPU of this host; `None` when it goes on.
fn before_reading(
    options: &ApplyOptions,
    env: &HookEnv,
    job: &Job,
    draft: &mut Draft,
) -> Option<End> {
    if !options.dry_run {
        if let Some(failed) = hooks::run_point(&options.hooks, HookPoint::ApplyStart, env, draft) {
            return Some(hook_failed(&failed));
        }
    }
    if direction(job) == Direction::Entering && !options.pool.is_enabled() {
        return Some(End::blocked(
            ApplyReason::PoolDisabled,
            "the pool switch is off, and the layout divides a GPU: switch the pool on first",
        ));
    }
    if job.is_empty() {
        let what = if job.boards.is_some() {
            "no GPU the host is declared to have is on it, bound to its vendor's driver"
        } else {
            "the layout names no GPU of this host"
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
fn programs_for_host(
    host: &gpu_host_probe::Host,
    helper: &gpu_host_probe::helper::Helper,
    (vgpu, amd): (&super::vgpu::VgpuWith<'_>, &super::amd::AmdWith<'_>),
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
    let ApplyRun {
        host,
        helper,
        store,
        mut reset,
        mut observe,
        vgpu,
        amd,
    } = run;
    programs_for_host(host, helper, (&vgpu, &amd), &job)?;
    let clock = reset.clock_or_real();
    // Every run of the helper ends when the caller cancels (the closing sync's too); the one read
    // that settles what a batch without an answer did runs without it.
    let reader = &helper.ending_on(options.cancel.as_ref());
    let direction = direction(&job);
    let mut env = hook_env(label, &job);
    let mut progress = |progress: Progress| {
        tracing::debug!("{}: {progress}", progress.device());
        if let Some(observe) = observe.as_mut() {
            observe(&progress);
        }
    };
    // The helper is asked for its format only when the job has an NVIDIA GPU: a host of AMD
    // GPUs alone needs none.
    let negotiated = match before_reading(options, &env, &job, draft) {
        Some(end) => Err(end),
        None if job.wanted.is_empty() => Ok(None),
        None => match reader.negotiate_apply() {
            Err(_) if options.cancelled() => Err(cancelled("before the helper answered")),
            Err(failure) => Err(End::blocked(
                ApplyReason::HelperUnavailable,
                failure.to_string(),
            )),
            Ok(format) => Ok(Some(format)),
        },
    };
    let end = match negotiated {
        Err(end) => end,
        Ok(format) => {
            let mut ctx = Ctx {
                shared: Shared {
                    lock,
                    helper: reader,
                    settle: helper,
                    format,
                    cancel: options.cancel.as_ref(),
                    host,
                    vgpu: &vgpu,
                    clock,
                },
                progress: &mut progress,
            };
            let write = Write {
                label,
                job,
                direction,
                options,
                env: &env,
                amd: &amd,
            };
            writes::go(&mut ctx, store, &mut reset, write, draft)?
        }
    };
    if matches!(end.outcome, ApplyOutcome::Blocked(_)) && draft.host.is_none() {
        // A blocked apply is recorded too (for monitoring), and the host classified.
        let record = host_sync::start_apply(lock, store, label, direction)?;
        let blocked = ApplyEnd::new(recorded(end.outcome), end.detail.clone(), false);
        host_sync::end_apply(lock, store, record, blocked)?;
        draft.host = Some(classify(lock, reader, store, options)?);
    }
    if !options.dry_run {
        env.outcome = Some(end.outcome);
        exit_hooks(options, &env, draft);
    }
    Ok(end)
}

/// What every hook of the apply of `label` over `job` is told.
fn hook_env(label: &str, job: &Job) -> HookEnv {
    HookEnv {
        label: label.to_owned(),
        devices: job
            .wanted
            .iter()
            .map(|w| w.gpu.bdf)
            .chain(job.amd.iter().map(|w| w.gpu.bdf))
            .map(|bdf| bdf.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        outcome: None,
    }
}

/// The `apply-exit` hooks, once the apply is over (one that fails is a warning).
fn exit_hooks(options: &ApplyOptions, env: &HookEnv, draft: &mut Draft) {
    if let Some(failed) = hooks::run_point(&options.hooks, HookPoint::ApplyExit, env, draft) {
        draft.warnings.push(ApplyWarning::ExitHookFailed(failed));
    }
}
