//! NVML's answers recorded, behind the helper's traits: a card's answers call by call
//! ([`Recorded`]), a host of one card, the cards the mapping tests start from, and the reply
//! the helper reads of them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_helper::api::{
    ComputeInstanceInfo, GpuInstanceInfo, Nvml, NvmlCard, NvmlFailure, NvmlHost, ProcessInfo,
    ProfileInfo, VgpuInfo, VgpuTypeInfo,
};
use gpu_partition_helper::read::{Answer, read_card};
use gpu_partition_types::{Bdf, Case, Reply};
use std::collections::BTreeMap;

/// What one card answered, call by call.
#[derive(Clone)]
pub struct Recorded {
    pub mig_mode: Nvml<(bool, bool)>,
    /// The profiles by index; other indices answer NOT_SUPPORTED below the highest and
    /// INVALID_ARGUMENT above, as NVML does.
    pub profiles: Vec<(u32, ProfileInfo)>,
    /// What the V call answers besides: `Ok` when it serves, else this error at every index.
    pub profile_v: Nvml<()>,
    /// An error both profile calls answer at every index.
    pub profile_error: Option<NvmlFailure>,
    pub capacity: BTreeMap<u32, Nvml<u32>>,
    pub instances: BTreeMap<u32, Nvml<Vec<GpuInstanceInfo>>>,
    /// Compute instances by GPU instance; compute-instance profiles are indices 0 to 8, ID =
    /// index.
    pub compute: BTreeMap<u32, Nvml<Vec<ComputeInstanceInfo>>>,
    pub vgpus: Nvml<Vec<VgpuInfo>>,
    pub vgpu_types: Nvml<Vec<VgpuTypeInfo>>,
    pub heterogeneous: Nvml<bool>,
    /// `nvmlDeviceGetArchitecture`'s number.
    pub architecture: Nvml<u32>,
}

impl Recorded {
    fn profile_at(&self, index: u32) -> Nvml<ProfileInfo> {
        if let Some(error) = &self.profile_error {
            return Err(error.clone());
        }
        if let Some((_, profile)) = self.profiles.iter().find(|(at, _)| *at == index) {
            return Ok(profile.clone());
        }
        let highest = self.profiles.iter().map(|(at, _)| *at).max().unwrap_or(0);
        Err(if index < highest {
            NvmlFailure::NotSupported
        } else {
            NvmlFailure::InvalidArgument
        })
    }
}

pub struct Host {
    pub card: Nvml<Recorded>,
    pub versions: Nvml<(String, String)>,
}

impl NvmlHost for Host {
    fn versions(&self) -> Nvml<(String, String)> {
        self.versions.clone()
    }
    fn card<'a>(&'a self, _pci_bus_id: &str) -> Nvml<Box<dyn NvmlCard + 'a>> {
        self.card
            .clone()
            .map(|card| Box::new(card) as Box<dyn NvmlCard>)
    }
}

impl NvmlCard for Recorded {
    fn name(&self) -> Nvml<String> {
        Ok("NVIDIA A100-SXM4-40GB".to_owned())
    }
    fn serial(&self) -> Nvml<String> {
        Err(NvmlFailure::NotSupported)
    }
    fn uuid(&self) -> Nvml<String> {
        Ok("GPU-5a3c9f0e-8a1b-4c2d-9e7f-000000000000".to_owned())
    }
    fn architecture(&self) -> Nvml<u32> {
        self.architecture.clone()
    }
    fn mig_mode(&self) -> Nvml<(bool, bool)> {
        self.mig_mode.clone()
    }
    fn profile_v(&self, index: u32) -> Nvml<ProfileInfo> {
        self.profile_v.clone()?;
        self.profile_at(index)
    }
    fn profile_v1(&self, index: u32) -> Nvml<ProfileInfo> {
        self.profile_at(index).map(|mut profile| {
            profile.name.clear();
            profile.capabilities &= 0x1;
            profile
        })
    }
    fn remaining_capacity(&self, profile_id: u32) -> Nvml<u32> {
        self.capacity.get(&profile_id).cloned().unwrap_or(Ok(0))
    }
    fn gpu_instances(&self, profile_id: u32) -> Nvml<Vec<GpuInstanceInfo>> {
        self.instances
            .get(&profile_id)
            .cloned()
            .unwrap_or(Ok(vec![]))
    }
    fn compute_profile(&self, _gpu_instance_id: u32, index: u32) -> Nvml<u32> {
        if index < 9 {
            Ok(index)
        } else {
            Err(NvmlFailure::InvalidArgument)
        }
    }
    fn compute_instances(
        &self,
        gpu_instance_id: u32,
        profile_id: u32,
    ) -> Nvml<Vec<ComputeInstanceInfo>> {
        self.compute
            .get(&gpu_instance_id)
            .cloned()
            .unwrap_or(Ok(vec![]))
            .map(|all| {
                all.into_iter()
                    .filter(|ci| ci.profile_id == profile_id)
                    .collect()
            })
    }
    fn vgpus(&self) -> Nvml<Vec<VgpuInfo>> {
        self.vgpus.clone()
    }
    fn placements(&self, profile_id: u32) -> Nvml<Vec<(u32, u32)>> {
        Ok(self
            .profiles
            .iter()
            .find(|(_, p)| p.id == profile_id)
            .map(|(_, p)| {
                (0..p.instance_count)
                    .map(|at| (at * p.slice_count, p.slice_count))
                    .collect()
            })
            .unwrap_or_default())
    }
    fn processes(&self) -> Nvml<Vec<ProcessInfo>> {
        Ok(Vec::new())
    }
    fn vgpu_types(&self) -> Nvml<Vec<VgpuTypeInfo>> {
        self.vgpu_types.clone()
    }
    fn vgpu_heterogeneous_mode(&self) -> Nvml<bool> {
        self.heterogeneous.clone()
    }
    // The mapping only reads: a recorded card refuses every write.
    fn set_mig_mode(&self, _enabled: bool) -> Nvml<Nvml<()>> {
        Err(NvmlFailure::NotSupported)
    }
    fn create_gpu_instance(&self, _profile_id: u32, _start: u32, _size: u32) -> Nvml<u32> {
        Err(NvmlFailure::NotSupported)
    }
    fn create_compute_instance(
        &self,
        _gpu_instance_id: u32,
        _profile_id: u32,
        _placement: Option<(u32, u32)>,
    ) -> Nvml<u32> {
        Err(NvmlFailure::NotSupported)
    }
    fn destroy_compute_instance(&self, _gi: u32, _ci: u32) -> Nvml<()> {
        Err(NvmlFailure::NotSupported)
    }
    fn destroy_gpu_instance(&self, _gi: u32) -> Nvml<()> {
        Err(NvmlFailure::NotSupported)
    }
    fn set_vgpu_heterogeneous_mode(&self, _enabled: bool) -> Nvml<()> {
        Err(NvmlFailure::NotSupported)
    }
}

pub fn profile(id: u32, name: &str, slices: u32, capabilities: u32) -> ProfileInfo {
    ProfileInfo {
        id,
        name: name.into(),
        slice_count: slices,
        instance_count: 7 / slices,
        multiprocessor_count: 16 * slices,
        copy_engine_count: slices,
        decoder_count: slices,
        encoder_count: 0,
        jpeg_count: slices,
        ofa_count: 0,
        memory_size_mb: 18_176 * u64::from(slices),
        capabilities,
    }
}

/// An H200 with MIG on: two profiles, one GPU instance with a compute instance, two vGPUs.
pub fn mig_on_with_instances() -> Recorded {
    Recorded {
        mig_mode: Ok((true, true)),
        profiles: vec![
            (0, profile(19, "1g.18gb", 1, 0x1)),
            (2, profile(9, "3g.71gb", 3, 0x3)),
        ],
        profile_v: Ok(()),
        profile_error: None,
        capacity: BTreeMap::from([(19, Ok(6)), (9, Ok(1))]),
        instances: BTreeMap::from([(
            19,
            Ok(vec![GpuInstanceInfo {
                id: 5,
                profile_id: 19,
                start: 6,
                size: 1,
            }]),
        )]),
        compute: BTreeMap::from([(
            5,
            Ok(vec![ComputeInstanceInfo {
                id: 0,
                profile_id: 0,
                start: 0,
                size: 1,
            }]),
        )]),
        vgpus: Ok(vec![
            VgpuInfo {
                uuid: Ok("4b1c-1".into()),
                type_name: Ok("NVIDIA H200-1-18C".into()),
                type_id: Ok(1120),
                gpu_instance_id: Ok(Some(5)),
                vm: Some("vm-1".into()),
            },
            VgpuInfo {
                uuid: Ok("4b1c-2".into()),
                type_name: Err(NvmlFailure::Driver("unknown type".into())),
                type_id: Ok(1121),
                gpu_instance_id: Ok(None),
                vm: None,
            },
        ]),
        vgpu_types: Ok(vec![
            vgpu_type(1120, "NVIDIA H200-1-18C", Some(19), 18, Ok(Some(1))),
            vgpu_type(1130, "NVIDIA H200-141C", None, 141, Ok(None)),
        ]),
        heterogeneous: Err(NvmlFailure::NotSupported),
        // NVML_DEVICE_ARCH_HOPPER: an H200.
        architecture: Ok(9),
    }
}

/// A type whose calls all answer (in GiB, as the recorded names say).
pub fn vgpu_type(
    id: u32,
    name: &str,
    profile: Option<u32>,
    gib: u64,
    per_gpu_instance: Nvml<Option<u32>>,
) -> VgpuTypeInfo {
    VgpuTypeInfo {
        id,
        name: Ok(name.into()),
        gpu_instance_profile_id: Ok(profile),
        framebuffer_bytes: Ok(gib << 30),
        max_instances: Ok(7),
        max_instances_per_gpu_instance: per_gpu_instance,
    }
}

pub fn host(card: Nvml<Recorded>) -> Host {
    Host {
        card,
        versions: Ok(("570.124.06".into(), "12.570.124.06".into())),
    }
}

pub fn device() -> Bdf {
    "0000:3b:00.0".parse().unwrap()
}

pub fn reply(host: &Host) -> Reply {
    match read_card(host, device()) {
        Answer::Reply(reply) => *reply,
        other => panic!("{other:?}"),
    }
}

/// The reply as the probe reads it back from the helper's output.
pub fn read_back(reply: &Reply) -> Reply {
    Reply::from_json(reply.to_json().as_bytes(), Some(&device())).unwrap()
}

pub fn unreadable_kind(card: Nvml<Recorded>) -> String {
    let reply = reply(&host(card));
    assert_eq!(reply.case, Case::Unreadable);
    reply.unreadable.unwrap().kind
}
