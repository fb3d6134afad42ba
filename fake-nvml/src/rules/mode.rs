//! The MIG mode and what ends a device's instances: a mode change, a GPU reset, a reboot.

use super::sriov;
use crate::scenario::{Device, MigMode, MigModeAtBoot, MigModeChange};

/// Why `nvmlDeviceSetMigMode` changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MigModeError {
    /// The card has no MIG mode: the call itself answers `NVML_ERROR_NOT_SUPPORTED`.
    #[error("the card has no MIG mode")]
    NotSupported,
    /// Processes hold the card: the call answers, its activation status is `NVML_ERROR_IN_USE`.
    #[error("processes hold the card")]
    Held,
    /// MIG off with GPU instances left: the call answers, its activation status is
    /// `NVML_ERROR_IN_USE`.
    #[error("GPU instances are left")]
    InstancesLeft,
    /// The card has SR-IOV virtual functions enabled: the call answers, its activation status
    /// is `NVML_ERROR_IN_USE` ([`sriov`](super::sriov)).
    #[error("virtual functions are enabled")]
    VfsEnabled,
}

/// `nvmlDeviceSetMigMode`: with clients, or MIG off asked with instances left, nothing changes
/// (the activation is `NVML_ERROR_IN_USE`); a device whose change needs a reset
/// (`"mig_mode_change": "reset"`, Ampere) keeps it pending; otherwise (Hopper and later) it
/// takes effect at once.
pub(crate) fn set_mig_mode(device: &mut Device, enabled: bool) -> Result<(), MigModeError> {
    let MigMode::Mode { current, .. } = device.mig_mode else {
        return Err(MigModeError::NotSupported);
    };
    if !device.clients.is_empty() {
        return Err(MigModeError::Held);
    }
    if sriov::vfs_enabled(device) && u32::from(enabled) != current {
        return Err(MigModeError::VfsEnabled);
    }
    if !enabled && !device.gpu_instances.is_empty() {
        return Err(MigModeError::InstancesLeft);
    }
    let wanted = u32::from(enabled);
    device.mig_mode = match device.mig_mode_change {
        MigModeChange::Immediate => MigMode::Mode {
            current: wanted,
            pending: wanted,
        },
        MigModeChange::Reset => MigMode::Mode {
            current,
            pending: wanted,
        },
    };
    Ok(())
}

/// What a GPU reset does to the device: a pending mode becomes current, and every instance is
/// gone (with the vGPUs placed on them).
pub fn gpu_reset(device: &mut Device) {
    if let MigMode::Mode { pending, .. } = device.mig_mode {
        device.mig_mode = MigMode::Mode {
            current: pending,
            pending,
        };
    }
    device.gpu_instances.clear();
    device.vgpus.retain(|vgpu| vgpu.gpu_instance_id.is_none());
    sriov::after_gpu_reset(device);
}

/// What a reboot (or a driver reload) does to the device: GPU instances never survive (nor the
/// vGPUs and processes on it); the MIG mode survives where the part keeps it (Ampere: the
/// pending mode then holds) and is off where the driver held it (Hopper and later).
pub fn reboot(device: &mut Device) {
    let at_boot = device
        .mig_mode_at_boot
        .unwrap_or_else(|| device.mig_mode_change.reboot_default());
    if let MigMode::Mode { pending, .. } = device.mig_mode {
        let mode = match at_boot {
            MigModeAtBoot::Kept => pending,
            MigModeAtBoot::Disabled => 0,
        };
        device.mig_mode = MigMode::Mode {
            current: mode,
            pending: mode,
        };
    }
    device.gpu_instances.clear();
    device.vgpus.clear();
    device.clients.clear();
    sriov::after_reboot(device);
}
