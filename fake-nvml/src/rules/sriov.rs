//! What NVIDIA's vGPU manager does with a card's SR-IOV virtual functions, as the fake models
//! it. Every rule names its source (the captures and notes are in the workspace's
//! `host-sync/tests/samples/vgpu/README.md`):
//!
//! - `sriov-manage -e` enables every VF the card has (it writes `sriov_totalvfs` into
//!   `sriov_numvfs`, never a chosen count) through a rebind of the GPU that wipes every GPU
//!   instance and clears heterogeneous vGPU mode (bigstack cubecos PR 1223, `ApplyMigVgpu`,
//!   `EnableHeterogeneousVgpuMode`); it says `GPU at <bdf> already has VFs enabled.` and does
//!   nothing when they are (NVIDIA's script; cubecos confirmed it on hardware); it cannot take
//!   the GPU's unbind lock while another process holds the GPU (`Cannot obtain unbindLock`,
//!   cubecos PR 1141). `-d` disables them, taking the GPU instances and every VF's type with
//!   them (cubecos `TeardownSriov`).
//! - A VF's `current_vgpu_type`: a type ID creates a vGPU when the card can create that type
//!   now, else the write fails with `EIO` (`NVRM: Failed to add vgpu create request: 0x38`: a
//!   MIG-backed type with no fitting GPU instance, cubecos `ApplyMigVgpu`); a type on a VF that
//!   has one, or `0` on a VF that has none, is `EPERM` (NVIDIA's vendor-VFIO source, 2017–2022).
//!   A MIG-backed vGPU sits on a GPU instance of its profile holding fewer vGPUs than the type's
//!   "max instances per GPU instance" (1 where no source gives it), all of one type;
//!   `placement_id` is its place inside the GPU instance (cubecos #312).
//! - What a VF's `creatable_vgpu_types` lists: what the card can create now
//!   ([`crate::rules::creatable_vgpu_types`], counting the vGPUs on VFs); on a VF that has a vGPU,
//!   nothing — no capture shows that file there, and nothing may be written to such a VF but `0`.
//! - MIG mode cannot change while VFs exist (`nvidia-smi -mig 0` answers "In use by another
//!   client", NVML's `IN_USE`: cubecos `TeardownMigVgpu`): [`crate::rules::set_mig_mode`].
//! - A reboot or a driver reload leaves no VF (NVIDIA's vGPU user guide, quoted in cozystack
//!   PR 70).

use super::device::mig_on;
use super::vgpu::{creatable_ids, gpu_instance_for};
use crate::scenario::{Device, VirtualFunction};

/// What a run of `sriov-manage` did to a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Managed {
    /// `-e`: every VF enabled; no GPU instance left.
    Enabled,
    /// `-e`: the VFs were enabled already; nothing changed (`GPU at <bdf> already has VFs
    /// enabled.`).
    AlreadyEnabled,
    /// `-d`: every VF gone, with the GPU instances.
    Disabled,
    /// `-d`: there were none (`GPU at <bdf> already has VFs disabled.`).
    AlreadyDisabled,
    /// The card has no VFs: nothing done, no message, exit 0 (NVIDIA's script).
    NoSriov,
    /// `-e` failed as at boot (the scenario's `enable_failures`): exit 1.
    FailedAsAtBoot,
    /// `-e` exited 0 and enabled nothing (the scenario's `silent_enable_failures`).
    SilentlyFailed,
    /// Another process holds the GPU: the unbind lock could not be taken, exit 1.
    Held,
}

/// `sriov-manage -e` on `device`.
pub(crate) fn enable_vfs(device: &mut Device) -> Managed {
    let held = !device.clients.is_empty();
    let Some(sriov) = device.sriov.as_mut() else {
        return Managed::NoSriov;
    };
    if !sriov.vfs.is_empty() {
        return Managed::AlreadyEnabled;
    }
    if held {
        return Managed::Held;
    }
    if sriov.enable_failures > 0 {
        sriov.enable_failures -= 1;
        return Managed::FailedAsAtBoot;
    }
    if sriov.silent_enable_failures > 0 {
        sriov.silent_enable_failures -= 1;
        return Managed::SilentlyFailed;
    }
    sriov.vfs = (0..sriov.total_vfs)
        .map(|_| VirtualFunction::default())
        .collect();
    rebind(device);
    Managed::Enabled
}

/// `sriov-manage -d` on `device`.
pub(crate) fn disable_vfs(device: &mut Device) -> Managed {
    let held = !device.clients.is_empty();
    let Some(sriov) = device.sriov.as_mut() else {
        return Managed::NoSriov;
    };
    if sriov.vfs.is_empty() {
        return Managed::AlreadyDisabled;
    }
    if held {
        return Managed::Held;
    }
    sriov.vfs.clear();
    rebind(device);
    Managed::Disabled
}

/// What the rebind of `sriov-manage` leaves: no GPU instance (nor a vGPU on one), and
/// heterogeneous mode off where the card has it.
fn rebind(device: &mut Device) {
    device.gpu_instances.clear();
    device.vgpus.retain(|vgpu| vgpu.gpu_instance_id.is_none());
    if device.vgpu_heterogeneous_mode.is_some() {
        device.vgpu_heterogeneous_mode = Some(false);
    }
}

/// `nvmlDeviceSetVgpuHeterogeneousMode`: the mode set where the card has the setting
/// (`NVML_ERROR_NOT_SUPPORTED` where it has none), and never in MIG mode: from R575 the call
/// answers `NVML_ERROR_NOT_SUPPORTED` there (NVML API Reference, change log, "Changes between
/// v570 Update and v575"; a GPU instance has its own mode,
/// `nvmlGpuInstanceSetVgpuHeterogeneousMode`). The fake applies that rule to every driver it
/// emulates. `sriov-manage -e` clears the mode ([`enable`]).
pub(crate) fn set_heterogeneous_mode(device: &mut Device, enabled: bool) -> Result<(), ()> {
    if device.vgpu_heterogeneous_mode.is_none() || mig_on(device) {
        return Err(());
    }
    device.vgpu_heterogeneous_mode = Some(enabled);
    Ok(())
}

/// Whether `device` has VFs enabled.
pub(crate) fn vfs_enabled(device: &Device) -> bool {
    device
        .sriov
        .as_ref()
        .is_some_and(|sriov| !sriov.vfs.is_empty())
}

/// Why a write of a VF's `current_vgpu_type` fails, as the driver answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TypeWriteError {
    /// No such VF (the file is not there).
    #[error("no such virtual function")]
    NoVf,
    /// A type on a VF that has one, or `0` on a VF that has none.
    #[error("EPERM: the VF has a vGPU already, or none to remove")]
    NotPermitted,
    /// The card cannot create the type now.
    #[error("EIO (NVRM: Failed to add vgpu create request: 0x38)")]
    CannotCreate,
}

impl TypeWriteError {
    /// The errno a write answers.
    pub(crate) fn errno(self) -> i32 {
        match self {
            Self::NoVf => nix::libc::ENOENT,
            Self::NotPermitted => nix::libc::EPERM,
            Self::CannotCreate => nix::libc::EIO,
        }
    }
}

/// `id` written to VF `index`'s `current_vgpu_type` (`0`: its vGPU removed).
pub(crate) fn write_type(device: &mut Device, index: u32, id: u32) -> Result<(), TypeWriteError> {
    let at = usize::try_from(index).map_err(|_| TypeWriteError::NoVf)?;
    let has = device
        .sriov
        .as_ref()
        .and_then(|sriov| sriov.vfs.get(at))
        .ok_or(TypeWriteError::NoVf)?
        .type_id
        .is_some();
    if id == 0 {
        if !has {
            return Err(TypeWriteError::NotPermitted);
        }
        set_vf(device, at, VirtualFunction::default());
        return Ok(());
    }
    if has {
        return Err(TypeWriteError::NotPermitted);
    }
    if !creatable_ids(device).contains(&id) {
        return Err(TypeWriteError::CannotCreate);
    }
    let profile = device
        .vgpu_types
        .iter()
        .find(|kind| kind.id == id)
        .and_then(|kind| kind.gpu_instance_profile_id);
    let placed = match profile {
        None => VirtualFunction {
            type_id: Some(id),
            gpu_instance_id: None,
            placement_id: None,
        },
        Some(_) => {
            let (gpu_instance, before) =
                gpu_instance_for(device, id).ok_or(TypeWriteError::CannotCreate)?;
            VirtualFunction {
                type_id: Some(id),
                gpu_instance_id: Some(gpu_instance),
                placement_id: Some(before),
            }
        }
    };
    set_vf(device, at, placed);
    Ok(())
}

fn set_vf(device: &mut Device, at: usize, vf: VirtualFunction) {
    if let Some(slot) = device
        .sriov
        .as_mut()
        .and_then(|sriov| sriov.vfs.get_mut(at))
    {
        *slot = vf;
    }
}

/// `text` written to the card's `sriov_numvfs` while it is bound to `nvidia`, answered as the
/// kernel's `sriov_numvfs_store` (`drivers/pci/iov.c`) answers it, in its order: not a number
/// as `kstrtou16(buf, 0, …)` reads one is `EINVAL`; more than `sriov_totalvfs` is `ERANGE`; the
/// count it has is no change; any other is `ENOENT`, the store's answer for a driver without
/// `sriov_configure`. NVIDIA's driver refuses a raw write on a vGPU PF (bigstack cubecos,
/// confirmed on hardware) and `sriov-manage` binds the PF to `pci-pf-stub` before it writes the
/// file ([`enable_vfs`]); no source gives the errno, and `ENOENT` is the store's for that case
/// (the workspace's `host-sync/tests/samples/vgpu/README.md`, §1). A card without SR-IOV has no
/// such file (`ENOENT`).
pub(crate) fn write_numvfs(device: &Device, text: &str) -> Result<(), i32> {
    let sriov = device.sriov.as_ref().ok_or(nix::libc::ENOENT)?;
    let count = kstrtou16(text).ok_or(nix::libc::EINVAL)?;
    if u32::from(count) > sriov.total_vfs {
        return Err(nix::libc::ERANGE);
    }
    if usize::from(count) == sriov.vfs.len() {
        return Ok(());
    }
    Err(nix::libc::ENOENT)
}

/// A number as the kernel's `kstrtou16(text, 0, …)` reads it: one trailing newline allowed, a
/// leading `+`, then `0x` hexadecimal, `0` octal or decimal; anything else, or more than
/// `u16::MAX`, is none.
fn kstrtou16(text: &str) -> Option<u16> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let text = text.strip_prefix('+').unwrap_or(text);
    let (digits, radix) = match text.get(..2) {
        Some("0x" | "0X") => (&text[2..], 16),
        _ if text.len() > 1 && text.starts_with('0') => (&text[1..], 8),
        _ => (text, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u16::from_str_radix(digits, radix).ok()
}

/// The type IDs VF `index`'s `creatable_vgpu_types` lists now.
pub(crate) fn creatable_on_vf(device: &Device, index: usize) -> Vec<u32> {
    let has = device
        .sriov
        .as_ref()
        .and_then(|sriov| sriov.vfs.get(index))
        .is_some_and(|vf| vf.type_id.is_some());
    if has {
        Vec::new()
    } else {
        creatable_ids(device)
    }
}

/// What a GPU reset leaves of the VFs: a vGPU on a GPU instance goes with it.
pub(crate) fn after_gpu_reset(device: &mut Device) {
    if let Some(sriov) = device.sriov.as_mut() {
        for vf in &mut sriov.vfs {
            if vf.gpu_instance_id.is_some() {
                *vf = VirtualFunction::default();
            }
        }
    }
}

/// What a reboot leaves: no VF, and heterogeneous mode off where the card has it (runtime
/// state, which even `sriov-manage -e` clears: bigstack cubecos PR 1223 sets it again after
/// every enable).
pub(crate) fn after_reboot(device: &mut Device) {
    if let Some(sriov) = device.sriov.as_mut() {
        sriov.vfs.clear();
    }
    if device.vgpu_heterogeneous_mode.is_some() {
        device.vgpu_heterogeneous_mode = Some(false);
    }
}
