//! The NVML calls the helper makes, behind two small traits, so the mapping to a reply is tested
//! with recorded answers and run for real through `nvml-wrapper`: the reads, and the five
//! writes of `apply` (each one NVML call, made only when a step asks for it).

use std::fmt;

/// NVML's capability bit for peer-to-peer (`NVML_GPU_INSTANCE_PROFILE_CAPS_P2P`).
pub const CAPS_P2P: u32 = 0x1;
/// NVML's capability bit for graphics (`NVML_GPU_INSTANCE_PROFILE_CAPS_GFX`).
pub const CAPS_GFX: u32 = 0x2;

/// Why an NVML call failed, sorted as the reply needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NvmlFailure {
    /// Another client holds the card (NVML's in-use error): the helper exits 75.
    InUse(String),
    /// The card or driver does not support the call (`NVML_ERROR_NOT_SUPPORTED`).
    NotSupported,
    /// No room for what a write asks (`NVML_ERROR_INSUFFICIENT_RESOURCES`, 23): a placement
    /// taken, a profile with no instance left.
    InsufficientResources(String),
    /// The change needs a reset this environment does not expose (`NVML_ERROR_RESET_REQUIRED`).
    ResetRequired(String),
    /// `NVML_ERROR_INVALID_ARGUMENT`: past the last profile index when enumerating; on a read
    /// (a bad handle, a struct version the driver refuses) a failed read, never "not
    /// applicable".
    InvalidArgument,
    /// The driver lacks the function (the symbol is absent from the library, or
    /// `NVML_ERROR_FUNCTION_NOT_FOUND`).
    FunctionMissing(String),
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
            Self::InsufficientResources(why) => write!(f, "insufficient resources: {why}"),
            Self::ResetRequired(why) => write!(f, "reset required: {why}"),
            Self::InvalidArgument => f.write_str("invalid argument"),
            Self::FunctionMissing(name) => write!(f, "the driver lacks {name}"),
            Self::NoPermission(why) => write!(f, "no permission: {why}"),
            Self::NotFound(why) => write!(f, "not found: {why}"),
            Self::LibraryMissing(why) => write!(f, "NVML library missing: {why}"),
            Self::Driver(why) => write!(f, "driver error: {why}"),
        }
    }
}

/// The result of one NVML call.
pub type Nvml<T> = Result<T, NvmlFailure>;

/// A GPU-instance profile as `nvmlDeviceGetGpuInstanceProfileInfoV` (v3) reports it; the v1
/// call gives no name (empty) and only the P2P capability.
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
    pub uuid: Nvml<String>,
    pub type_name: Nvml<String>,
    pub type_id: Nvml<u32>,
    /// `Ok(None)` for a time-sliced vGPU on the whole card.
    pub gpu_instance_id: Nvml<Option<u32>>,
    pub vm: Option<String>,
}

/// A vGPU type the card supports, as the vGPU type calls report it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct VgpuTypeInfo {
    pub id: u32,
    pub name: Nvml<String>,
    /// `Ok(None)` for a time-sliced type (NVML's `INVALID_GPU_INSTANCE_PROFILE_ID`).
    pub gpu_instance_profile_id: Nvml<Option<u32>>,
    /// `nvmlVgpuTypeGetFramebufferSize`, in bytes.
    pub framebuffer_bytes: Nvml<u64>,
    pub max_instances: Nvml<u32>,
    /// `nvmlVgpuTypeGetMaxInstancesPerGpuInstance`; `Ok(None)` for a time-sliced type, for
    /// which it is not asked.
    pub max_instances_per_gpu_instance: Nvml<Option<u32>>,
}

/// A process holding the card.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct ProcessInfo {
    pub pid: u32,
    /// `nvmlSystemGetProcessName`.
    pub name: Nvml<String>,
}

/// NVML, opened.
pub trait NvmlHost {
    /// The driver's and NVML's versions.
    fn versions(&self) -> Nvml<(String, String)>;
    /// The card at a PCI address (`dddd:bb:dd.f`).
    fn card<'a>(&'a self, pci_bus_id: &str) -> Nvml<Box<dyn NvmlCard + 'a>>;
}

/// One card. Each method is one NVML call (or one listing); the enumeration and the fallbacks
/// are in [`crate::catalogue`], pure over this trait.
pub trait NvmlCard {
    /// The model's name (`nvmlDeviceGetName`).
    fn name(&self) -> Nvml<String>;
    /// The board's serial number (`nvmlDeviceGetSerial`); `NotSupported` on a board without one.
    fn serial(&self) -> Nvml<String>;
    /// The GPU's UUID (`nvmlDeviceGetUUID`).
    fn uuid(&self) -> Nvml<String>;
    /// The GPU's architecture as NVML numbers it (`nvmlDeviceGetArchitecture`, an
    /// `nvmlDeviceArchitecture_t`: `NVML_DEVICE_ARCH_AMPERE` 7, `…_HOPPER` 9, `…_UNKNOWN`
    /// 0xffffffff), passed on as NVML gives it.
    fn architecture(&self) -> Nvml<u32>;
    /// MIG mode `(current, pending)`, `true` for enabled; `NotSupported` for a card without MIG.
    fn mig_mode(&self) -> Nvml<(bool, bool)>;
    /// The GPU-instance profile at `index` through `nvmlDeviceGetGpuInstanceProfileInfoV`
    /// (v3 struct); `FunctionMissing` when the driver lacks the call.
    fn profile_v(&self, index: u32) -> Nvml<ProfileInfo>;
    /// The GPU-instance profile at `index` through `nvmlDeviceGetGpuInstanceProfileInfo` (v1:
    /// no name).
    fn profile_v1(&self, index: u32) -> Nvml<ProfileInfo>;
    /// How many more instances of the profile with this ID fit.
    fn remaining_capacity(&self, profile_id: u32) -> Nvml<u32>;
    /// The GPU instances of the profile with this ID.
    fn gpu_instances(&self, profile_id: u32) -> Nvml<Vec<GpuInstanceInfo>>;
    /// The ID of the compute-instance profile at `index` in a GPU instance listed before.
    fn compute_profile(&self, gpu_instance_id: u32, index: u32) -> Nvml<u32>;
    /// The compute instances of a GPU instance listed before, of the profile with this ID.
    fn compute_instances(
        &self,
        gpu_instance_id: u32,
        profile_id: u32,
    ) -> Nvml<Vec<ComputeInstanceInfo>>;
    /// The vGPUs on the card.
    fn vgpus(&self) -> Nvml<Vec<VgpuInfo>>;
    /// Every possible placement `(start, size)` of the GPU-instance profile with this ID
    /// (`nvmlDeviceGetGpuInstancePossiblePlacements_v2`), MIG on or off.
    fn placements(&self, profile_id: u32) -> Nvml<Vec<(u32, u32)>>;
    /// The processes holding the card (`nvmlDeviceGetComputeRunningProcesses_v3`).
    fn processes(&self) -> Nvml<Vec<ProcessInfo>>;
    /// The vGPU types the card supports (`nvmlDeviceGetSupportedVgpus` and the
    /// `nvmlVgpuTypeGet*` calls of each).
    fn vgpu_types(&self) -> Nvml<Vec<VgpuTypeInfo>>;
    /// Whether the card is in heterogeneous vGPU mode (`nvmlDeviceGetVgpuHeterogeneousMode`);
    /// `NotSupported` for a card without the setting.
    fn vgpu_heterogeneous_mode(&self) -> Nvml<bool>;

    /// `nvmlDeviceSetMigMode`: `Err` for the call's own failure, else the activation status.
    fn set_mig_mode(&self, enabled: bool) -> Nvml<Nvml<()>>;
    /// `nvmlDeviceCreateGpuInstanceWithPlacement`: the new GPU instance's ID.
    fn create_gpu_instance(&self, profile_id: u32, start: u32, size: u32) -> Nvml<u32>;
    /// `nvmlGpuInstanceCreateComputeInstance(WithPlacement)`: the new compute instance's ID.
    fn create_compute_instance(
        &self,
        gpu_instance_id: u32,
        profile_id: u32,
        placement: Option<(u32, u32)>,
    ) -> Nvml<u32>;
    /// `nvmlComputeInstanceDestroy`.
    fn destroy_compute_instance(&self, gpu_instance_id: u32, compute_instance_id: u32) -> Nvml<()>;
    /// `nvmlGpuInstanceDestroy`.
    fn destroy_gpu_instance(&self, gpu_instance_id: u32) -> Nvml<()>;
    /// `nvmlDeviceSetVgpuHeterogeneousMode` (v1 struct).
    fn set_vgpu_heterogeneous_mode(&self, enabled: bool) -> Nvml<()>;
}
