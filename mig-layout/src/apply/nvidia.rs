//! The NVIDIA side of an apply: the helper's `apply` format negotiated, every GPU read and
//! planned by its MIG layout and its vGPU side ([`super::preflight`]), then its writes
//! ([`super::phases`]: destroys and mode, the warm resets, the vGPU side and the creates, the
//! read-back).

use super::ctx::{Ctx, Stop};
use super::gpu::Gpu;
use super::phases;
use super::preflight::{self, Preflight};
use super::progress::Progress;
use super::run::ApplyError;
use super::side::{Due, Refusal, Side, Writing};
use crate::report::{ApplyReason, Draft, GpuReport};
use crate::select::{VgpuJob, Wanted};
use gpu_partition_types::Bdf;
use host_sync::{GpuRead, StateStore};
use layout_model::{Board, DeclaredGpu, Owned, Owner, Unnamed};
use std::collections::BTreeMap;

/// The NVIDIA GPUs of an apply: what they are wanted to be, then (the preflight let them
/// through) each through its phases, or (refused) each one's report as far as it got.
pub(super) struct NvidiaSide {
    wanted: Vec<Wanted>,
    /// A restore's boards, declared in each slot.
    boards: Option<BTreeMap<Bdf, Board>>,
    unnamed: Unnamed,
    /// Each GPU's owned instances, and the owners whose instances may go.
    owners: (BTreeMap<Bdf, Vec<Owned>>, Vec<Owner>),
    cards: Vec<Gpu>,
    refused: Vec<GpuReport>,
}

impl NvidiaSide {
    /// The GPUs `wanted`, with the boards a restore declares in their slots, treating the
    /// instances a layout does not name as `unnamed` says, each GPU's owned instances kept
    /// (`owners`: and the owners released).
    pub fn new(
        wanted: Vec<Wanted>,
        boards: Option<BTreeMap<Bdf, Board>>,
        unnamed: Unnamed,
        owners: (BTreeMap<Bdf, Vec<Owned>>, Vec<Owner>),
    ) -> Self {
        Self {
            wanted,
            boards,
            unnamed,
            owners,
            cards: Vec::new(),
            refused: Vec::new(),
        }
    }
}

impl Side for NvidiaSide {
    fn devices(&self) -> Vec<Bdf> {
        self.wanted.iter().map(|w| w.gpu.bdf).collect()
    }

    fn divides(&self) -> bool {
        self.wanted.iter().any(|w| {
            w.want.enabled || matches!(w.vgpu, Some(VgpuJob::Apply(_) | VgpuJob::Restore { .. }))
        })
    }

    fn preflight(
        &mut self,
        ctx: &mut Ctx<'_, '_>,
        _store: &mut dyn StateStore,
        draft: &mut Draft,
    ) -> Result<Result<(), Refusal>, ApplyError> {
        // The helper's format is asked for once, and only where the apply has an NVIDIA GPU.
        match ctx.shared.helper.negotiate_apply() {
            Ok(format) => ctx.shared.format = Some(format),
            Err(failure) => {
                let reason = ApplyReason::HelperUnavailable;
                return Ok(Err(Refusal::new(reason, failure.to_string())));
            }
        }
        let wanted = std::mem::take(&mut self.wanted);
        let checked = preflight::preflight(
            &ctx.shared,
            wanted,
            self.boards.as_ref(),
            self.unnamed,
            (&self.owners.0, &self.owners.1),
        );
        let (cards, warnings) = match checked {
            Preflight::Go(cards, warnings) => (cards, warnings),
            Preflight::Refused {
                reason,
                detail,
                impossible,
                gpus,
                warnings,
            } => {
                draft.warnings.extend(warnings);
                self.wanted = Vec::new();
                self.refused = gpus;
                return Ok(Err(Refusal {
                    reason,
                    detail,
                    impossible,
                }));
            }
        };
        draft.warnings.extend(warnings);
        for gpu in &cards {
            let device = gpu.report.device;
            for line in &gpu.work.plan {
                ctx.say(Progress::Plan {
                    device,
                    line: line.clone(),
                });
            }
            for step in &gpu.work.vgpu_plan {
                ctx.say(Progress::VgpuPlan {
                    device,
                    step: step.clone(),
                });
            }
        }
        self.wanted = cards.iter().map(|gpu| gpu.wanted.clone()).collect();
        self.cards = cards;
        Ok(Ok(()))
    }

    fn due(&self) -> Due {
        Due {
            mode: self.cards.iter().any(Gpu::changes_mode),
            instances: self.cards.iter().any(Gpu::changes_instances),
        }
    }

    fn resets(&self) -> Vec<Bdf> {
        self.cards
            .iter()
            // A mode change waits for a reset where the architecture says so (Ampere), or
            // may where it is not known; from Hopper on it takes effect at once
            // (`layout_model::AfterRestart`, with its sources).
            .filter(|gpu| {
                let at_once = layout_model::AfterRestart::of(gpu.reply.architecture())
                    .enabling_mig_needs_reset
                    == layout_model::MigEnableReset::NotNeeded;
                gpu.needs_reset || (gpu.first.set_mode.is_some() && !at_once)
            })
            .map(|gpu| gpu.report.device)
            .collect()
    }

    fn run(&mut self, ctx: &mut Ctx<'_, '_>, on: &mut Writing<'_, '_>) -> Result<(), ApplyError> {
        if !self.cards.is_empty() {
            phases::run(ctx, on.reset, &mut self.cards, &mut on.draft.resets);
        }
        Ok(())
    }

    fn wrote(&self) -> bool {
        self.cards.iter().any(|gpu| gpu.wrote)
    }

    fn stops(&mut self) -> Vec<(&mut GpuReport, &mut Option<Stop>)> {
        self.cards
            .iter_mut()
            .map(|gpu| (&mut gpu.report, &mut gpu.stop))
            .collect()
    }

    fn declared(&self) -> Vec<(Bdf, DeclaredGpu)> {
        self.cards
            .iter()
            .map(|gpu| {
                (
                    gpu.wanted.gpu.bdf,
                    DeclaredGpu::Nvidia(gpu.declared.clone()),
                )
            })
            .collect()
    }

    fn read(&self) -> Vec<(Bdf, GpuRead)> {
        self.cards
            .iter()
            .map(|gpu| {
                let mode = gpu.reply.outcome().partition_mode();
                (gpu.wanted.gpu.bdf, GpuRead::Nvidia(mode))
            })
            .collect()
    }

    fn reports(self: Box<Self>) -> Vec<GpuReport> {
        let mut reports: Vec<GpuReport> = self.cards.into_iter().map(Gpu::into_report).collect();
        reports.extend(self.refused);
        reports.sort_by_key(|gpu| gpu.index);
        reports
    }
}
