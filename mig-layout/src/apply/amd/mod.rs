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

mod preflight;
mod writes;

use super::with::AmdWith;

use super::Progress;
use super::ctx::{Ctx, Stop};
use super::run::ApplyError;
use super::side::{Due, Refusal, Side, Writing};
use crate::amd_plan::AmdStep;
use crate::report::{ApplyWarning, Draft, GpuReport, GpuWork};
use crate::select::AmdWanted;
use gpu_host_probe::amdgpu::AmdPartitions;
use gpu_partition_types::Bdf;
use host_sync::{GpuRead, StateStore};
use layout_model::DeclaredGpu;
use layout_model::amd::AmdDeclared;

/// One AMD GPU through the apply.
pub(super) struct AmdGpu {
    pub wanted: AmdWanted,
    pub report: GpuReport,
    /// Why it stopped, once it did.
    pub stop: Option<Stop>,
}

impl AmdGpu {
    /// `step` done on it.
    fn done(&mut self, step: AmdStep) {
        if let GpuWork::Amd(work) = &mut self.report.work {
            work.done.push(step);
        }
    }
}

/// The AMD side's GPUs once the preflight let them through.
pub(super) struct AmdPlanned {
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

impl AmdPlanned {
    /// No AMD GPU planned.
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
                gpu.stop = Some(stop.of(device));
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

/// The AMD GPUs of an apply: what they are wanted to be, then (the preflight let them through)
/// planned and written, or (refused) each one's report as far as it got.
pub(super) struct AmdSide<'w> {
    with: &'w AmdWith<'w>,
    wanted: Vec<AmdWanted>,
    planned: AmdPlanned,
    refused: Vec<GpuReport>,
}

impl<'w> AmdSide<'w> {
    /// The GPUs `wanted`, written as `with` says.
    pub fn new(wanted: Vec<AmdWanted>, with: &'w AmdWith<'w>) -> Self {
        Self {
            with,
            wanted,
            planned: AmdPlanned::none(),
            refused: Vec::new(),
        }
    }
}

impl Side for AmdSide<'_> {
    fn devices(&self) -> Vec<Bdf> {
        self.wanted.iter().map(|w| w.gpu.bdf).collect()
    }

    fn divides(&self) -> bool {
        self.wanted.iter().any(|w| w.want.is_divided())
    }

    fn preflight(
        &mut self,
        ctx: &mut Ctx<'_, '_>,
        store: &mut dyn StateStore,
        draft: &mut Draft,
    ) -> Result<Result<(), Refusal>, ApplyError> {
        let host = ctx.shared.host;
        match preflight::preflight(host, self.with, self.wanted.clone(), store)? {
            Ok(planned) => self.planned = planned,
            Err((refusal, reports)) => {
                self.refused = reports;
                return Ok(Err(refusal));
            }
        }
        // A driver reload reaches every GPU amdgpu drives: none may be another's.
        if self.planned.reloads_driver() {
            let theirs = crate::select::amd_gpus(host.sysfs_root())?
                .into_iter()
                .find_map(|gpu| ctx.shared.not_ours.get(&gpu.bdf).map(|o| (gpu.bdf, *o)));
            if let Some((device, ownership)) = theirs {
                return Ok(Err(Refusal::new(
                    crate::ApplyReason::GpuNotOurs,
                    format!(
                        "the layout reloads the amdgpu driver, which resets every GPU it drives, \
                         and {device} is not ours (ownership {ownership})"
                    ),
                )));
            }
        }
        draft.reload_planned = self.planned.reloads_driver();
        // Each GPU's steps, then the reload (it reaches every AMD GPU) on the first GPU.
        let first = self.planned.gpus.first().map(|gpu| gpu.wanted.gpu.bdf);
        for step in &self.planned.steps {
            if let Some(device) = step.device().or(first) {
                ctx.say(Progress::AmdPlan {
                    device,
                    step: *step,
                });
            }
        }
        Ok(Ok(()))
    }

    fn due(&self) -> Due {
        Due {
            mode: self.planned.reloads_driver(),
            instances: self.planned.sets_compute(),
        }
    }

    fn run(&mut self, ctx: &mut Ctx<'_, '_>, on: &mut Writing<'_, '_>) -> Result<(), ApplyError> {
        let run = writes::AmdRun {
            ctx,
            with: self.with,
            store: &mut *on.store,
        };
        writes::run(run, &mut self.planned)?;
        on.draft.reloads += self.planned.reloads;
        on.draft.warnings.append(&mut self.planned.warnings);
        Ok(())
    }

    fn wrote(&self) -> bool {
        self.planned.wrote
    }

    fn stops(&mut self) -> Vec<(&mut GpuReport, &mut Option<Stop>)> {
        self.planned
            .gpus
            .iter_mut()
            .map(|gpu| (&mut gpu.report, &mut gpu.stop))
            .collect()
    }

    fn declared(&self) -> Vec<(Bdf, DeclaredGpu)> {
        self.planned.declared().collect()
    }

    fn read(&self) -> Vec<(Bdf, GpuRead)> {
        self.planned
            .devices()
            .into_iter()
            .map(|device| (device, GpuRead::Amd))
            .collect()
    }

    fn reports(self: Box<Self>) -> Vec<GpuReport> {
        let mut reports: Vec<GpuReport> = self
            .planned
            .gpus
            .into_iter()
            .map(|gpu| gpu.report)
            .collect();
        reports.extend(self.refused);
        reports
    }
}
