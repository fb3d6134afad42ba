//! Why a reset ends as it does: the reason tokens of the `mxctl` contract.

use gpu_partition_types::Token;

gpu_partition_types::token_enum! {
    /// Why a reset did not start; nothing was changed.
    #[non_exhaustive]
    pub enum BlockedReason: "blocked reason" {
        /// Not running as root.
        NotRoot = "not_root",
        /// No `metax` line in `/proc/modules`; or an AMD GPU of the group is not bound to
        /// `amdgpu`.
        DriverNotLoaded = "driver_not_loaded",
        /// The `metax` use count is not 0 (or does not read); or a PCI function is bound to a
        /// host driver (not a stub such as `vfio-pci`).
        DriverInUse = "driver_in_use",
        /// `mx-smi`, the kernel driver or the BIOS is older than the guide asks.
        DriverTooOld = "driver_too_old",
        /// Processes use the GPUs (the process section of `mx-smi`; holders of a device file;
        /// `nvidia-smi`'s compute apps, or its reset refused as in use).
        GpuBusy = "gpu_busy",
        /// The ID names no device of the host (or its sysfs entry does not read).
        UnknownDevice = "unknown_device",
        /// The device offers no reset method (`reset_method` empty or absent).
        ResetUnsupported = "reset_unsupported",
        /// The reset would touch another device that is in use (named in the detail).
        GroupInUse = "group_in_use",
        /// The kernel log cannot be opened or read: the reset could not be verified.
        KernelLogUnreadable = "kernel_log_unreadable",
        /// The journal records a reset still inside its window.
        ResetInFlight = "reset_in_flight",
        /// A warm reset of this boot left a device of the group needing a cold reboot (named in
        /// the detail): none touches it again until the host is cold-rebooted.
        ColdRebootPending = "cold_reboot_pending",
        /// The group takes a GPU that is not ours (its ownership another agent's): nothing is
        /// reset.
        GpuNotOurs = "gpu_not_ours",
        /// Another GPU operation holds the host lock.
        LockBusy = "lock_busy",
        /// `mx-smi` is absent, is not MetaX's, or does not answer as expected.
        MxSmiUnavailable = "mx_smi_unavailable",
        /// `nvidia-smi` is absent or does not answer as expected.
        NvidiaSmiUnavailable = "nvidia_smi_unavailable",
        /// `amd-smi` is absent or does not answer as expected.
        AmdSmiUnavailable = "amd_smi_unavailable",
        /// A program the reset would run (`mx-smi`, `nvidia-smi`, `amd-smi`, a link command, the
        /// shell that writes `reset`) is one another user could have written: nothing was run.
        UnsafeProgram = "unsafe_program",
    }
}

gpu_partition_types::token_enum! {
    /// Why the host must be cold-rebooted after a reset.
    pub enum ColdRebootReason: "cold-reboot reason" {
        /// The reset did not end within the window (it was killed).
        ResetHung = "reset_hung",
        /// The reset failed, or said so.
        ResetError = "reset_error",
        /// A device of before the reset is absent after it (or reads `0xffff`).
        GpuMissing = "gpu_missing",
        /// A GPU is present but not `Available` when the window ends.
        GpuUnavailable = "gpu_unavailable",
        /// The kernel logged errors after the reset.
        KernelErrors = "kernel_errors",
        /// Node IDs, PCI addresses or UUIDs changed, or a MetaXLink (`MX` in `mx-smi topo -m`)
        /// did not come back.
        TopologyWrong = "topology_wrong",
    }
}

gpu_partition_types::token_enum! {
    /// How a reset ended, as a token (`outcome` in `--json`); [`ResetOutcome`] carries the
    /// reason with it.
    enum OutcomeToken: "reset outcome" {
        /// Reset and verified.
        Done = "done",
        /// The preflight passed; nothing was reset.
        DryRun = "dry_run",
        /// Nothing was changed.
        Blocked = "blocked",
        /// The host must be cold-rebooted.
        ColdRebootRequired = "cold_reboot_required",
    }
}

/// How a reset ended, with its reason where it has one: the four ends of the `mxctl` contract,
/// matched without a catch-all.
///
/// It serializes (and reads back) as two members, `"outcome"` and `"reason"` (`""` when done
/// or a dry run), the form of `mxctl --json reset`, of the journal and of a plan step's report:
/// `{"outcome": "blocked", "reason": "gpu_busy"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "OutcomeWire", try_from = "OutcomeWire")]
pub enum ResetOutcome {
    /// Reset and verified.
    Done,
    /// The preflight passed; nothing was reset.
    DryRun,
    /// Nothing was changed.
    Blocked(BlockedReason),
    /// The host must be cold-rebooted.
    ColdRebootRequired(ColdRebootReason),
}

impl ResetOutcome {
    /// The outcome's token: `done`, `dry_run`, `blocked`, `cold_reboot_required`.
    pub fn as_str(self) -> &'static str {
        self.token().as_str()
    }

    fn token(self) -> OutcomeToken {
        match self {
            Self::Done => OutcomeToken::Done,
            Self::DryRun => OutcomeToken::DryRun,
            Self::Blocked(_) => OutcomeToken::Blocked,
            Self::ColdRebootRequired(_) => OutcomeToken::ColdRebootRequired,
        }
    }

    /// Why it was blocked or needs a cold reboot; `None` when done or a dry run.
    pub fn reason(self) -> Option<ResetReason> {
        match self {
            Self::Done | Self::DryRun => None,
            Self::Blocked(reason) => Some(ResetReason::Blocked(reason)),
            Self::ColdRebootRequired(reason) => Some(ResetReason::ColdReboot(reason)),
        }
    }

    /// The reason's token, `""` when there is none.
    pub fn reason_str(self) -> &'static str {
        self.reason().map_or("", ResetReason::as_str)
    }

    /// Whether anything was reset (done, or needing a cold reboot after the reset).
    pub fn reset_issued(self) -> bool {
        match self {
            Self::Done | Self::ColdRebootRequired(_) => true,
            Self::DryRun | Self::Blocked(_) => false,
        }
    }
}

/// The outcome and its reason, for people: `done`, `blocked (gpu_busy)`.
impl std::fmt::Display for ResetOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason() {
            Some(reason) => write!(f, "{} ({reason})", self.as_str()),
            None => f.write_str(self.as_str()),
        }
    }
}

impl From<BlockedReason> for ResetOutcome {
    fn from(reason: BlockedReason) -> Self {
        Self::Blocked(reason)
    }
}

impl From<ColdRebootReason> for ResetOutcome {
    fn from(reason: ColdRebootReason) -> Self {
        Self::ColdRebootRequired(reason)
    }
}

/// The wire form of [`ResetOutcome`].
#[derive(serde::Serialize, serde::Deserialize)]
struct OutcomeWire {
    outcome: OutcomeToken,
    #[serde(default)]
    reason: String,
}

impl From<ResetOutcome> for OutcomeWire {
    fn from(outcome: ResetOutcome) -> Self {
        Self {
            outcome: outcome.token(),
            reason: outcome.reason_str().to_owned(),
        }
    }
}

/// An outcome and a reason that do not go together, or a reason this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a reset that ended `{outcome}` cannot have the reason {reason:?}")]
pub struct BadOutcome {
    /// The outcome's token.
    pub outcome: &'static str,
    /// The reason as written.
    pub reason: String,
}

impl TryFrom<OutcomeWire> for ResetOutcome {
    type Error = BadOutcome;

    fn try_from(wire: OutcomeWire) -> Result<Self, BadOutcome> {
        let bad = || BadOutcome {
            outcome: wire.outcome.as_str(),
            reason: wire.reason.clone(),
        };
        let none = wire.reason.is_empty();
        match wire.outcome {
            OutcomeToken::Done if none => Ok(Self::Done),
            OutcomeToken::DryRun if none => Ok(Self::DryRun),
            OutcomeToken::Blocked => BlockedReason::from_token(&wire.reason)
                .map(Self::Blocked)
                .ok_or_else(bad),
            OutcomeToken::ColdRebootRequired => ColdRebootReason::from_token(&wire.reason)
                .map(Self::ColdRebootRequired)
                .ok_or_else(bad),
            OutcomeToken::Done | OutcomeToken::DryRun => Err(bad()),
        }
    }
}

/// Why a reset did not end done: blocked before it, or a cold reboot after it. A token only
/// where it is written out ([`ResetReason::as_str`], `Display`). (Named apart from a host's
/// stored reason, `host_sync::StoredReason`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResetReason {
    /// Nothing was changed.
    Blocked(BlockedReason),
    /// The host must be cold-rebooted.
    ColdReboot(ColdRebootReason),
}

impl ResetReason {
    /// The reason's token.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blocked(reason) => reason.as_str(),
            Self::ColdReboot(reason) => reason.as_str(),
        }
    }

    /// The reason a token names (blocked and cold-reboot tokens never share a spelling).
    pub fn from_token(text: &str) -> Option<Self> {
        BlockedReason::from_token(text)
            .map(Self::Blocked)
            .or_else(|| ColdRebootReason::from_token(text).map(Self::ColdReboot))
    }
}

impl From<BlockedReason> for ResetReason {
    fn from(reason: BlockedReason) -> Self {
        Self::Blocked(reason)
    }
}

impl From<ColdRebootReason> for ResetReason {
    fn from(reason: ColdRebootReason) -> Self {
        Self::ColdReboot(reason)
    }
}

impl std::fmt::Display for ResetReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_reads_back_from_its_token() {
        let blocked = BlockedReason::ALL.iter().map(|r| ResetReason::from(*r));
        let cold = ColdRebootReason::ALL.iter().map(|r| ResetReason::from(*r));
        for reason in blocked.chain(cold) {
            assert_eq!(
                ResetReason::from_token(reason.as_str()),
                Some(reason),
                "{reason}"
            );
        }
    }

    #[test]
    fn every_outcome_reads_back_from_its_two_members() -> Result<(), serde_json::Error> {
        let outcomes = [ResetOutcome::Done, ResetOutcome::DryRun]
            .into_iter()
            .chain(BlockedReason::ALL.iter().map(|r| ResetOutcome::Blocked(*r)))
            .chain(
                ColdRebootReason::ALL
                    .iter()
                    .map(|r| ResetOutcome::ColdRebootRequired(*r)),
            );
        for outcome in outcomes {
            let json = serde_json::to_value(outcome)?;
            assert_eq!(json["outcome"], outcome.as_str());
            assert_eq!(json["reason"], outcome.reason_str());
            assert_eq!(serde_json::from_value::<ResetOutcome>(json)?, outcome);
        }
        Ok(())
    }

    #[test]
    fn an_outcome_with_a_reason_of_another_outcome_does_not_read() {
        for (outcome, reason) in [
            ("done", "gpu_busy"),
            ("blocked", "reset_hung"),
            ("blocked", ""),
            ("cold_reboot_required", "lock_busy"),
            ("dry_run", "not_root"),
        ] {
            let json = serde_json::json!({"outcome": outcome, "reason": reason});
            assert!(
                serde_json::from_value::<ResetOutcome>(json).is_err(),
                "{outcome} {reason}"
            );
        }
    }
}
