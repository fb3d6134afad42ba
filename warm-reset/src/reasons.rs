//! Why a reset ends as it does: the reason tokens of the `mxctl` contract.

gpu_partition_types::token_enum! {
    /// Why a reset did not start; nothing was changed.
    pub enum BlockedReason: "blocked reason" {
        /// Not running as root.
        NotRoot = "not_root",
        /// No `metax` line in `/proc/modules`.
        DriverNotLoaded = "driver_not_loaded",
        /// The `metax` use count is not 0 (or does not read).
        DriverInUse = "driver_in_use",
        /// `mx-smi`, the kernel driver or the BIOS is older than the guide asks.
        DriverTooOld = "driver_too_old",
        /// The process section of `mx-smi` lists processes.
        GpuBusy = "gpu_busy",
        /// The ID names no GPU of `mx-smi -L`.
        UnknownDevice = "unknown_device",
        /// The kernel log cannot be opened or read: the reset could not be verified.
        KernelLogUnreadable = "kernel_log_unreadable",
        /// The journal records a reset still inside its window.
        ResetInFlight = "reset_in_flight",
        /// Another GPU operation holds the host lock.
        LockBusy = "lock_busy",
        /// `mx-smi` is absent, is not MetaX's, or does not answer as expected.
        MxSmiUnavailable = "mx_smi_unavailable",
    }
}

gpu_partition_types::token_enum! {
    /// Why the host must be cold-rebooted after a reset.
    pub enum ColdRebootReason: "cold-reboot reason" {
        /// `mx-smi -r` did not end within the window (it was killed).
        ResetHung = "reset_hung",
        /// `mx-smi -r` failed, or exited 0 with output that says error or fail.
        ResetError = "reset_error",
        /// A GPU listed before the reset is absent after it.
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
