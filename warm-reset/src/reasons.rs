//! Why a reset ends as it does: the reason tokens of the `mxctl` contract.

use gpu_partition_types::Token;

gpu_partition_types::token_enum! {
    /// Why a reset did not start; nothing was changed.
    pub enum BlockedReason: "blocked reason" {
        /// Not running as root.
        NotRoot = "not_root",
        /// No `metax` line in `/proc/modules`.
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
        /// Another GPU operation holds the host lock.
        LockBusy = "lock_busy",
        /// `mx-smi` is absent, is not MetaX's, or does not answer as expected.
        MxSmiUnavailable = "mx_smi_unavailable",
        /// `nvidia-smi` is absent or does not answer as expected.
        NvidiaSmiUnavailable = "nvidia_smi_unavailable",
        /// A program the reset would run (`mx-smi`, `nvidia-smi`, a link command, the shell that
        /// writes `reset`) is one another user could have written: nothing was run.
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
    /// How a reset ended, as `--json` spells it.
    pub enum OutcomeKind: "reset outcome" {
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

/// Why a reset did not end done: blocked before it, or a cold reboot after it. Typed here; a
/// token only where it is written out ([`Reason::as_str`], `Display`, serde).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// Nothing was changed.
    Blocked(BlockedReason),
    /// The host must be cold-rebooted.
    ColdReboot(ColdRebootReason),
}

impl Reason {
    /// The reason's token.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blocked(reason) => reason.as_str(),
            Self::ColdReboot(reason) => reason.as_str(),
        }
    }

    /// The outcome a reason belongs to.
    pub fn outcome(self) -> OutcomeKind {
        match self {
            Self::Blocked(_) => OutcomeKind::Blocked,
            Self::ColdReboot(_) => OutcomeKind::ColdRebootRequired,
        }
    }

    /// The reason a token names (blocked and cold-reboot tokens never share a spelling).
    pub fn from_token(text: &str) -> Option<Self> {
        BlockedReason::from_token(text)
            .map(Self::Blocked)
            .or_else(|| ColdRebootReason::from_token(text).map(Self::ColdReboot))
    }
}

impl From<BlockedReason> for Reason {
    fn from(reason: BlockedReason) -> Self {
        Self::Blocked(reason)
    }
}

impl From<ColdRebootReason> for Reason {
    fn from(reason: ColdRebootReason) -> Self {
        Self::ColdReboot(reason)
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reason that may be absent, written as its token or as `""` when there is none (the form
/// the step reports and `--json` have always had).
pub(crate) mod token_or_empty {
    use super::Reason;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        reason: &Option<Reason>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(reason.map_or("", Reason::as_str))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Reason>, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.is_empty() {
            return Ok(None);
        }
        Reason::from_token(&text)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("unknown reset reason {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_reads_back_from_its_token() {
        let blocked = BlockedReason::ALL.iter().map(|r| Reason::from(*r));
        let cold = ColdRebootReason::ALL.iter().map(|r| Reason::from(*r));
        for reason in blocked.chain(cold) {
            assert_eq!(
                Reason::from_token(reason.as_str()),
                Some(reason),
                "{reason}"
            );
        }
    }
}
