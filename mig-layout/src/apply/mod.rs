//! The executor: a layout applied under the host lock, GPU by GPU, by diff — and what the host
//! is declared to be, kept and restored.
//!
//! 1. Under the host lock (not waited for by default: held by another GPU operation, the apply
//!    is blocked `lock_busy`), the `apply-start` hooks run, the layout is resolved against the
//!    host's GPUs and every GPU it names is read and planned. Before anything is written, a
//!    plan is refused — for the whole apply — when it cannot be made (`layout_impossible`,
//!    naming the GPU and profile), when the card has processes or a vGPU sits on an instance
//!    to destroy (`gpu_busy`, naming them), when a card does not read (`gpu_unreadable`), or
//!    (a restore) when a declared slot holds a card of another model (`card_changed`).
//! 2. The `pre-apply-mode` hooks run when a mode changes, the `pre-apply-config` hooks when
//!    instances are destroyed or created; one that fails blocks the apply (`hook_failed`).
//! 3. The host is written `entering` (or `leaving`) with `layout_applying`, and the apply is
//!    recorded as running.
//! 4. Each GPU's destroys and mode change run as one batch of the helper's `apply`.
//! 5. A mode change the card holds pending is completed by a warm reset of that GPU (and its
//!    NVLink peers) through `warm-reset`.
//! 6. Each GPU is planned again from what it now says (only creates may remain); its GPU
//!    instances are created at the plan's placements, then their compute instances.
//! 7. The read-back must equal the layout (GPU instances, compute instances, placements);
//!    anything else is `failed` with the difference.
//! 8. The apply is recorded as it ended, with what the host is now declared to be (each GPU
//!    it named, its mode and its instances where the plan placed them, the board), and a sync
//!    classifies the host under the same lock: `active (ready)` when the layout holds with the
//!    pool on; `entering (layout_failed)` with the message while a failure is unhealed.
//! 9. The `apply-exit` hooks run, with the outcome.
//!
//! [`restore()`] runs the same executor on the declaration: zero steps when the cards hold it.
//!
//! Every helper run has a deadline (the helper's, and for a batch one more per step). Since
//! every plan is a diff of what the card says now, a crash at any point leaves a host a second
//! run brings to the layout.

pub(crate) mod amd;
mod busy;
mod ctx;
mod end;
mod gpu;
mod hook_run;
mod hooks;
mod job;
mod locked;
mod nvidia;
mod options;
pub(crate) mod partition;
mod phases;
mod preflight;
mod progress;
mod reset;
mod run;
mod side;
pub(crate) mod vgpu;
mod with;
mod writes;

pub use hook_run::{HOOK_DEADLINE, HookPoint, HookRun, Hooks};
pub(crate) use job::{resolve, resolve_vgpu};

pub use gpu::STEP_DEADLINE;
pub(crate) use job::resolve_amd;
pub use options::ApplyOptions;
pub use progress::{ApplyObserver, Progress};
pub use run::{ApplyError, ApplyRun};
pub use with::AmdWith;
pub use with::VgpuWith;

use crate::document::Spec;
use crate::report::{ApplyReport, Draft};
use host_sync::{BootRestore, BootRestoreStart, StateLost};
use job::{declared_job, take_lock};
use locked::run_locked;

/// Applies the layout `specs` (the label `label` of a document) as `options` say.
///
/// It blocks at worst for: `options.lock_wait`; each hook's deadline
/// ([`Hooks::deadline`], [`HOOK_DEADLINE`] by default); the helper's `--version` deadline and
/// one read deadline per GPU (the preflight); per GPU two batches of steps, each the helper's
/// deadline plus [`STEP_DEADLINE`] per step; per GPU whose mode change waits for a reset, an
/// earlier reset's window still open (at most [`warm_reset::ResetWith::window`]) and its own
/// reset's window; a read of each GPU after its reset; and the closing sync (as
/// [`host_sync::sync_under`]). [`ApplyOptions::cancel`] ends it at the next check — while it
/// waits for the lock, between GPUs, between batches, within the runner's check interval
/// (10 ms) plus the helper's kill grace for a run in progress — but never inside a reset's
/// window.
pub fn apply(
    run: ApplyRun<'_>,
    label: &str,
    specs: &[Spec],
    options: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply_wanted(run, label, options, |host, _, draft| {
        resolve(host, label, specs, options, draft).map(job::Job::nvidia)
    })
}

/// An apply of what `wanted` resolves under the host lock, labelled `label`: the one shape of
/// [`apply()`], [`apply_vgpu`], [`leave_vgpu`] and [`apply_amd`].
fn apply_wanted(
    run: ApplyRun<'_>,
    label: &str,
    options: &ApplyOptions,
    wanted: impl FnOnce(
        &gpu_host_probe::Host,
        &mut dyn host_sync::StateStore,
        &mut Draft,
    ) -> Result<job::Job, ApplyError>,
) -> Result<ApplyReport, ApplyError> {
    let clock = run.reset.clock_or_real();
    let started = clock.now();
    let mut draft = Draft::new(label);
    let end = match take_lock(run.host, options)? {
        Err(end) => end,
        Ok(lock) => {
            let job = wanted(run.host, &mut *run.store, &mut draft)?;
            // Under the lock: the owned instances the declaration keeps now.
            let declared = run.store.load()?.and_then(|state| state.declared);
            let job = job.owned_by(declared.as_ref());
            run_locked(run, &lock, label, job, options, &mut draft)?
        }
    };
    Ok(draft.finish(end, clock.now().saturating_sub(started)))
}

/// Applies the vGPU config `specs` (the config `label` of a vgpu-device-manager document) as
/// `options` say, by the same executor as [`apply()`]: per GPU, in the order the driver forces
/// — MIG mode, `sriov-manage -e` (which wipes every GPU instance), the GPU instances the
/// vGPUs need (sized by the card's catalogue), a vGPU type on each VF — each write read back,
/// and nothing written when the cards hold the config. Refused before any write: a type the
/// card cannot create, more vGPUs than it has VFs, a VF in use by a VM (its VFIO group held).
/// It blocks at worst as [`apply()`] does, plus per GPU at most two runs of `sriov-manage` with
/// their retries ([`crate::vgpu::SriovManage`]).
pub fn apply_vgpu(
    run: ApplyRun<'_>,
    label: &str,
    specs: &[crate::vgpu::VgpuSpec],
    options: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply_wanted(run, label, options, |host, _, draft| {
        job::resolve_vgpu(host, label, specs, options, draft).map(job::Job::nvidia)
    })
}

/// Leaves vGPU on every NVIDIA GPU bound to `nvidia` (of [`ApplyOptions::devices`]), in the
/// order the sources measured: `sriov-manage -d` first (it takes the GPU instances with the
/// VFs), then what instances remain, then MIG off (the driver refuses it while VFs exist).
/// Refused before any write while a VM uses a VF.
pub fn leave_vgpu(run: ApplyRun<'_>, options: &ApplyOptions) -> Result<ApplyReport, ApplyError> {
    apply_wanted(run, LEAVE, options, |host, _, draft| {
        job::resolve_vgpu_leave(host, LEAVE, options, draft).map(job::Job::nvidia)
    })
}

/// Applies the Device Config Manager profile `profile` (named `label`) to the host's AMD GPUs
/// as `options` say, by the same executor as [`apply()`]: each GPU the profile does not skip
/// (by ID: its position among the host's AMD GPUs bound to `amdgpu`, in PCI address order) is
/// brought to its compute and memory partitions — the memory partitions requested (each
/// recorded as waiting), one driver reload for the whole host, then the compute partitions —,
/// read back, and declared; nothing is written when they hold. Refused before any write: a
/// profile DCM's rules refuse on this host ([`ApplyError::Profile`], every fault named); a mode
/// a GPU does not offer or a pair the kernel refuses (`layout_impossible`, naming the rule), a
/// hive asked for two memory partitions or with a member the profile leaves out, a process
/// holding a GPU or a client service running (`gpu_busy`, naming it). The services are
/// [`AmdWith::client_services`] ([`ApplyRun::amd`]). It blocks at worst as [`apply()`] does for
/// the lock and the hooks, plus two runs of `modprobe` ([`gpu_host_probe::amdgpu::Modprobe::deadline`]) and
/// the wait for the GPUs after them ([`AmdWith::reload_wait`]).
pub fn apply_amd(
    run: ApplyRun<'_>,
    label: &str,
    profile: &crate::amd::DcmProfile,
    options: &ApplyOptions,
) -> Result<ApplyReport, ApplyError> {
    apply_wanted(run, label, options, |host, _, _| {
        Ok(job::Job::amd(job::resolve_amd(
            host, label, profile, options,
        )?))
    })
}

/// How a restore went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restore {
    /// Nothing is declared on this host (no apply or leave has written): nothing was done.
    NothingDeclared,
    /// The stored state did not read and was kept aside: what the host was declared to be is not
    /// known, and nothing was done (a boot restore must fail so, not report that nothing was
    /// ever declared).
    StateLost(StateLost),
    /// A boot restore already ran in this boot ([`ApplyOptions::once_per_boot`]): nothing was
    /// done.
    AlreadyRanThisBoot(BootRestore),
    /// The declaration was applied by diff (zero steps when the cards hold it), recorded as an
    /// apply of its label; or the lock was held (`blocked (lock_busy)`, labelled `restore`).
    Ran(Box<ApplyReport>),
}

/// Brings the host back to what it is declared to be ([`layout_model::Declaration`]): the same
/// executor as [`apply()`], over each declared GPU at its declared placements; a card of
/// another model in a declared slot blocks before any write (`card_changed`), another board of
/// the same model is restored with a warning, and a declared GPU not on the host (or not bound
/// to its vendor's driver, `nvidia` or `amdgpu`) is left alone with a warning. A declared AMD
/// GPU is brought back to its compute and memory partitions by the AMD side of the executor
/// ([`apply_amd`]'s steps, [`ApplyRun::amd`]). What a toolstack runs at start, after its
/// database sync, on its own thread (the package's boot unit runs `mxctl partition restore
/// --at-boot`, [`ApplyOptions::once_per_boot`]). The state is read under the host lock only.
pub fn restore(run: ApplyRun<'_>, options: &ApplyOptions) -> Result<Restore, ApplyError> {
    let clock = run.reset.clock_or_real();
    let started = clock.now();
    // The declaration is read under the lock: held by another operation, the report says so
    // under the name of a restore.
    let lock = match take_lock(run.host, options)? {
        Ok(lock) => lock,
        Err(end) => {
            let elapsed = clock.now().saturating_sub(started);
            return Ok(Restore::Ran(Box::new(
                Draft::new("restore").finish(end, elapsed),
            )));
        }
    };
    let state = run.store.load()?.unwrap_or_default();
    let not_ours = state.not_ours();
    let Some(declared) = state.declared else {
        return Ok(match state.lost {
            Some(lost) => Restore::StateLost(lost),
            None => Restore::NothingDeclared,
        });
    };
    // The job first: a restore the caller asked wrongly (a --device not declared, the machine's
    // own programs on a host built over a test tree) is refused before it counts as the boot's
    // one.
    let mut draft = Draft::new(&declared.label);
    let job = declared_job(run.host, &declared, options, &mut draft)?;
    locked::programs_for_host(run.host, run.helper, (&run.vgpu, &run.amd), &job)?;
    // A GPU not ours the caller named refuses it, before it counts as the boot's one.
    if let Some(not) = job.names_not_ours(&not_ours, &options.devices) {
        let elapsed = clock.now().saturating_sub(started);
        return Ok(Restore::Ran(Box::new(draft.finish(not.blocked(), elapsed))));
    }
    if options.once_per_boot && !options.dry_run {
        if let BootRestoreStart::AlreadyRan(earlier) =
            host_sync::begin_boot_restore(&lock, run.store, clock, &run.host.boot())?
        {
            return Ok(Restore::AlreadyRanThisBoot(earlier));
        }
    }
    let end = run_locked(run, &lock, &declared.label, job, options, &mut draft)?;
    drop(lock);
    let elapsed = clock.now().saturating_sub(started);
    Ok(Restore::Ran(Box::new(draft.finish(end, elapsed))))
}

/// Leaves MIG on the host's NVIDIA GPUs: MIG off on every NVIDIA GPU bound to `nvidia` (of
/// `options.devices`, when given), by [`apply()`]'s executor, labelled `leave` and declared so.
/// A vGPU host leaves by [`leave_vgpu`] (its VFs first), an AMD host by [`leave_amd`].
pub fn leave(run: ApplyRun<'_>, options: &ApplyOptions) -> Result<ApplyReport, ApplyError> {
    apply(run, LEAVE, &job::leave_specs(), options)
}

/// The label of every leave's apply and declaration.
const LEAVE: &str = "leave";

/// Leaves partitioning on the host's AMD GPUs: every AMD GPU bound to `amdgpu` that shows
/// partition files (of `options.devices`, when given) brought to one undivided GPU, SPX with
/// NPS1 ([`AmdWant::UNDIVIDED`](layout_model::amd::AmdWant::UNDIVIDED)), by [`apply_amd`]'s
/// executor and with its refusals (a hive is left whole), labelled `leave` and declared so.
pub fn leave_amd(run: ApplyRun<'_>, options: &ApplyOptions) -> Result<ApplyReport, ApplyError> {
    apply_wanted(run, LEAVE, options, |host, store, _| {
        Ok(job::Job::amd(job::resolve_amd_leave(
            host, store, LEAVE, options,
        )?))
    })
}
