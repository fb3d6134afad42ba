//! The NVML calls the helper makes, behind two small traits, so the mapping to a reply is tested
//! with recorded answers and run for real through `nvml-wrapper`.

use std::fmt;

/// Why an NVML call failed, sorted as the reply needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NvmlFailure {
    /// Another client holds the card (NVML's in-use error): the helper exits 75.
    InUse(String),
    /// The card or driver does not support the call.
    NotSupported,
    /// The caller may not talk to the driver or card.
    NoPermission(String),
    /// No such card.
    NotFound(String),
    /// The NVML library could not be loaded.
    LibraryMissing(String),
    /// Any other driver or NVML error.
    Driver(String),
}

impl fmt::Display for NvmlFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InUse(why) => write!(f, "in use: {why}"),
            Self::NotSupported => f.write_str("not supported"),
            Self::NoPermission(why) => write!(f, "no permission: {why}"),
            Self::NotFound(why) => write!(f, "not found: {why}"),
            Self::LibraryMissing(why) => write!(f, "NVML library missing: {why}"),
            Self::Driver(why) => write!(f, "driver error: {why}"),
        }
    }
}

/// The result of one NVML call.
pub type Nvml<T> = Result<T, NvmlFailure>;

/// A GPU-instance profile as `nvmlDeviceGetGpuInstanceProfileInfoV` (v3) reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct ProfileInfo {
    pub id: u32,
    pub name: String,
    pub slice_count: u32,
    pub instance_count: u32,
    pub multiprocessor_count: u32,
    pub copy_engine_count: u32,
    pub decoder_count: u32,
    pub encoder_count: u32,
    pub jpeg_count: u32,
    pub ofa_count: u32,
    pub memory_size_mb: u64,
    /// NVML's capability bits (`NVML_GPU_INSTANCE_PROFILE_CAPS_*`).
    pub capabilities: u32,
}

/// A GPU instance as `nvmlGpuInstanceGetInfo` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct GpuInstanceInfo {
    pub id: u32,
    pub profile_id: u32,
    pub start: u32,
    pub size: u32,
}

/// A compute instance as `nvmlComputeInstanceGetInfo` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct ComputeInstanceInfo {
    pub id: u32,
    pub profile_id: u32,
    pub start: u32,
    pub size: u32,
}

/// A vGPU as the vGPU calls report it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct VgpuInfo {
    pub uuid: String,
    pub type_name: Nvml<String>,
    pub type_id: Nvml<u32>,
    /// `None` for a time-sliced vGPU on the whole card.
    pub gpu_instance_id: Option<u32>,
    pub vm: Option<String>,
}

/// NVML, opened.
pub trait NvmlHost {
    /// The driver's and NVML's versions.
    fn versions(&self) -> Nvml<(String, String)>;
    /// The card at a PCI address (`dddd:bb:dd.f`).
    fn card<'a>(&'a self, pci_bus_id: &str) -> Nvml<Box<dyn NvmlCard + 'a>>;
}

/// One card.
pub trait NvmlCard {
    /// MIG mode `(current, pending)`, `true` for enabled; `NotSupported` for a card without MIG.
    fn mig_mode(&self) -> Nvml<(bool, bool)>;
    /// The GPU-instance profiles the card supports.
    fn profiles(&self) -> Nvml<Vec<ProfileInfo>>;
    /// How many more instances of a profile fit.
    fn remaining_capacity(&self, profile_id: u32) -> Nvml<u32>;
    /// The GPU instances of a profile.
    fn gpu_instances(&self, profile_id: u32) -> Nvml<Vec<GpuInstanceInfo>>;
    /// The compute instances inside a GPU instance.
    fn compute_instances(&self, gpu_instance_id: u32) -> Nvml<Vec<ComputeInstanceInfo>>;
    /// The vGPUs on the card.
    fn vgpus(&self) -> Nvml<Vec<VgpuInfo>>;
}
