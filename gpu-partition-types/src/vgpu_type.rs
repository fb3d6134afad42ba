//! The card's vGPU type catalogue, `vgpu_types`, and its vGPU mode, `vgpu_mode` (format 1.3).
//!
//! What NVML says of each type the card supports (`nvmlDeviceGetSupportedVgpus` and the
//! `nvmlVgpuTypeGet*` calls), so that a declared vGPU layout can be sized and checked before any
//! write: a MIG-backed type names the GPU-instance profile it sits on, and how many of it one
//! GPU instance can host.

use crate::Nullable;
use std::num::NonZeroU32;

/// A vGPU type ID as a VF's `current_vgpu_type`, `creatable_vgpu_types` and a declaration keep
/// it: never 0, which is "no vGPU" (read as `None`, written as a clear), so a write of 0 cannot
/// be mistaken for a type. It reads back from JSON only as a positive integer.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct VgpuTypeId(pub NonZeroU32);

impl VgpuTypeId {
    /// The type `id`; `None` for 0 (no vGPU).
    pub fn new(id: u32) -> Option<Self> {
        NonZeroU32::new(id).map(Self)
    }

    /// Its number.
    pub fn get(self) -> u32 {
        self.0.get()
    }
}

impl std::fmt::Display for VgpuTypeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

crate::record::record! {
    /// One vGPU type the card supports.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct VgpuType: "a vGPU type object" {
        /// The type's number (NVML's type ID, the `N` of sysfs's `nvidia-N`; needed by the
        /// element).
        id: required u32 = "id",
        /// Its name as the driver gives it, e.g. `NVIDIA A100-1-5C` (lenient).
        name: lenient String = "name",
        /// The GPU-instance profile a MIG-backed type sits on; `null` for a time-sliced type
        /// (NVML's `INVALID_GPU_INSTANCE_PROFILE_ID`). Profile 0 is a real profile (lenient).
        gpu_instance_profile_id: lenient Nullable<u32> = "gpu_instance_profile_id",
        /// Its framebuffer, in MiB (lenient).
        framebuffer_mib: lenient u64 = "framebuffer_mib",
        /// How many vGPUs of it the card can hold (lenient).
        max_instances: lenient u32 = "max_instances",
        /// How many vGPUs of it one GPU instance can host; `null` for a time-sliced type
        /// (lenient: a driver that does not say leaves it out, and a reader must not guess it).
        max_instances_per_gpu_instance: lenient Nullable<u32> = "max_instances_per_gpu_instance",
    }
}

crate::record::record! {
    /// `vgpu_mode` (a lenient unit): the card's vGPU mode.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct VgpuMode: "a vGPU mode object" {
        /// Whether vGPUs of different types may share the card
        /// (`nvmlDeviceGetVgpuHeterogeneousMode`, `nvidia-smi vgpu -shm`); `null` where the
        /// card has no such setting (NVML answers not supported).
        heterogeneous: required Nullable<bool> = "heterogeneous",
    }
}

impl VgpuType {
    /// Whether the type sits on a GPU instance; `None` when its profile was lost.
    pub fn mig_backed(&self) -> Option<bool> {
        self.gpu_instance_profile_id
            .read()
            .map(|profile| matches!(profile, Nullable::Value(_)))
    }
}
