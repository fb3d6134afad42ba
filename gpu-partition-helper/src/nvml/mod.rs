//! The real NVML backend: `nvml-wrapper` loads `libnvidia-ml.so.1` at run time; the calls its
//! safe wrapper lacks (GPU-instance profiles v3, remaining capacity, possible placements, GPU and
//! compute instances, the writes) go through the raw functions of the library it loaded.
//!
//! Only the five write methods change the card (the mode, a GPU instance, a compute instance),
//! each one NVML call, and only `apply` calls them; everything else reads.
// The raw NVML calls need `unsafe`; each block says why it is sound.
#![allow(unsafe_code)]

use crate::api::ProcessInfo;
use crate::api::{
    ComputeInstanceInfo, GpuInstanceInfo, Nvml as Answer, NvmlCard, NvmlFailure, NvmlHost,
    ProfileInfo, VgpuInfo, VgpuTypeInfo,
};
use crate::catalogue::v1_capabilities;
use nvml_wrapper::enum_wrappers::vgpu::VmId;
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    self as sys, INVALID_GPU_INSTANCE_ID, INVALID_GPU_INSTANCE_PROFILE_ID,
    NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, nvmlComputeInstance_t, nvmlComputeInstanceInfo_t,
    nvmlComputeInstancePlacement_t, nvmlComputeInstanceProfileInfo_t, nvmlDevice_t,
    nvmlGpuInstance_t, nvmlGpuInstanceInfo_t, nvmlGpuInstancePlacement_t,
    nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v3_t,
    nvmlProcessInfo_t, nvmlReturn_t, nvmlVgpuHeterogeneousMode_t, nvmlVgpuTypeMaxInstance_t,
};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{CStr, OsStr};

mod library;

pub use library::{LIBRARY, check, failure};

/// Room for the instances one call lists (a card holds at most 7 GPU instances today).
const MAX_INSTANCES: usize = 64;

/// NVML that could not be loaded: every card answers the failure (so `apply` refuses every
/// step with it, and its reply says why).
#[derive(Debug)]
pub struct Unavailable(pub NvmlFailure);

impl NvmlHost for Unavailable {
    fn versions(&self) -> Answer<(String, String)> {
        Err(self.0.clone())
    }

    fn card<'a>(&'a self, _pci_bus_id: &str) -> Answer<Box<dyn NvmlCard + 'a>> {
        Err(self.0.clone())
    }
}

/// NVML, loaded and initialised.
pub struct RealNvml {
    nvml: Nvml,
}

impl std::fmt::Debug for RealNvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RealNvml")
    }
}

impl RealNvml {
    /// Loads `libnvidia-ml.so.1` and initialises NVML.
    pub fn open() -> Answer<RealNvml> {
        Nvml::builder()
            .lib_path(OsStr::new(LIBRARY))
            .init()
            .map(|nvml| RealNvml { nvml })
            .map_err(failure)
    }
}

impl NvmlHost for RealNvml {
    fn versions(&self) -> Answer<(String, String)> {
        let driver = self.nvml.sys_driver_version().map_err(failure)?;
        let nvml = self.nvml.sys_nvml_version().map_err(failure)?;
        Ok((driver, nvml))
    }

    fn card<'a>(&'a self, pci_bus_id: &str) -> Answer<Box<dyn NvmlCard + 'a>> {
        let device = self
            .nvml
            .device_by_pci_bus_id(pci_bus_id)
            .map_err(failure)?;
        Ok(Box::new(RealCard {
            nvml: &self.nvml,
            device,
            instances: RefCell::new(BTreeMap::new()),
        }))
    }
}

struct RealCard<'a> {
    nvml: &'a Nvml,
    device: Device<'a>,
    /// The GPU-instance handles listed so far, by ID, so no instance is looked up twice.
    instances: RefCell<BTreeMap<u32, nvmlGpuInstance_t>>,
}

impl RealCard<'_> {
    fn handle(&self) -> nvmlDevice_t {
        // SAFETY: the handle is only passed back to NVML while `self.device` (and the `Nvml`
        // that owns the library) is alive.
        unsafe { self.device.handle() }
    }

    /// The handle of a GPU instance: the one its listing gave, else looked up by ID.
    fn gpu_instance(&self, id: u32) -> Result<nvmlGpuInstance_t, NvmlError> {
        if let Some(handle) = self.instances.borrow().get(&id) {
            return Ok(*handle);
        }
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceGetGpuInstanceById.as_ref())?;
        let mut instance: nvmlGpuInstance_t = std::ptr::null_mut();
        // SAFETY: a valid device handle and a pointer to a local out-parameter.
        nvml_try(unsafe { sym(self.handle(), id, &mut instance) })?;
        self.instances.borrow_mut().insert(id, instance);
        Ok(instance)
    }
}

/// A [`ProfileInfo`] of NVML's GPU-instance profile struct `info` of any version (each names
/// its ID and counts alike), with the `name` and `capabilities` that version gives.
macro_rules! profile_info {
    ($info:expr, $name:expr, $capabilities:expr) => {
        ProfileInfo {
            id: $info.id,
            name: $name,
            slice_count: $info.sliceCount,
            instance_count: $info.instanceCount,
            multiprocessor_count: $info.multiprocessorCount,
            copy_engine_count: $info.copyEngineCount,
            decoder_count: $info.decoderCount,
            encoder_count: $info.encoderCount,
            jpeg_count: $info.jpegCount,
            ofa_count: $info.ofaCount,
            memory_size_mb: $info.memorySizeMB,
            capabilities: $capabilities,
        }
    };
}

fn c_string(bytes: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = bytes
        .iter()
        .take_while(|b| **b != 0)
        .map(|b| *b as u8)
        .collect();
    CStr::from_bytes_until_nul(&[bytes.as_slice(), &[0]].concat())
        .map(|text| text.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl NvmlCard for RealCard<'_> {
    fn name(&self) -> Answer<String> {
        self.device.name().map_err(failure)
    }

    fn serial(&self) -> Answer<String> {
        self.device.serial().map_err(failure)
    }

    fn uuid(&self) -> Answer<String> {
        self.device.uuid().map_err(failure)
    }

    fn architecture(&self) -> Answer<u32> {
        // The raw call, not nvml-wrapper's `architecture()`: that one refuses a number it does
        // not know, and a later NVML's number is to be passed on, not lost.
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceGetArchitecture.as_ref()).map_err(failure)?;
        let mut architecture: sys::nvmlDeviceArchitecture_t = 0;
        // SAFETY: a valid handle, and a pointer to a u32 NVML writes.
        check(unsafe { sym(self.handle(), &mut architecture) })?;
        Ok(architecture)
    }

    fn mig_mode(&self) -> Answer<(bool, bool)> {
        let mode = self.device.mig_mode().map_err(failure)?;
        Ok((mode.current == 1, mode.pending == 1))
    }

    fn profile_v(&self, index: u32) -> Answer<ProfileInfo> {
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceGetGpuInstanceProfileInfoV.as_ref()).map_err(failure)?;
        // SAFETY: zeroed plain-old-data, then the v3 version stamp NVML reads first.
        let mut info: nvmlGpuInstanceProfileInfo_v3_t = unsafe { std::mem::zeroed() };
        info.version = struct_version::<nvmlGpuInstanceProfileInfo_v3_t>(3);
        // SAFETY: NVML reads `version` and writes a v3 struct, which `info` is; the binding
        // declares the v2 pointer type for the same versioned entry point.
        let code = unsafe {
            sym(
                self.handle(),
                index,
                (&mut info as *mut nvmlGpuInstanceProfileInfo_v3_t)
                    .cast::<nvmlGpuInstanceProfileInfo_v2_t>(),
            )
        };
        nvml_try(code).map_err(failure)?;
        Ok(profile_info!(info, c_string(&info.name), info.capabilities))
    }

    fn profile_v1(&self, index: u32) -> Answer<ProfileInfo> {
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceGetGpuInstanceProfileInfo.as_ref()).map_err(failure)?;
        // SAFETY: zeroed plain-old-data that NVML fills.
        let mut info: nvmlGpuInstanceProfileInfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a valid device handle and a pointer to a local v1 struct.
        nvml_try(unsafe { sym(self.handle(), index, &mut info) }).map_err(failure)?;
        Ok(profile_info!(
            info,
            String::new(),
            v1_capabilities(info.isP2pSupported != 0)
        ))
    }

    fn remaining_capacity(&self, profile_id: u32) -> Answer<u32> {
        let lib = self.nvml.lib();
        let sym =
            nvml_sym(lib.nvmlDeviceGetGpuInstanceRemainingCapacity.as_ref()).map_err(failure)?;
        let mut count = 0;
        // SAFETY: a valid device handle and a pointer to a local out-parameter.
        nvml_try(unsafe { sym(self.handle(), profile_id, &mut count) }).map_err(failure)?;
        Ok(count)
    }

    fn gpu_instances(&self, profile_id: u32) -> Answer<Vec<GpuInstanceInfo>> {
        let lib = self.nvml.lib();
        let list = nvml_sym(lib.nvmlDeviceGetGpuInstances.as_ref()).map_err(failure)?;
        let info_of = nvml_sym(lib.nvmlGpuInstanceGetInfo.as_ref()).map_err(failure)?;
        let mut handles: Vec<nvmlGpuInstance_t> = vec![std::ptr::null_mut(); MAX_INSTANCES];
        let mut count = 0;
        // SAFETY: `handles` has room for MAX_INSTANCES entries; NVML writes at most that many
        // (a card holds far fewer) and says how many in `count`.
        nvml_try(unsafe { list(self.handle(), profile_id, handles.as_mut_ptr(), &mut count) })
            .map_err(failure)?;
        handles.truncate((count as usize).min(MAX_INSTANCES));
        let mut instances = Vec::new();
        for handle in handles {
            // SAFETY: zeroed plain-old-data filled by NVML from a handle it just gave us.
            let mut info: nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
            nvml_try(unsafe { info_of(handle, &mut info) }).map_err(failure)?;
            self.instances.borrow_mut().insert(info.id, handle);
            instances.push(GpuInstanceInfo {
                id: info.id,
                profile_id: info.profileId,
                start: info.placement.start,
                size: info.placement.size,
            });
        }
        Ok(instances)
    }

    fn compute_profile(&self, gpu_instance_id: u32, index: u32) -> Answer<u32> {
        let lib = self.nvml.lib();
        let instance = self.gpu_instance(gpu_instance_id).map_err(failure)?;
        let profile_of =
            nvml_sym(lib.nvmlGpuInstanceGetComputeInstanceProfileInfo.as_ref()).map_err(failure)?;
        // SAFETY: zeroed plain-old-data filled by NVML for a GPU-instance handle it gave us.
        let mut info: nvmlComputeInstanceProfileInfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: a GPU-instance handle NVML gave and a pointer to a local struct.
        let code = unsafe {
            profile_of(
                instance,
                index,
                NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED,
                &mut info,
            )
        };
        nvml_try(code).map_err(failure)?;
        Ok(info.id)
    }

    fn compute_instances(
        &self,
        gpu_instance_id: u32,
        profile_id: u32,
    ) -> Answer<Vec<ComputeInstanceInfo>> {
        let lib = self.nvml.lib();
        let instance = self.gpu_instance(gpu_instance_id).map_err(failure)?;
        let list = nvml_sym(lib.nvmlGpuInstanceGetComputeInstances.as_ref()).map_err(failure)?;
        let info_of = nvml_sym(lib.nvmlComputeInstanceGetInfo_v2.as_ref()).map_err(failure)?;
        let mut handles: Vec<nvmlComputeInstance_t> = vec![std::ptr::null_mut(); MAX_INSTANCES];
        let mut count = 0;
        // SAFETY: room for MAX_INSTANCES handles; NVML says how many it wrote.
        nvml_try(unsafe { list(instance, profile_id, handles.as_mut_ptr(), &mut count) })
            .map_err(failure)?;
        handles.truncate((count as usize).min(MAX_INSTANCES));
        let mut found = Vec::new();
        for handle in handles {
            // SAFETY: zeroed plain-old-data filled by NVML from a handle it just gave us.
            let mut ci: nvmlComputeInstanceInfo_t = unsafe { std::mem::zeroed() };
            nvml_try(unsafe { info_of(handle, &mut ci) }).map_err(failure)?;
            found.push(ComputeInstanceInfo {
                id: ci.id,
                profile_id: ci.profileId,
                start: ci.placement.start,
                size: ci.placement.size,
            });
        }
        Ok(found)
    }

    fn placements(&self, profile_id: u32) -> Answer<Vec<(u32, u32)>> {
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceGetGpuInstancePossiblePlacements_v2.as_ref())
            .map_err(failure)?;
        let mut count = 0;
        // SAFETY: a null array asks NVML for the number of placements only.
        check(unsafe { sym(self.handle(), profile_id, std::ptr::null_mut(), &mut count) })?;
        let room = (count as usize).min(MAX_INSTANCES);
        // SAFETY: zeroed plain-old-data NVML overwrites.
        let mut placements: Vec<nvmlGpuInstancePlacement_t> =
            vec![unsafe { std::mem::zeroed() }; room];
        let mut filled = u32::try_from(room).unwrap_or(0);
        if room > 0 {
            // SAFETY: `placements` has room for `filled` entries, the count NVML gave; it says
            // how many it wrote in `filled`. (The safe wrapper of 0.12 forgot to set the
            // vector's length and answered an empty list: this call sizes it itself.)
            check(unsafe {
                sym(
                    self.handle(),
                    profile_id,
                    placements.as_mut_ptr(),
                    &mut filled,
                )
            })?;
        }
        placements.truncate((filled as usize).min(room));
        Ok(placements.into_iter().map(|p| (p.start, p.size)).collect())
    }

    fn processes(&self) -> Answer<Vec<ProcessInfo>> {
        let lib = self.nvml.lib();
        let list =
            nvml_sym(lib.nvmlDeviceGetComputeRunningProcesses_v3.as_ref()).map_err(failure)?;
        let name_of = nvml_sym(lib.nvmlSystemGetProcessName.as_ref()).map_err(failure)?;
        let mut count = 0;
        // SAFETY: a null array with a count of 0 asks NVML how many there are.
        let code = unsafe { list(self.handle(), &mut count, std::ptr::null_mut()) };
        if code != sys::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE {
            check(code)?;
        }
        // Room for a few more: processes may start between the two calls.
        let room = (count as usize + 8).min(4 * MAX_INSTANCES);
        // SAFETY: zeroed plain-old-data NVML overwrites.
        let mut infos: Vec<nvmlProcessInfo_t> = vec![unsafe { std::mem::zeroed() }; room];
        let mut filled = u32::try_from(room).unwrap_or(0);
        if count > 0 {
            // SAFETY: `infos` has room for `filled` entries; NVML says how many it wrote.
            check(unsafe { list(self.handle(), &mut filled, infos.as_mut_ptr()) })?;
        } else {
            filled = 0;
        }
        infos.truncate((filled as usize).min(room));
        Ok(infos
            .into_iter()
            .map(|info| {
                let mut name = [0 as std::ffi::c_char; 256];
                // SAFETY: a local buffer of 256 chars, as the length says.
                let answer = check(unsafe { name_of(info.pid, name.as_mut_ptr(), 256) });
                ProcessInfo {
                    pid: info.pid,
                    name: answer.map(|()| c_string(&name)),
                }
            })
            .collect())
    }

    fn set_mig_mode(&self, enabled: bool) -> Answer<Answer<()>> {
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceSetMigMode.as_ref()).map_err(failure)?;
        let mut activation: nvmlReturn_t = sys::nvmlReturn_enum_NVML_SUCCESS;
        let mode = if enabled {
            sys::NVML_DEVICE_MIG_ENABLE
        } else {
            sys::NVML_DEVICE_MIG_DISABLE
        };
        // SAFETY: a valid device handle and a pointer to a local out-parameter.
        check(unsafe { sym(self.handle(), mode, &mut activation) })?;
        Ok(check(activation))
    }

    fn create_gpu_instance(&self, profile_id: u32, start: u32, size: u32) -> Answer<u32> {
        let lib = self.nvml.lib();
        let create =
            nvml_sym(lib.nvmlDeviceCreateGpuInstanceWithPlacement.as_ref()).map_err(failure)?;
        let info_of = nvml_sym(lib.nvmlGpuInstanceGetInfo.as_ref()).map_err(failure)?;
        let placement = nvmlGpuInstancePlacement_t { start, size };
        let mut instance: nvmlGpuInstance_t = std::ptr::null_mut();
        // SAFETY: a valid device handle, a local placement to read and an out-parameter.
        check(unsafe { create(self.handle(), profile_id, &placement, &mut instance) })?;
        // SAFETY: zeroed plain-old-data filled by NVML from the handle it just gave.
        let mut info: nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
        check(unsafe { info_of(instance, &mut info) })?;
        self.instances.borrow_mut().insert(info.id, instance);
        Ok(info.id)
    }

    fn create_compute_instance(
        &self,
        gpu_instance_id: u32,
        profile_id: u32,
        placement: Option<(u32, u32)>,
    ) -> Answer<u32> {
        let lib = self.nvml.lib();
        let instance = self.gpu_instance(gpu_instance_id).map_err(failure)?;
        let info_of = nvml_sym(lib.nvmlComputeInstanceGetInfo_v2.as_ref()).map_err(failure)?;
        let mut compute: nvmlComputeInstance_t = std::ptr::null_mut();
        match placement {
            Some((start, size)) => {
                let create = nvml_sym(
                    lib.nvmlGpuInstanceCreateComputeInstanceWithPlacement
                        .as_ref(),
                )
                .map_err(failure)?;
                let at = nvmlComputeInstancePlacement_t { start, size };
                // SAFETY: a GPU-instance handle NVML gave, a local placement, an out-parameter.
                check(unsafe { create(instance, profile_id, &at, &mut compute) })?;
            }
            None => {
                let create =
                    nvml_sym(lib.nvmlGpuInstanceCreateComputeInstance.as_ref()).map_err(failure)?;
                // SAFETY: a GPU-instance handle NVML gave and an out-parameter.
                check(unsafe { create(instance, profile_id, &mut compute) })?;
            }
        }
        // SAFETY: zeroed plain-old-data filled by NVML from the handle it just gave.
        let mut info: nvmlComputeInstanceInfo_t = unsafe { std::mem::zeroed() };
        check(unsafe { info_of(compute, &mut info) })?;
        Ok(info.id)
    }

    fn destroy_compute_instance(
        &self,
        gpu_instance_id: u32,
        compute_instance_id: u32,
    ) -> Answer<()> {
        let lib = self.nvml.lib();
        let instance = self.gpu_instance(gpu_instance_id).map_err(failure)?;
        let by_id =
            nvml_sym(lib.nvmlGpuInstanceGetComputeInstanceById.as_ref()).map_err(failure)?;
        let destroy = nvml_sym(lib.nvmlComputeInstanceDestroy.as_ref()).map_err(failure)?;
        let mut compute: nvmlComputeInstance_t = std::ptr::null_mut();
        // SAFETY: a GPU-instance handle NVML gave and an out-parameter.
        check(unsafe { by_id(instance, compute_instance_id, &mut compute) })?;
        // SAFETY: a compute-instance handle NVML just gave.
        check(unsafe { destroy(compute) })
    }

    fn destroy_gpu_instance(&self, gpu_instance_id: u32) -> Answer<()> {
        let lib = self.nvml.lib();
        let instance = self.gpu_instance(gpu_instance_id).map_err(failure)?;
        let destroy = nvml_sym(lib.nvmlGpuInstanceDestroy.as_ref()).map_err(failure)?;
        // SAFETY: a GPU-instance handle NVML gave; it is forgotten once destroyed.
        check(unsafe { destroy(instance) })?;
        self.instances.borrow_mut().remove(&gpu_instance_id);
        Ok(())
    }

    fn vgpus(&self) -> Answer<Vec<VgpuInfo>> {
        let active = self.device.active_vgpus().map_err(failure)?;
        let mut vgpus = Vec::new();
        for vgpu in active {
            let uuid = vgpu.uuid().map_err(failure);
            let (type_name, type_id) = match vgpu.instance_type() {
                Ok(kind) => (kind.name().map_err(failure), Ok(kind.id())),
                Err(error) => {
                    let error = failure(error);
                    (Err(error.clone()), Err(error))
                }
            };
            let gpu_instance_id = match vgpu.gpu_instance_id() {
                Ok(INVALID_GPU_INSTANCE_ID) => Ok(None),
                Ok(id) => Ok(Some(id)),
                Err(error) => Err(failure(error)),
            };
            let vm = match vgpu.vm_id() {
                Ok(VmId::Uuid(id) | VmId::Domain(id)) => Some(id),
                Err(_) => None,
            };
            vgpus.push(VgpuInfo {
                uuid,
                type_name,
                type_id,
                gpu_instance_id,
                vm,
            });
        }
        Ok(vgpus)
    }

    fn vgpu_types(&self) -> Answer<Vec<VgpuTypeInfo>> {
        let lib = self.nvml.lib();
        let types = self.device.vgpu_supported_types().map_err(failure)?;
        Ok(types
            .into_iter()
            .map(|kind| {
                let gpu_instance_profile_id = match kind.instance_profile_id() {
                    Ok(INVALID_GPU_INSTANCE_PROFILE_ID) => Ok(None),
                    Ok(id) => Ok(Some(id)),
                    Err(error) => Err(failure(error)),
                };
                let max_instances_per_gpu_instance = match gpu_instance_profile_id {
                    Ok(None) => Ok(None),
                    _ => max_per_gpu_instance(lib, kind.id()).map(Some),
                };
                VgpuTypeInfo {
                    id: kind.id(),
                    name: kind.name().map_err(failure),
                    gpu_instance_profile_id,
                    framebuffer_bytes: kind.framebuffer_size().map_err(failure),
                    max_instances: kind.max_instances().map_err(failure),
                    max_instances_per_gpu_instance,
                }
            })
            .collect())
    }

    fn vgpu_heterogeneous_mode(&self) -> Answer<bool> {
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceGetVgpuHeterogeneousMode.as_ref()).map_err(failure)?;
        // SAFETY: zeroed plain-old-data, then the v1 version stamp NVML reads first.
        let mut mode: nvmlVgpuHeterogeneousMode_t = unsafe { std::mem::zeroed() };
        mode.version = struct_version::<nvmlVgpuHeterogeneousMode_t>(1);
        // SAFETY: a valid device handle and a pointer to a local v1 struct.
        check(unsafe { sym(self.handle(), &mut mode) })?;
        Ok(mode.mode != 0)
    }

    fn set_vgpu_heterogeneous_mode(&self, enabled: bool) -> Answer<()> {
        let lib = self.nvml.lib();
        let sym = nvml_sym(lib.nvmlDeviceSetVgpuHeterogeneousMode.as_ref()).map_err(failure)?;
        // SAFETY: zeroed plain-old-data, then the v1 version stamp and the mode.
        let mut mode: nvmlVgpuHeterogeneousMode_t = unsafe { std::mem::zeroed() };
        mode.version = struct_version::<nvmlVgpuHeterogeneousMode_t>(1);
        mode.mode = u32::from(enabled);
        // SAFETY: a valid device handle and a pointer to a local v1 struct NVML only reads.
        check(unsafe { sym(self.handle(), &mode) })
    }
}

/// `NVML_STRUCT_VERSION`: the struct's size with the version in the top byte.
fn struct_version<T>(version: u32) -> u32 {
    (std::mem::size_of::<T>() as u32) | (version << 24)
}

/// `nvmlVgpuTypeGetMaxInstancesPerGpuInstance` (v1 struct) for one type.
fn max_per_gpu_instance(lib: &sys::NvmlLib, type_id: u32) -> Answer<u32> {
    let sym = nvml_sym(lib.nvmlVgpuTypeGetMaxInstancesPerGpuInstance.as_ref()).map_err(failure)?;
    // SAFETY: zeroed plain-old-data, then the version stamp and the type asked of.
    let mut asked: nvmlVgpuTypeMaxInstance_t = unsafe { std::mem::zeroed() };
    asked.version = struct_version::<nvmlVgpuTypeMaxInstance_t>(1);
    asked.vgpuTypeId = type_id;
    // SAFETY: a pointer to a local v1 struct NVML reads and fills.
    check(unsafe { sym(&mut asked) })?;
    Ok(asked.maxInstancePerGI)
}
