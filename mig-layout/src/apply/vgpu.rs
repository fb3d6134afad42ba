//! The vGPU layer of an apply, built into the MIG executor's phases so both share one lock, one
//! preflight, one record and one report. Per GPU, in the order the driver forces
//! ([`crate::vgpu::plan_vgpu`]):
//!
//! 1. the preflight reads the card's catalogue (the helper's reply), its SR-IOV state and who
//!    holds its VFs' VFIO groups, and plans; the MIG layout the vGPUs need becomes the GPU's
//!    `want`, so the MIG executor diffs it (zero writes where it holds);
//! 2. before the GPU's first batch: `sriov-manage -d` where the VFs must go (a MIG mode change
//!    under them, a leave), the card read again and its MIG plan made anew;
//! 3. the MIG destroys and mode, the resets (the MIG executor);
//! 4. before the creates: `sriov-manage -e` where the VFs must come (it wipes every GPU
//!    instance, so the instances are planned after it), the card read again;
//! 5. the GPU instances (the MIG executor, re-planned from the card as it is now);
//! 6. the type writes, each read back, then every VF read back against the spec; the types that
//!    go were cleared first, in step 2, as the GPU instances they sit on may go in step 3.

use super::Progress;
use super::ctx::{Shared, Stop};
use super::gpu::{Gpu, GpuVgpu, run_batch};
use crate::document::vgpu::{VgpuSpec, find_in};
use crate::plan::{Impossible, plan};
use crate::report::ApplyReason;
use crate::report::WriteFailure;
use crate::select::{HostGpu, VgpuJob, want_of};
use crate::vgpu::{
    RunEnd, SriovManageError, SriovManageOn, TypeWriteError, VfTypeFile, VfsWanted, VgpuCard,
    VgpuRefusal, VgpuStep, plan_vgpu, plan_vgpu_leave, plan_vgpu_on_vfs, write_vgpu_type,
};
use crate::vgpu_plan::assigned;
use gpu_host_probe::Host;
use gpu_host_probe::chain::Chain;
use gpu_partition_types::VgpuTypeId;
use gpu_partition_types::{Bdf, Reply, Step, VgpuType};
use host_sync::sriov::read_sriov;
use layout_model::VfsRead;
use layout_model::{Card, DeclaredVgpu, Unnamed, VgpuDeclared, Want};

/// What the preflight decided of a GPU's vGPU side.
pub(super) struct Planned {
    /// The MIG layout its vGPUs need.
    pub want: Want,
    /// The rest.
    pub vgpu: GpuVgpu,
}

/// The vGPUs `spec` asks of a card of `catalogue`, by count: what an assert of a config (which
/// names no VF) compares the VFs with. Per type ID (two names of one type add up), with the
/// config's name and count; a type the catalogue does not list is left out (the assert says so
/// before this is asked).
pub(crate) fn counted(spec: &VgpuSpec, catalogue: &[VgpuType]) -> VgpuDeclared {
    let mut types: Vec<DeclaredVgpu> = Vec::new();
    for (name, count) in &spec.vgpu_devices {
        let Some(id) = find_in(catalogue, name).and_then(|kind| VgpuTypeId::new(kind.id)) else {
            continue;
        };
        match types.iter_mut().find(|vgpu| vgpu.type_id == id) {
            Some(vgpu) => vgpu.count += *count,
            None => types.push(DeclaredVgpu::new(id, name.to_string(), *count)),
        }
    }
    VgpuDeclared::Counted {
        types,
        heterogeneous: spec.heterogeneous,
    }
}

/// The card's vGPU type catalogue, as its reply gives it (`None`: it, or one of its types, did
/// not read).
pub(crate) fn catalogue(reply: &Reply) -> Option<Vec<VgpuType>> {
    let listed = reply.vgpu_types.read()?;
    listed
        .iter()
        .map(|kind| kind.read().cloned())
        .collect::<Option<Vec<VgpuType>>>()
}

/// Why a GPU's vGPU side may not write: the reason, what for people, and the impossible layout
/// as data where one refused it.
pub(super) type Refused = (ApplyReason, String, Option<Impossible>);

/// The preflight of one GPU's vGPU side: its plan, or why the apply may not write.
pub(super) fn preflight(
    host: &Host,
    gpu: &HostGpu,
    job: &VgpuJob,
    reply: &Reply,
    unnamed: Unnamed,
) -> Result<Planned, Refused> {
    let unreadable = |what: String| (ApplyReason::GpuUnreadable, format!("{gpu}: {what}"), None);
    let card = Card::of(reply).map_err(|error| unreadable(error.to_string()))?;
    let sriov = read_sriov(host.sysfs_root(), gpu.bdf)
        .map_err(|error| unreadable(Chain(&error).to_string()))?;
    let Some(sriov) = sriov else {
        return match job {
            VgpuJob::Leave => Ok(Planned {
                want: Want::disabled(),
                vgpu: GpuVgpu {
                    declare: Some(VgpuDeclared::Off),
                    ..GpuVgpu::default()
                },
            }),
            VgpuJob::Apply(_) | VgpuJob::Restore { .. } => {
                let refusal = VgpuRefusal::NotAVgpuHost {
                    device: gpu.bdf,
                    missing: crate::vgpu::Missing::Sriov,
                };
                Err((
                    ApplyReason::LayoutImpossible,
                    format!("{gpu}: {}", crate::vgpu::Missing::Sriov),
                    refusal.impossible(),
                ))
            }
        };
    };
    let files: Vec<std::path::PathBuf> = sriov
        .vfs
        .iter()
        .filter_map(|vf| vf.vfio_group_file())
        .collect();
    let holders = if files.is_empty() {
        Vec::new()
    } else {
        gpu_host_probe::holders(host.proc_root(), &files).map_err(|error| {
            unreadable(format!(
                "who holds its virtual functions' VFIO groups cannot be told: {}",
                Chain(&error)
            ))
        })?
    };
    let catalogue = match job {
        VgpuJob::Apply(_) | VgpuJob::Restore { .. } => catalogue(reply)
            .ok_or_else(|| unreadable("its vGPU type catalogue did not read".to_owned()))?,
        VgpuJob::Leave => Vec::new(),
    };
    let heterogeneous = reply
        .vgpu_mode
        .read()
        .and_then(|mode| mode.heterogeneous.as_option().copied());
    let card = VgpuCard {
        device: gpu.bdf,
        mig_enabled: card.current,
        heterogeneous,
        sriov: &sriov,
        catalogue: &catalogue,
        holders: &holders,
    };
    let steps = match job {
        VgpuJob::Apply(spec) => plan_vgpu(spec, &card),
        VgpuJob::Restore { spec, vfs } => plan_vgpu_on_vfs(spec, vfs, &card),
        VgpuJob::Leave => plan_vgpu_leave(&card),
    }
    .map_err(|refusal| {
        let reason = match refusal {
            VgpuRefusal::InUse { .. } => ApplyReason::GpuBusy,
            _ => ApplyReason::LayoutImpossible,
        };
        (reason, format!("{gpu}: {refusal}"), refusal.impossible())
    })?;
    let want = steps
        .iter()
        .find_map(|step| match step {
            VgpuStep::GpuInstances(layout) => Some(want_of(layout)),
            _ => None,
        })
        .unwrap_or_else(Want::disabled)
        .unnamed(unnamed);
    let declare = match job {
        VgpuJob::Apply(spec) | VgpuJob::Restore { spec, .. } => {
            VgpuDeclared::on(assigned(&card, &steps), spec.heterogeneous)
        }
        VgpuJob::Leave => VgpuDeclared::Off,
    };
    Ok(Planned {
        want,
        vgpu: GpuVgpu {
            steps,
            declare: Some(declare),
        },
    })
}

/// Runs `sriov-manage` on the GPU as `wanted`, and reads the card again.
fn set_vfs(
    shared: &Shared<'_>,
    say: &dyn Fn(Progress),
    gpu: &mut Gpu,
    step: VgpuStep,
    wanted: VfsWanted,
) -> Result<(), Stop> {
    let device = gpu.report.device;
    shared.go_on(&format!("sriov-manage {} on {device}", wanted.flag()))?;
    // Recorded before the run: the card may be written from here on.
    gpu.wrote = true;
    let on = SriovManageOn {
        lock: shared.lock,
        sysfs_root: shared.host.sysfs_root(),
        clock: shared.clock,
        cancel: shared.cancel,
    };
    shared
        .vgpu
        .sriov_manage
        .set_vfs(on, device, wanted)
        .map_err(|error| {
            sriov_manage_stop(device, shared.vgpu.sriov_manage.program.name(), &error)
        })?;
    gpu.work.vgpu_done.push(step.clone());
    say(Progress::Vgpu { device, step });
    let mut read = shared.reread(&[device], &format!("after sriov-manage {}", wanted.flag()));
    gpu.reply = read.pop().unwrap_or_else(|| {
        Err(Stop::failed(
            ApplyReason::GpuUnreadable,
            format!("{device}: no read after sriov-manage"),
        ))
    })?;
    Ok(())
}

/// How a GPU stops when `sriov-manage` did not leave its VFs as asked: its typed end (the last
/// run's, with what it said, or the VFs it left), else why it was not run.
fn sriov_manage_stop(device: Bdf, name: &'static str, error: &SriovManageError) -> Stop {
    let failure = match error {
        SriovManageError::Failed {
            program,
            wanted,
            last,
            ..
        } => Some(match last {
            RunEnd::Ran { result, stderr } => WriteFailure::Program {
                program: name,
                command: format!("{} {} {device}", program.display(), wanted.flag()),
                end: result.clone(),
                stderr: stderr.clone(),
            },
            RunEnd::Exited0 { numvfs, total } => WriteFailure::VfsNotAsAsked {
                numvfs: *numvfs,
                total: *total,
            },
        }),
        _ => None,
    };
    let mut stop = Stop::failed(ApplyReason::StepRefused, Chain(error).to_string());
    stop.failure = failure.map(Box::new);
    stop
}

/// How a GPU stops when a VF's type write did not take: the kernel's errno where the driver
/// refused it, else why.
fn type_write_stop(shared: &Shared<'_>, error: &TypeWriteError) -> Stop {
    let mut stop = Stop::failed(ApplyReason::StepRefused, Chain(error).to_string());
    if let TypeWriteError::Refused { file, source, .. } = error {
        stop.failure = Some(Box::new(WriteFailure::kernel(
            file.path(shared.host.sysfs_root()),
            source,
        )));
    }
    stop
}

/// Before the GPU's first batch: the types that go cleared, the VFs disabled where the plan
/// says, and the MIG plan made anew from the card as `sriov-manage -d` left it.
pub(super) fn before_first_batch(
    shared: &Shared<'_>,
    say: &dyn Fn(Progress),
    gpu: &mut Gpu,
) -> Result<(), Stop> {
    // The types that go, cleared before any GPU instance is destroyed (the driver keeps a
    // GPU instance a vGPU sits on); a plan that clears keeps its VFs.
    type_writes(shared, say, gpu, |step| {
        matches!(step, VgpuStep::ClearType { .. })
    })?;
    if !gpu.vgpu.has(&VgpuStep::DisableVfs) {
        return Ok(());
    }
    set_vfs(shared, say, gpu, VgpuStep::DisableVfs, VfsWanted::Disabled)?;
    let planned = plan(&gpu.reply, &gpu.wanted.want)
        .map_err(|impossible| Stop::failed(ApplyReason::LayoutImpossible, impossible.message))?;
    gpu.needs_reset = planned.reset;
    gpu.first = planned;
    Ok(())
}

/// Before the creates: the VFs enabled where the plan says (their rebind wipes every GPU
/// instance and clears heterogeneous mode, so the creates are planned after it), then
/// heterogeneous mode set where the plan says, through the helper.
pub(super) fn before_creates(
    shared: &Shared<'_>,
    say: &dyn Fn(Progress),
    gpu: &mut Gpu,
) -> Result<(), Stop> {
    if gpu.vgpu.has(&VgpuStep::EnableVfs) {
        set_vfs(shared, say, gpu, VgpuStep::EnableVfs, VfsWanted::Enabled)?;
    }
    if gpu.vgpu.has(&VgpuStep::Heterogeneous) {
        let device = gpu.report.device;
        run_batch(
            shared,
            say,
            gpu,
            vec![Step::SetVgpuHeterogeneousMode { enabled: true }],
        )?;
        gpu.work.vgpu_done.push(VgpuStep::Heterogeneous);
        say(Progress::Vgpu {
            device,
            step: VgpuStep::Heterogeneous,
        });
    }
    Ok(())
}

/// After the GPU instances: each type written, each read back; then every VF read back against
/// the spec. (The clears ran before the first batch.)
pub(super) fn after_creates(
    shared: &Shared<'_>,
    say: &dyn Fn(Progress),
    gpu: &mut Gpu,
) -> Result<(), Stop> {
    type_writes(shared, say, gpu, |step| {
        matches!(step, VgpuStep::WriteType { .. })
    })?;
    read_back(shared, gpu)
}

/// The plan's type writes that `which` picks, in order, each read back by the writer.
fn type_writes(
    shared: &Shared<'_>,
    say: &dyn Fn(Progress),
    gpu: &mut Gpu,
    which: fn(&VgpuStep) -> bool,
) -> Result<(), Stop> {
    let device = gpu.report.device;
    let writes: Vec<VgpuStep> = gpu
        .vgpu
        .steps
        .iter()
        .filter(|step| which(step))
        .cloned()
        .collect();
    for step in writes {
        let (index, id) = match &step {
            VgpuStep::ClearType { index } => (*index, None),
            VgpuStep::WriteType { index, id, .. } => (*index, Some(*id)),
            _ => continue,
        };
        shared.go_on(&format!(
            "the vGPU type of virtual function {index} of {device}"
        ))?;
        gpu.wrote = true;
        write_vgpu_type(
            shared.lock,
            shared.host.sysfs_root(),
            shared.vgpu.types,
            VfTypeFile { gpu: device, index },
            id,
        )
        .map_err(|error| type_write_stop(shared, &error))?;
        gpu.work.vgpu_done.push(step.clone());
        say(Progress::Vgpu { device, step });
    }
    Ok(())
}

/// Every VF of the GPU against what it is now declared to hold, per VF, by the rule a sync
/// compares a declaration with (`VgpuDeclared::drift`).
fn read_back(shared: &Shared<'_>, gpu: &mut Gpu) -> Result<(), Stop> {
    let device = gpu.report.device;
    let Some(declared) = gpu.declared.vgpu.as_ref().filter(|_| {
        matches!(
            gpu.wanted.vgpu,
            Some(VgpuJob::Apply(_) | VgpuJob::Restore { .. })
        )
    }) else {
        return Ok(());
    };
    let found = host_sync::sriov::read_vf_types(shared.host.sysfs_root(), device);
    if let VfsRead::Unreadable(why) = &found {
        return Err(Stop::failed(
            ApplyReason::GpuUnreadable,
            format!("{device}: {why}"),
        ));
    }
    let differences = declared.drift(device, &found);
    if differences.is_empty() {
        return Ok(());
    }
    Err(Stop::read_back_differs(&mut gpu.report, differences))
}
