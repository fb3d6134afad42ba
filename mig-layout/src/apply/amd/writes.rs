//! The AMD side's writes — the memory requests, one driver reload, the compute writes — and
//! the read-back.

use super::AmdPlanned;
use super::AmdWith;
use crate::amd_plan::{AmdCard, AmdRefusal, AmdStep, plan_amd};
use crate::apply::Progress;
use crate::apply::ctx::{Ctx, Stop};
use crate::apply::run::ApplyError;
use crate::report::{ApplyReason, ApplyWarning, WriteFailure};
use gpu_host_probe::Writer;
use gpu_host_probe::amdgpu::{
    AmdPartitions, PartitionWrites, ReloadError, SysfsAmdgpu, read_partitions,
};
use gpu_partition_types::Bdf;
use host_sync::StateStore;
use layout_model::amd::{AmdDeclared, AmdRead, AmdWant};
use std::time::Duration;

/// How often the GPUs' files are looked at while they are waited for after the reload.
const RELOAD_POLL: Duration = Duration::from_millis(100);

/// The file a memory partition is requested through.
const MEMORY_FILE: &str = "current_memory_partition";

/// The file a compute partition is set through.
const COMPUTE_FILE: &str = "current_compute_partition";

/// The file `name` of the GPU `device` under `sysfs`.
fn file(sysfs: &std::path::Path, device: Bdf, name: &str) -> std::path::PathBuf {
    sysfs
        .join("bus/pci/devices")
        .join(device.to_string())
        .join(name)
}

/// What the writes are made with.
pub(super) struct AmdRun<'a, 'c, 'p> {
    pub ctx: &'a mut Ctx<'c, 'p>,
    pub with: &'a AmdWith<'a>,
    pub store: &'a mut dyn StateStore,
}

/// The writes — the memory requests, the reload, the compute writes (planned anew after a
/// reload) — then every GPU of the job that did not stop read back, whatever ended the writes:
/// a reload sets every GPU's compute partition anew, so none is said to hold unread. A GPU
/// that stops keeps its stop.
pub(super) fn run(on: AmdRun<'_, '_, '_>, side: &mut AmdPlanned) -> Result<(), ApplyError> {
    let AmdRun { ctx, with, store } = on;
    let mut remaining = side.steps.clone();
    if let Err(stop) = writes(ctx, with, store, side, &mut remaining)? {
        side.stop_with_steps(&stop, &remaining);
    }
    read_back(ctx, side);
    Ok(())
}

/// The writes, in order; `Err` with the stop of the GPUs whose steps remain (`remaining`, kept
/// current: what is left of the plan, the one made anew after a reload).
fn writes(
    ctx: &mut Ctx<'_, '_>,
    with: &AmdWith<'_>,
    store: &mut dyn StateStore,
    side: &mut AmdPlanned,
    remaining: &mut Vec<AmdStep>,
) -> Result<Result<(), Stop>, ApplyError> {
    let shared = ctx.shared;
    let real = SysfsAmdgpu::new(with.modprobe.clone());
    let writes: &dyn PartitionWrites = match with.writes {
        Some(writes) => writes,
        None => &real,
    };
    let sysfs = shared.host.sysfs_root();
    let memory: Vec<AmdStep> = side
        .steps
        .iter()
        .filter(|step| matches!(step, AmdStep::RequestMemory { .. }))
        .copied()
        .collect();
    for step in memory {
        let AmdStep::RequestMemory { device, mode } = step else {
            continue;
        };
        if let Err(stop) = shared.go_on(&format!("the memory request of {device}")) {
            return Ok(Err(stop));
        }
        let members = side.hive_of(device);
        if let Err(error) = shared
            .lock
            .record_write(&members, Writer::AmdMemoryPartition)
        {
            return Ok(Err(Stop::failed(
                ApplyReason::StepRefused,
                format!("{device}: {error}"),
            )));
        }
        side.wrote = true;
        // Recorded as waiting before it is made: a crash between the two leaves it said.
        host_sync::request_memory(shared.lock, store, shared.clock, &members, mode)?;
        if let Err(error) = writes.request_memory(sysfs, device, mode) {
            host_sync::requests_ended(shared.lock, store, &members)?;
            let failure = WriteFailure::kernel(file(sysfs, device, MEMORY_FILE), &error);
            return Ok(Err(Stop::refused(device, failure)));
        }
        remaining.retain(|left| *left != step);
        if let Some(gpu) = side.gpu(device) {
            gpu.done(step);
        }
        ctx.say(Progress::Amd { device, step });
    }
    if side.reloads_driver() {
        if let Err(stop) = shared.go_on("the driver reload") {
            return Ok(Err(stop));
        }
        let reload = Writer::DriverReload {
            module: gpu_host_probe::amdgpu::DRIVER.to_owned(),
        };
        if let Err(error) = shared.lock.record_write(&[], reload) {
            return Ok(Err(Stop::failed(
                ApplyReason::StepRefused,
                error.to_string(),
            )));
        }
        let reloaded = writes.reload_driver(shared.cancel);
        if reloaded.is_ok() || matches!(reloaded, Err(ReloadError::Load { .. })) {
            // The driver was unloaded: every GPU was taken away and every request sent.
            side.reloads += 1;
        }
        if let Err(error) = reloaded {
            let (command, result, stderr) = error.run();
            let what = if error.unloaded() {
                "after the unload: the requests went to the firmware, and the GPUs may have no \
                 driver now"
            } else {
                "the driver is as it was, and the memory partitions requested wait for the next \
                 reload"
            };
            let failure = WriteFailure::Program {
                program: with.modprobe.program.name(),
                command: command.to_owned(),
                end: result.clone(),
                stderr: stderr.to_owned(),
            };
            let mut stop = Stop::failed(
                ApplyReason::StepRefused,
                format!("the driver reload failed: {failure}; {what}"),
            );
            stop.failure = Some(Box::new(failure));
            return Ok(Err(stop));
        }
        host_sync::requests_ended(shared.lock, store, &side.devices())?;
        if let Some(device) = side.gpus.first().map(|gpu| gpu.wanted.gpu.bdf) {
            ctx.say(Progress::Amd {
                device,
                step: AmdStep::ReloadDriver,
            });
        }
        let after = match wait_for_gpus(ctx, with.reload_wait, &side.devices()) {
            Ok(after) => after,
            Err(stop) => return Ok(Err(stop)),
        };
        *remaining = match replan(side, &after) {
            Ok(steps) => steps,
            Err(stop) => return Ok(Err(stop)),
        };
        side.read = after;
    }
    let compute: Vec<AmdStep> = remaining
        .iter()
        .filter(|step| matches!(step, AmdStep::SetCompute { .. }))
        .copied()
        .collect();
    for step in compute {
        let AmdStep::SetCompute { device, mode } = step else {
            continue;
        };
        if let Err(stop) = shared.go_on(&format!("the compute partition of {device}")) {
            return Ok(Err(stop));
        }
        let written = shared
            .lock
            .record_write(&[device], Writer::AmdComputePartition)
            .map_err(|error| Stop::failed(ApplyReason::StepRefused, format!("{device}: {error}")))
            .and_then(|()| {
                side.wrote = true;
                writes.write_compute(sysfs, device, mode).map_err(|error| {
                    let failure = WriteFailure::kernel(file(sysfs, device, COMPUTE_FILE), &error);
                    Stop::refused(device, failure)
                })
            });
        remaining.retain(|left| *left != step);
        match side.gpu(device) {
            Some(gpu) => match written {
                Ok(()) => {
                    gpu.done(step);
                    ctx.say(Progress::Amd { device, step });
                }
                Err(stop) => gpu.stop = Some(stop),
            },
            // A GPU outside the job, set back to what it was before the reload.
            None => side.warnings.push(ApplyWarning::ReloadReset {
                device,
                restored: mode,
                failed: written.err().map(|stop| stop.detail),
            }),
        }
    }
    Ok(Ok(()))
}

/// Waits until every AMD GPU's partition files read again after the reload (the driver sets
/// each GPU up anew), up to `wait`; answers what they show.
fn wait_for_gpus(
    ctx: &Ctx<'_, '_>,
    wait: Duration,
    devices: &[Bdf],
) -> Result<Vec<(Bdf, AmdPartitions)>, Stop> {
    let shared = ctx.shared;
    let started = shared.clock.now();
    loop {
        let mut read = Vec::new();
        let mut missing = None;
        for device in devices {
            match read_partitions(shared.host.sysfs_root(), *device) {
                Ok(Some(partitions)) => read.push((*device, partitions)),
                Ok(None) => {
                    missing.get_or_insert_with(|| format!("{device} shows no partition files"));
                }
                Err(error) => {
                    missing.get_or_insert_with(|| {
                        format!("{device}: {}", gpu_host_probe::chain::Chain(&error))
                    });
                }
            }
        }
        let Some(missing) = missing else {
            return Ok(read);
        };
        shared.go_on("the GPUs came back after the driver reload")?;
        let waited = shared.clock.now().saturating_sub(started);
        if waited >= wait {
            return Err(Stop::failed(
                ApplyReason::GpuUnreadable,
                format!(
                    "after the driver reload, {missing} ({:.0} s waited)",
                    waited.as_secs_f64()
                ),
            ));
        }
        shared.clock.sleep(RELOAD_POLL.min(wait - waited));
    }
}

/// The plan made anew from what the GPUs show after the reload: only compute writes may
/// remain (a memory partition still other than wanted did not take effect).
fn replan(side: &AmdPlanned, after: &[(Bdf, AmdPartitions)]) -> Result<Vec<AmdStep>, Stop> {
    let cards: Vec<AmdCard<'_>> = after
        .iter()
        .map(|(device, partitions)| AmdCard::unheld(*device, partitions))
        .collect();
    // The reload set every AMD GPU's compute partition anew: the job's are set to what they are
    // wanted to be, and every other GPU back to what it was before (its memory partition the
    // reload did not change: no request reached its hive).
    let others = side.read.iter().filter_map(|(device, before)| {
        let in_job = side.gpus.iter().any(|gpu| gpu.wanted.gpu.bdf == *device);
        let memory = before.memory?;
        (!in_job).then_some((*device, AmdWant::new(before.compute, memory)))
    });
    let wants: Vec<(Bdf, AmdWant)> = side
        .gpus
        .iter()
        .map(|gpu| (gpu.wanted.gpu.bdf, gpu.wanted.want))
        .chain(others)
        .collect();
    let did_not = |detail: String| Stop::failed(ApplyReason::DidNotConverge, detail);
    let steps = plan_amd(&cards, &wants)
        .map_err(|refusal: AmdRefusal| did_not(format!("after the driver reload: {refusal}")))?;
    if let Some(AmdStep::RequestMemory { device, mode }) = steps
        .iter()
        .find(|step| matches!(step, AmdStep::RequestMemory { .. }))
    {
        let found = after
            .iter()
            .find(|(at, _)| at == device)
            .and_then(|(_, read)| read.memory)
            .map_or_else(|| "unknown".to_owned(), |memory| memory.to_string());
        return Err(did_not(format!(
            "{device}: the memory partition is {found} after the driver reload, not {mode}: \
             the request did not take effect"
        )));
    }
    Ok(steps)
}

/// Every GPU that did not stop read back against what it is wanted to be.
fn read_back(ctx: &mut Ctx<'_, '_>, side: &mut AmdPlanned) {
    let sysfs = ctx.shared.host.sysfs_root().to_path_buf();
    for gpu in &mut side.gpus {
        if gpu.stop.is_some() {
            continue;
        }
        let device = gpu.wanted.gpu.bdf;
        let read = read_partitions(&sysfs, device);
        let differences =
            AmdDeclared::new(gpu.wanted.want, Vec::new()).drift(device, &AmdRead::of(&read, None));
        if differences.is_empty() {
            ctx.say(Progress::ReadBack { device });
            continue;
        }
        gpu.stop = Some(Stop::read_back_differs(&mut gpu.report, differences));
    }
}
