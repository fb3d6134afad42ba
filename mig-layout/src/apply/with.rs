//! What each vendor's side writes with, beside the host it was given ([`super::ApplyRun::vgpu`],
//! [`super::ApplyRun::amd`]): the programs and the carriers of the kernel writes. Each default
//! is the machine's own, which a run on a host built over a test tree refuses before any write.

use crate::vgpu_exec::SriovManage;
use gpu_host_probe::amdgpu::{Modprobe, PartitionWrites};
use gpu_host_probe::vf::{SysfsTypes, VgpuTypes};
use std::time::Duration;

/// How an apply writes a GPU's vGPU side: `sriov-manage`, and what carries a VF's type write.
#[derive(Clone)]
pub struct VgpuWith<'a> {
    /// How `sriov-manage` is run (its path, deadline, retries).
    pub sriov_manage: SriovManage,
    /// What carries a VF's type write (the kernel's file by default).
    pub types: &'a dyn VgpuTypes,
}

impl Default for VgpuWith<'_> {
    fn default() -> Self {
        Self {
            sriov_manage: SriovManage::default(),
            types: &SysfsTypes,
        }
    }
}

impl std::fmt::Debug for VgpuWith<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VgpuWith")
            .field("sriov_manage", &self.sriov_manage)
            .finish_non_exhaustive()
    }
}

/// How an apply writes AMD GPUs.
#[derive(Clone)]
pub struct AmdWith<'a> {
    /// How the driver is reloaded by the kernel's side (`modprobe`'s path and deadline).
    pub modprobe: Modprobe,
    /// What carries the writes instead of the kernel (a simulated amdgpu, say); `None` (the
    /// default): the kernel's files under the host's sysfs and `modprobe`.
    pub writes: Option<&'a dyn PartitionWrites>,
    /// The systemd services that use the GPUs (Device Config Manager's
    /// `gpuClientSystemdServices`): one running blocks a write (`gpu_busy`); an `apply-start`
    /// hook stops them, and an `apply-exit` hook starts them again.
    pub client_services: Vec<String>,
    /// How long the GPUs' files are waited for after the reload (default 60 s).
    pub reload_wait: Duration,
}

impl Default for AmdWith<'_> {
    fn default() -> Self {
        Self {
            modprobe: Modprobe::default(),
            writes: None,
            client_services: Vec::new(),
            reload_wait: Duration::from_secs(60),
        }
    }
}

impl std::fmt::Debug for AmdWith<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmdWith")
            .field("modprobe", &self.modprobe)
            .field("simulated", &self.writes.is_some())
            .field("client_services", &self.client_services)
            .field("reload_wait", &self.reload_wait)
            .finish()
    }
}
