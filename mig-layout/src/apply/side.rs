//! The one private seam of the executor: a side per vendor ([`Side`]), which the frame
//! ([`super::writes`]) runs through the same phases whatever the vendor — every side's preflight
//! before any write (a refusal of one blocks all), the hooks its plan makes due, the record of
//! writes, each side's writes and read-back, one record of how the apply ended and what the
//! host is now declared to be. A new vendor is a new side and a new variant of
//! `layout_model::DeclaredGpu`, as a new reset method is a new `warm_reset` backend.

use super::ctx::{Ctx, Stop};
use super::run::ApplyError;
use crate::plan::Impossible;
use crate::report::{ApplyReason, Draft, GpuReport};
use gpu_partition_types::Bdf;
use host_sync::{GpuRead, StateStore};
use layout_model::DeclaredGpu;
use warm_reset::ResetWith;

/// Why a side refused before any write.
pub(super) struct Refusal {
    /// Why, as a token.
    pub reason: ApplyReason,
    /// What, for people.
    pub detail: String,
    /// The impossible layout that refused it, as data, when one did.
    pub impossible: Option<Impossible>,
}

impl Refusal {
    /// Refused for `reason`: `detail`.
    pub fn new(reason: ApplyReason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
            impossible: None,
        }
    }
}

/// Which pre-hooks a side's plan makes due.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Due {
    /// A mode changes (the MIG mode and the reset that completes it; an AMD driver reload):
    /// `pre-apply-mode`.
    pub mode: bool,
    /// What a GPU is divided into changes (instances destroyed or created, the vGPU side, an
    /// AMD compute partition): `pre-apply-config`.
    pub instances: bool,
}

/// What a side's writes are made with, beside the apply's context.
pub(super) struct Writing<'a, 'r> {
    /// The state store (an AMD memory request is recorded in it before the reload).
    pub store: &'a mut dyn StateStore,
    /// How a mode change pending on an NVIDIA GPU is completed.
    pub reset: &'a mut ResetWith<'r>,
    /// The report so far (the resets, the reloads, the warnings).
    pub draft: &'a mut Draft,
}

/// One vendor's side of an apply.
pub(super) trait Side {
    /// The GPUs it names, by address (the hooks' `MXCTL_DEVICES`).
    fn devices(&self) -> Vec<Bdf>;

    /// Whether it divides a GPU (the record's direction; with the pool off, it blocks).
    fn divides(&self) -> bool;

    /// Every GPU of the side read and planned, its plan shown (`Progress`), before any write
    /// of any side; `Err`: refused, and the whole apply is blocked.
    fn preflight(
        &mut self,
        ctx: &mut Ctx<'_, '_>,
        store: &mut dyn StateStore,
        draft: &mut Draft,
    ) -> Result<Result<(), Refusal>, ApplyError>;

    /// The pre-hooks its plan makes due.
    fn due(&self) -> Due;

    /// The GPUs its plan may reset (a mode change the card may keep pending until a reset),
    /// for the reset's group to be checked before any write.
    fn resets(&self) -> Vec<Bdf> {
        Vec::new()
    }

    /// Its writes, then the read-back of every GPU that did not stop (a GPU that stops keeps
    /// its stop; the others go on).
    fn run(&mut self, ctx: &mut Ctx<'_, '_>, on: &mut Writing<'_, '_>) -> Result<(), ApplyError>;

    /// Whether any write was (or may have been) made.
    fn wrote(&self) -> bool;

    /// Each GPU's report with its stop, for the apply's end to give each its outcome.
    fn stops(&mut self) -> Vec<(&mut GpuReport, &mut Option<Stop>)>;

    /// What each GPU is declared to be once the apply writes.
    fn declared(&self) -> Vec<(Bdf, DeclaredGpu)>;

    /// What the record keeps of what it read last of each GPU.
    fn read(&self) -> Vec<(Bdf, GpuRead)>;

    /// Each GPU's report, in its order.
    fn reports(self: Box<Self>) -> Vec<GpuReport>;
}
