//! How an apply ended and what it did: [`ApplyOutcome`] (matched without a catch-all, as a
//! reset's), [`ApplyReport`] with a [`GpuReport`] per GPU. The report serializes to the
//! document of `mxctl --json partition apply`.

use crate::apply::HookRun;
use crate::plan::Impossible;
use host_sync::{HostReason, HostStatus};
use layout_model::HoldingState;
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::time::Duration;
use warm_reset::{ColdRebootReason, ResetReport};

mod failure;
mod gpu;
mod warning;

pub use failure::WriteFailure;
pub use gpu::{AmdWork, GpuReport, GpuWork, NvidiaWork};
pub use warning::ApplyWarning;

gpu_partition_types::token_enum! {
    /// Why an apply was blocked (nothing was written) or failed (the host is between layouts).
    #[non_exhaustive]
    pub enum ApplyReason: "apply reason" {
        /// Another GPU operation holds the host lock.
        LockBusy = "lock_busy",
        /// The pool switch is off and the layout turns MIG on.
        PoolDisabled = "pool_disabled",
        /// The helper is absent, unsafe, or cannot apply.
        HelperUnavailable = "helper_unavailable",
        /// A program a side of the apply runs (`sriov-manage`, `modprobe`) is absent, or one
        /// root may not trust (the detail names it and why).
        ToolUnavailable = "tool_unavailable",
        /// A card did not read (or not whole).
        GpuUnreadable = "gpu_unreadable",
        /// Something uses what the layout would change: processes on the card, a vGPU on an
        /// instance to destroy (named in the detail).
        GpuBusy = "gpu_busy",
        /// The layout cannot be planned on a card (named with the profile in the detail).
        LayoutImpossible = "layout_impossible",
        /// The plan destroys a partition created for an owner (the detail names the GPU
        /// instance and its owner, as xen-api's `GPU_PARTITION_IN_USE` does): nothing is
        /// destroyed for another unless the caller releases that owner's partitions
        /// ([`ApplyOptions::release`](crate::ApplyOptions)).
        PartitionOwned = "partition_owned",
        /// A GPU the caller named is not ours (its ownership is `dynamic` or `external`,
        /// [`gpu_host_probe::Ownership`]): nothing is written, restored or reset on it.
        GpuNotOurs = "gpu_not_ours",
        /// A hook before the writes (`apply-start`, `pre-apply-mode`, `pre-apply-config`) did
        /// not exit 0 (the detail names it and how it ended).
        HookFailed = "hook_failed",
        /// A restore found a card of another model in a declared slot (the detail names the
        /// slot and both models).
        CardChanged = "card_changed",
        /// The helper refused a step (NVML's answer in the detail), or its run failed.
        StepRefused = "step_refused",
        /// The warm reset that completes a mode change was blocked (its reason in the detail).
        ResetBlocked = "reset_blocked",
        /// The MIG mode change was still pending after its reset.
        ModePending = "mode_pending",
        /// An AMD memory partition requested earlier waits for a driver reload, for another
        /// mode than the layout's, while the GPU is in the layout's now: the kernel keeps the
        /// request, and the next reload would carry it out (reload the driver first).
        MemoryRequestPending = "memory_request_pending",
        /// After the mode change the card needed more than instances created.
        DidNotConverge = "did_not_converge",
        /// The read-back differs from the layout (the differences in the report).
        ReadBackDiffers = "read_back_differs",
        /// The caller cancelled the apply ([`ApplyOptions::cancel`](crate::ApplyOptions)):
        /// blocked when nothing was written yet, failed once writes began (a warm reset in
        /// its window is never cut short).
        Cancelled = "cancelled",
    }
}

/// How an apply ended, with its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyOutcome {
    /// Every GPU named is as the layout wants, read back.
    Done,
    /// The layout names no GPU of this host (as mig-parted, one file serves hosts of different
    /// sizes): nothing was read or written, and nothing is declared.
    NothingNamed,
    /// The plan was made and shown; nothing was written.
    DryRun,
    /// Refused before anything was written.
    Blocked(ApplyReason),
    /// Something failed after writes began: the host is between layouts (`entering` or
    /// `leaving` with `layout_failed`); run the apply again once the cause is fixed.
    Failed(ApplyReason),
    /// The warm reset that completes a mode change did not work: cold-reboot the host.
    ColdRebootRequired(ColdRebootReason),
}

impl ApplyOutcome {
    /// The outcome's token.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::NothingNamed => "nothing_named",
            Self::DryRun => "dry_run",
            Self::Blocked(_) => "blocked",
            Self::Failed(_) => "failed",
            Self::ColdRebootRequired(_) => "cold_reboot_required",
        }
    }

    /// The reason's token; `None` when done or a dry run.
    pub fn reason(self) -> Option<&'static str> {
        use gpu_partition_types::Token;
        match self {
            Self::Done | Self::NothingNamed | Self::DryRun => None,
            Self::Blocked(reason) | Self::Failed(reason) => Some(reason.as_str()),
            Self::ColdRebootRequired(reason) => Some(reason.as_str()),
        }
    }
}

impl std::fmt::Display for ApplyOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason() {
            None => f.write_str(self.as_str()),
            Some(reason) => write!(f, "{} ({reason})", self.as_str()),
        }
    }
}

/// The host after the apply, as the sync that ended it classified it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HostAfter {
    /// Its status.
    pub status: HostStatus,
    /// Its reason.
    pub reason: HostReason,
    /// The why, for people.
    pub message: Option<String>,
    /// Whether the cards hold the declared layout, as that sync found them and judged now
    /// (`holds`, `drifted`, `unknown`; `None`: nothing is declared).
    pub declared: Option<HoldingState>,
    /// How the cards differ from the declared layout, as that sync found them (empty unless
    /// `drifted`): after a failed apply, how the host differs from the declaration that still
    /// stands, which a restore brings back.
    pub differences: Vec<layout_model::Difference>,
}

/// How an apply ended and what it did.
///
/// It serializes to the document of `mxctl --json partition apply`: `label`, `outcome`,
/// `reason` and `detail` (`null` when done or a dry run), `impossible` (`{"device",
/// "profile", "kind", "message"}` of a `layout_impossible`, else `null`), `gpus` (each with
/// `device`, `index`, `line` — `null` for a GPU no document named —, `plan`, `steps` and
/// `differences`), `resets` (each reset's own document), `host`
/// (the status after, `null` when none was written), `hooks` (each hook command as it ran:
/// `point`, `command`, its typed end — `end` with `code`, `signal`, `stream`, or `cause` and
/// `message`, as [`gpu_host_probe::run::RunResult`] serializes —, `stdout`, `stderr`,
/// `elapsed_ms`), `warnings` (their messages), `elapsed_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ApplyReport {
    /// The layout's label.
    pub label: String,
    /// How it ended.
    pub outcome: ApplyOutcome,
    /// Why it was blocked or failed, for people (the GPU, the profile, the step, NVML's words);
    /// `None` when done or a dry run.
    pub detail: Option<String>,
    /// The impossible layout that blocked it (`layout_impossible`), as data: the GPU, the
    /// profile, the kind.
    pub impossible: Option<Impossible>,
    /// Each GPU the layout names, in index order.
    pub gpus: Vec<GpuReport>,
    /// The warm resets run to complete mode changes.
    pub resets: Vec<ResetReport>,
    /// Whether the plan reloads the AMD driver (a memory partition changes): once for the host,
    /// whatever number of GPUs and hives.
    pub reload_planned: bool,
    /// How many AMD driver reloads ran.
    pub reloads: u32,
    /// The host's status after, when the apply wrote one.
    pub host: Option<HostAfter>,
    /// Each hook command as it ran, in order.
    pub hooks: Vec<HookRun>,
    /// What did not change the course but a person should know.
    pub warnings: Vec<ApplyWarning>,
    /// How long it took.
    pub elapsed: Duration,
}

/// What an apply's end says of the host, derived from how it ended, its warnings and the host
/// after it: what the last line a run prints says. Never that the layout holds while a GPU of
/// the declaration differs or is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Conclusion {
    /// Every GPU named holds the layout, read back, and so does the host's declaration.
    Holds,
    /// The GPUs written hold the layout, read back, but the host's declared layout does not: a
    /// declared GPU is gone or left alone, or the sync after found another difference (the host
    /// after says which).
    DeclaredDiffers,
    /// The GPUs written hold the layout, read back, but whether the host's declared layout
    /// holds is not known: the sync after did not read every declared GPU, or could not tell
    /// (the host after says why).
    DeclaredUnknown,
    /// The plan was shown; nothing was written.
    DryRun,
    /// Nothing was changed (blocked).
    NothingChanged,
    /// The host is between layouts (failed).
    BetweenLayouts,
    /// A warm reset did not work: the host must be cold-rebooted.
    ColdReboot,
    /// The layout names no GPU of this host: nothing was done.
    NothingNamed,
}

impl Conclusion {
    /// Its token (`conclusion` in `--json`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Holds => "holds",
            Self::DeclaredDiffers => "declared_differs",
            Self::DeclaredUnknown => "declared_unknown",
            Self::DryRun => "dry_run",
            Self::NothingChanged => "nothing_changed",
            Self::BetweenLayouts => "between_layouts",
            Self::ColdReboot => "cold_reboot",
            Self::NothingNamed => "nothing_named",
        }
    }
}

impl std::fmt::Display for Conclusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Holds => "the layout holds, read back",
            Self::DeclaredDiffers => {
                "the GPUs written hold the layout, read back; the declared layout does not hold \
                 (the host line above says why)"
            }
            Self::DeclaredUnknown => {
                "the GPUs written hold the layout, read back; whether the declared layout holds \
                 is not known (the host line above says why)"
            }
            Self::DryRun => "dry run: nothing was written",
            Self::NothingChanged => "nothing was changed",
            Self::BetweenLayouts => "the host is between layouts: fix the cause and apply again",
            Self::ColdReboot => "a warm reset did not work: cold-reboot this host",
            Self::NothingNamed => {
                "the layout names no GPU on this host now: nothing was read or written"
            }
        })
    }
}

impl ApplyReport {
    /// What its end says of the host ([`Conclusion`]).
    pub fn conclusion(&self) -> Conclusion {
        match self.outcome {
            ApplyOutcome::Done => {
                let left_alone = self
                    .warnings
                    .iter()
                    .any(|warning| matches!(warning, ApplyWarning::DeclaredAbsent { .. }));
                let host_differs = self.host.as_ref().is_some_and(|host| {
                    matches!(
                        host.reason,
                        HostReason::LayoutDrifted
                            | HostReason::StateLost
                            | HostReason::LayoutFailed
                    )
                });
                // Holds only as the closing sync judged the declaration: never by default.
                let declared = self.host.as_ref().and_then(|host| host.declared);
                match declared {
                    _ if left_alone || host_differs => Conclusion::DeclaredDiffers,
                    Some(HoldingState::Holds) => Conclusion::Holds,
                    Some(HoldingState::Drifted) => Conclusion::DeclaredDiffers,
                    Some(HoldingState::Unknown) | None => Conclusion::DeclaredUnknown,
                }
            }
            ApplyOutcome::NothingNamed => Conclusion::NothingNamed,
            ApplyOutcome::DryRun => Conclusion::DryRun,
            ApplyOutcome::Blocked(_) => Conclusion::NothingChanged,
            ApplyOutcome::Failed(_) => Conclusion::BetweenLayouts,
            ApplyOutcome::ColdRebootRequired(_) => Conclusion::ColdReboot,
        }
    }

    /// How many writes were made, over every GPU, and the driver reloads.
    pub fn writes(&self) -> usize {
        self.gpus.iter().map(GpuReport::writes).sum::<usize>()
            + usize::try_from(self.reloads).unwrap_or(usize::MAX)
    }
}

/// How an apply ends: its outcome and why, set by each end of the run (never assumed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct End {
    pub outcome: ApplyOutcome,
    pub detail: Option<String>,
}

impl End {
    pub fn new(outcome: ApplyOutcome, detail: impl Into<Option<String>>) -> Self {
        Self {
            outcome,
            detail: detail.into(),
        }
    }

    pub fn blocked(reason: ApplyReason, detail: impl Into<String>) -> Self {
        Self::new(ApplyOutcome::Blocked(reason), Some(detail.into()))
    }
}

/// An apply's report while it runs: everything but how it ended, which only an [`End`] gives
/// ([`Draft::finish`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Draft {
    pub label: String,
    pub impossible: Option<Impossible>,
    pub gpus: Vec<GpuReport>,
    pub resets: Vec<ResetReport>,
    pub reload_planned: bool,
    pub reloads: u32,
    pub host: Option<HostAfter>,
    pub hooks: Vec<HookRun>,
    pub warnings: Vec<ApplyWarning>,
}

impl Draft {
    pub fn new(label: &str) -> Self {
        Self {
            label: label.to_owned(),
            ..Self::default()
        }
    }

    /// The report of the apply that ended so, after `elapsed`.
    pub fn finish(self, end: End, elapsed: Duration) -> ApplyReport {
        ApplyReport {
            label: self.label,
            outcome: end.outcome,
            detail: end.detail,
            impossible: self.impossible,
            gpus: self.gpus,
            resets: self.resets,
            reload_planned: self.reload_planned,
            reloads: self.reloads,
            host: self.host,
            hooks: self.hooks,
            warnings: self.warnings,
            elapsed,
        }
    }
}

impl Serialize for ApplyReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut report = serializer.serialize_struct("ApplyReport", 15)?;
        report.serialize_field("label", &self.label)?;
        report.serialize_field("outcome", self.outcome.as_str())?;
        report.serialize_field("reason", &self.outcome.reason())?;
        report.serialize_field("detail", &self.detail)?;
        report.serialize_field("impossible", &self.impossible)?;
        report.serialize_field("gpus", &self.gpus)?;
        report.serialize_field("resets", &self.resets)?;
        report.serialize_field("reload_planned", &self.reload_planned)?;
        report.serialize_field("driver_reloads", &self.reloads)?;
        report.serialize_field("host", &self.host)?;
        report.serialize_field("hooks", &self.hooks)?;
        report.serialize_field("warnings", &self.warnings)?;
        report.serialize_field("conclusion", self.conclusion().as_str())?;
        report.serialize_field(
            "elapsed_ms",
            &u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        )?;
        report.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A done apply whose closing sync left the host active (ready), the declaration as given.
    fn done(declared: Option<HoldingState>) -> ApplyReport {
        let mut draft = Draft::new("all-balanced");
        draft.host = Some(HostAfter {
            status: HostStatus::Active,
            reason: HostReason::Ready,
            message: None,
            declared,
            differences: Vec::new(),
        });
        draft.finish(End::new(ApplyOutcome::Done, None), Duration::ZERO)
    }

    #[test]
    fn a_done_apply_concludes_holds_only_when_the_closing_sync_found_the_declaration_holding() {
        let concluded: Vec<Conclusion> = [
            Some(HoldingState::Holds),
            Some(HoldingState::Drifted),
            Some(HoldingState::Unknown),
            None,
        ]
        .into_iter()
        .map(|declared| done(declared).conclusion())
        .collect();
        assert_eq!(
            concluded,
            [
                Conclusion::Holds,
                Conclusion::DeclaredDiffers,
                Conclusion::DeclaredUnknown,
                Conclusion::DeclaredUnknown,
            ]
        );
    }
}
