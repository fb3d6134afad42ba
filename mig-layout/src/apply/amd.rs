//! The AMD side of an apply, in the executor's phases, so a Device Config Manager profile, a
//! restore of a declaration that names AMD GPUs and a host of both vendors share one lock, one
//! preflight, one record and one report (the rules and their sources: the project's
//! `docs/amd.md`):
//!
//! 1. the preflight reads every AMD GPU of the host (a reload reaches them all, a memory request
//!    its whole XGMI hive), who holds their device files (`/dev/kfd`, each GPU's render nodes)
//!    and which client services run, and plans ([`crate::amd::plan_amd`]); refused before any
//!    write: a mode the GPU does not offer, a pair the kernel refuses, a split hive
//!    (`layout_impossible`), a GPU in use or a client service running (`gpu_busy`, naming
//!    them), a GPU that does not read (`gpu_unreadable`);
//! 2. after the NVIDIA side's writes, each memory request, recorded in the state as waiting for
//!    the reload before the reload runs (the kernel shows none);
//! 3. one driver reload, then every AMD GPU waited for until its files read again;
//! 4. the plan made anew from what the GPUs show (the reload set every compute partition):
//!    only compute writes may remain;
//! 5. the compute writes;
//! 6. every GPU read back against what it is wanted to be.
//!
//! Every write is recorded in the machine's record of writes before it is made.

use super::Progress;
use super::ctx::{Ctx, Stop};
use super::run::ApplyError;
use crate::amd_plan::{AmdCard, AmdRefusal, AmdStep, plan_amd};
use crate::amd_services::running_services;
use crate::report::{ApplyReason, ApplyWarning, GpuReport};
use crate::select::{AmdWanted, amd_gpus};
use gpu_host_probe::amdgpu::{
    AmdPartitions, Modprobe, PartitionWrites, ReloadError, SysfsAmdgpu, read_partitions,
};
use gpu_host_probe::{Holder, holders};
use gpu_host_probe::{Host, Writer};
use gpu_partition_types::Bdf;
use host_sync::StateStore;
use layout_model::DeclaredGpu;
use layout_model::amd::AmdDeclared;
use layout_model::amd::AmdRead;
use layout_model::amd::AmdWant;
use std::path::PathBuf;
use std::time::Duration;
use warm_reset::amd::{KFD, render_files, render_nodes};

/// How often the GPUs' files are looked at while they are waited for after the reload.
const RELOAD_POLL: Duration = Duration::from_millis(100);

/// How an apply writes AMD GPUs.
#[derive(Clone)]
pub struct AmdWith<'a> {
    /// How the driver is reloaded by the kernel's side (`modprobe`'s path and deadline).
    pub modprobe: Modprobe,
    /// What carries the writes instead of the kernel (a simulated amdgpu, say); `None` (the
    /// default): the kernel's files under the host's sysfs and `modprobe`.
    pub writes: Option<&'a dyn PartitionWrites>,
    /// The systemd services that use the GPUs (Device Config Manager's
    /// `gpuClientSystemdServices`): one running blocks a write (`gpu_busy`); an `apply-start`
    /// hook stops them, and an `apply-exit` hook starts them again.
    pub client_services: Vec<String>,
    /// How long the GPUs' files are waited for after the reload (default 60 s).
    pub reload_wait: Duration,
}

impl Default for AmdWith<'_> {
    fn default() -> Self {
        Self {
            modprobe: Modprobe::default(),
            writes: None,
            client_services: Vec::new(),
            reload_wait: Duration::from_secs(60),
        }
    }
}

impl std::fmt::Debug for AmdWith<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmdWith")
            .field("modprobe", &self.modprobe)
            .field("simulated", &self.writes.is_some())
            .field("client_services", &self.client_services)
            .field("reload_wait", &self.reload_wait)
            .finish()
    }
}

/// One AMD GPU through the apply.
pub(super) struct AmdGpu {
    pub wanted: AmdWanted,
    pub report: GpuReport,
    /// Why it stopped, once it did.
    pub stop: Option<Stop>,
}

/// The AMD side once the preflight let it through.
pub(super) struct AmdSide {
    /// The GPUs the job names.
    pub gpus: Vec<AmdGpu>,
    /// Every AMD GPU of the host, as the preflight read it.
    pub read: Vec<(Bdf, AmdPartitions)>,
    /// The plan.
    pub steps: Vec<AmdStep>,
    /// Whether any write was made (or may have been).
    pub wrote: bool,
    /// How many reloads ran (the driver unloaded).
    pub reloads: u32,
    /// What a person should know (a GPU outside the job the reload reset, set back).
    pub warnings: Vec<ApplyWarning>,
    /// The client services the apply was given (a Device Config Manager file's, the config's).
    pub services: Vec<String>,
}

impl AmdSide {
    /// No AMD GPU in the job.
    pub fn none() -> Self {
        Self {
            gpus: Vec::new(),
            read: Vec::new(),
            steps: Vec::new(),
            wrote: false,
            reloads: 0,
            warnings: Vec::new(),
            services: Vec::new(),
        }
    }

    /// Whether the plan reloads the driver (a memory partition changes).
    pub fn reloads_driver(&self) -> bool {
        self.steps.contains(&AmdStep::ReloadDriver)
    }

    /// Whether the plan writes a compute partition.
    pub fn sets_compute(&self) -> bool {
        self.steps
            .iter()
            .any(|step| matches!(step, AmdStep::SetCompute { .. }))
    }

    /// What each GPU of the job is declared to be once the apply writes: its partitions, and
    /// the client services the apply was given with those its declaration kept.
    pub fn declared(&self) -> impl Iterator<Item = (Bdf, DeclaredGpu)> + '_ {
        self.gpus.iter().map(|gpu| {
            let services = with_own(&self.services, &gpu.wanted.client_services);
            let declared = AmdDeclared::new(gpu.wanted.want, services);
            (gpu.wanted.gpu.bdf, DeclaredGpu::Amd(declared))
        })
    }

    /// Each GPU's report, in ID order.
    pub fn reports(self) -> Vec<GpuReport> {
        self.gpus.into_iter().map(|gpu| gpu.report).collect()
    }

    /// Every AMD GPU of the host (what the end of the apply reads again).
    pub fn devices(&self) -> Vec<Bdf> {
        self.read.iter().map(|(device, _)| *device).collect()
    }

    /// The members of `device`'s XGMI hive (itself alone where it is in none): what a memory
    /// request of it reaches.
    fn hive_of(&self, device: Bdf) -> Vec<Bdf> {
        let hive = self
            .read
            .iter()
            .find(|(at, _)| *at == device)
            .and_then(|(_, read)| read.hive);
        match hive {
            None => vec![device],
            Some(hive) => self
                .read
                .iter()
                .filter(|(_, read)| read.hive == Some(hive))
                .map(|(at, _)| *at)
                .collect(),
        }
    }

    /// Stops every GPU of the job that has not stopped and has a step in `remaining` (the
    /// others go on to the read-back, which says whether they hold).
    fn stop_with_steps(&mut self, stop: &Stop, remaining: &[AmdStep]) {
        for gpu in &mut self.gpus {
            let device = gpu.wanted.gpu.bdf;
            if gpu.stop.is_none() && remaining.iter().any(|step| step.device() == Some(device)) {
                gpu.stop = Some(stop.clone());
            }
        }
    }

    fn gpu(&mut self, device: Bdf) -> Option<&mut AmdGpu> {
        self.gpus
            .iter_mut()
            .find(|gpu| gpu.wanted.gpu.bdf == device)
    }
}

/// `services` with those of `own` it lacks, in order.
fn with_own(services: &[String], own: &[String]) -> Vec<String> {
    let mut all = services.to_vec();
    for service in own {
        if !all.contains(service) {
            all.push(service.clone());
        }
    }
    all
}

/// Why the AMD side refused before any write, with each GPU's report as far as it got.
pub(super) struct Refused {
    pub reason: ApplyReason,
    pub detail: String,
    pub gpus: Vec<GpuReport>,
}

/// What holds each GPU: its render nodes' holders and `/dev/kfd`'s (a ROCm process opens it
/// whatever GPUs it uses); or why who holds them cannot be told.
fn holders_of(host: &Host, devices: &[Bdf]) -> Result<Vec<Vec<Holder>>, String> {
    let mut files: Vec<Vec<PathBuf>> = Vec::new();
    for device in devices {
        let dir = host
            .sysfs_root()
            .join("bus/pci/devices")
            .join(device.to_string());
        let nodes = render_nodes(&dir).map_err(|error| {
            format!(
                "{device}: cannot tell who holds it: its render nodes did not read: {}",
                gpu_host_probe::chain::Chain(&error)
            )
        })?;
        files.push(render_files(&nodes));
    }
    let kfd = PathBuf::from(KFD);
    let all: Vec<PathBuf> = files
        .iter()
        .flatten()
        .cloned()
        .chain(std::iter::once(kfd.clone()))
        .collect();
    let found = holders(host.proc_root(), &all).map_err(|error| error.to_string())?;
    Ok(files
        .into_iter()
        .map(|nodes| {
            found
                .iter()
                .filter(|holder| holder.file == kfd || nodes.contains(&holder.file))
                .cloned()
                .collect()
        })
        .collect())
}

/// A GPU's report before anything is done.
fn report_of(wanted: &AmdWanted) -> GpuReport {
    GpuReport::new(wanted.gpu.bdf, wanted.gpu.index, wanted.line)
}

/// Every AMD GPU of the host read, who holds them, the client services and the plan: the side
/// to run, or why it is refused before any write.
pub(super) fn preflight(
    host: &Host,
    with: &AmdWith<'_>,
    wanted: Vec<AmdWanted>,
    store: &mut dyn StateStore,
) -> Result<Result<AmdSide, Refused>, ApplyError> {
    if wanted.is_empty() {
        return Ok(Ok(AmdSide::none()));
    }
    let mut reports: Vec<GpuReport> = wanted.iter().map(report_of).collect();
    let refused = |reason, detail: String, gpus: Vec<GpuReport>| {
        Ok(Err(Refused {
            reason,
            detail,
            gpus,
        }))
    };
    let is_wanted = |device: Bdf| wanted.iter().any(|w| w.gpu.bdf == device);
    // The services given and those the declarations kept: one running blocks the writes.
    let services = wanted.iter().fold(with.client_services.clone(), |all, w| {
        with_own(&all, &w.client_services)
    });
    let mut read = Vec::new();
    let mut unread = Vec::new();
    for gpu in amd_gpus(host.sysfs_root())? {
        match read_partitions(host.sysfs_root(), gpu.bdf) {
            Ok(Some(partitions)) => read.push((gpu.bdf, partitions)),
            Ok(None) if is_wanted(gpu.bdf) => {
                return refused(
                    ApplyReason::LayoutImpossible,
                    format!("{gpu}: it shows no partition files: amdgpu cannot partition it"),
                    reports,
                );
            }
            Ok(None) => {}
            Err(error) if is_wanted(gpu.bdf) => {
                let detail = format!("{gpu}: {}", gpu_host_probe::chain::Chain(&error));
                return refused(ApplyReason::GpuUnreadable, detail, reports);
            }
            Err(error) => unread.push(format!("{gpu}: {}", gpu_host_probe::chain::Chain(&error))),
        }
    }
    let devices: Vec<Bdf> = read.iter().map(|(device, _)| *device).collect();
    let held = match holders_of(host, &devices) {
        Ok(held) => held,
        Err(detail) => return refused(ApplyReason::GpuBusy, detail, reports),
    };
    // The memory requests of ours that still wait for a reload (the kernel shows none).
    let state = store.load()?.unwrap_or_default();
    let boot = host.boot().or(&state.boot);
    let requested = |device: &Bdf, partitions: &AmdPartitions| {
        state.gpus.get(device)?.waiting_request(partitions, &boot)
    };
    let cards: Vec<AmdCard<'_>> = read
        .iter()
        .zip(&held)
        .map(|((device, partitions), holders)| AmdCard {
            device: *device,
            partitions,
            holders,
            requested: requested(device, partitions),
        })
        .collect();
    let wants: Vec<(Bdf, AmdWant)> = wanted.iter().map(|w| (w.gpu.bdf, w.want)).collect();
    let steps = match plan_amd(&cards, &wants) {
        Ok(steps) => steps,
        Err(refusal) => return refused(refusal.reason(), refusal.to_string(), reports),
    };
    // A plan that reloads the driver through the kernel's side runs modprobe only when root may
    // (before any write, as the helper's own check).
    if steps.contains(&AmdStep::ReloadDriver) && with.writes.is_none() {
        if let Err(why) = with.modprobe.program.for_host(host) {
            let detail = gpu_host_probe::chain::Chain(&why).to_string();
            return refused(ApplyReason::ToolUnavailable, detail, reports);
        }
    }
    for report in &mut reports {
        report.amd_plan = steps
            .iter()
            .filter(|step| step.device() == Some(report.device))
            .copied()
            .collect();
    }
    if !steps.is_empty() {
        // A GPU that did not read could be in a hive a request reaches, and a reload takes it
        // too: nothing is written while one does not.
        if let Some(first) = unread
            .first()
            .filter(|_| steps.contains(&AmdStep::ReloadDriver))
        {
            return refused(
                ApplyReason::GpuUnreadable,
                format!("{first}; the driver reload would reach it"),
                reports,
            );
        }
        let running =
            running_services(host.sysfs_root(), &services).map_err(ApplyError::ClientServices)?;
        if !running.is_empty() {
            let each: Vec<String> = running.iter().map(ToString::to_string).collect();
            return refused(
                ApplyReason::GpuBusy,
                format!(
                    "{}: a client service of the GPUs holds them; stop it before a repartition \
                     (an apply-start hook may, and an apply-exit hook start it again)",
                    each.join("; ")
                ),
                reports,
            );
        }
    }
    let gpus = wanted
        .into_iter()
        .zip(reports)
        .map(|(wanted, report)| AmdGpu {
            wanted,
            report,
            stop: None,
        })
        .collect();
    Ok(Ok(AmdSide {
        gpus,
        read,
        steps,
        wrote: false,
        reloads: 0,
        warnings: Vec::new(),
        services: with.client_services.clone(),
    }))
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
pub(super) fn run(on: AmdRun<'_, '_, '_>, side: &mut AmdSide) -> Result<(), ApplyError> {
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
    side: &mut AmdSide,
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
        host_sync::request_memory(shared.lock, store, &members, mode)?;
        if let Err(error) = writes.request_memory(sysfs, device, mode) {
            host_sync::requests_ended(shared.lock, store, &members)?;
            return Ok(Err(Stop::failed(
                ApplyReason::StepRefused,
                format!("{device}: writing {mode} to current_memory_partition: {error}"),
            )));
        }
        remaining.retain(|left| *left != step);
        if let Some(gpu) = side.gpu(device) {
            gpu.report.amd_done.push(step);
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
            return Ok(Err(Stop::failed(
                ApplyReason::StepRefused,
                format!(
                    "the driver reload failed: {error}; the memory partitions requested wait \
                     for the next reload"
                ),
            )));
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
            .map_err(|error| error.to_string())
            .and_then(|()| {
                side.wrote = true;
                writes.write_compute(sysfs, device, mode).map_err(|error| {
                    format!("writing {mode} to current_compute_partition: {error}")
                })
            });
        remaining.retain(|left| *left != step);
        match side.gpu(device) {
            Some(gpu) => match written {
                Ok(()) => {
                    gpu.report.amd_done.push(step);
                    ctx.say(Progress::Amd { device, step });
                }
                Err(why) => {
                    gpu.stop = Some(Stop::failed(
                        ApplyReason::StepRefused,
                        format!("{device}: {why}"),
                    ));
                }
            },
            // A GPU outside the job, set back to what it was before the reload.
            None => side.warnings.push(ApplyWarning::ReloadReset {
                device,
                restored: mode,
                failed: written.err(),
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
fn replan(side: &AmdSide, after: &[(Bdf, AmdPartitions)]) -> Result<Vec<AmdStep>, Stop> {
    let cards: Vec<AmdCard<'_>> = after
        .iter()
        .map(|(device, partitions)| AmdCard {
            device: *device,
            partitions,
            holders: &[],
            requested: None,
        })
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
fn read_back(ctx: &mut Ctx<'_, '_>, side: &mut AmdSide) {
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
