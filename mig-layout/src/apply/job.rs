//! What an apply is to write, and under which lock: the host lock taken (or why not), the GPUs
//! a layout names on this host or a declaration declares, and the one rule for the GPUs a
//! caller asks for by address.

use super::amd::AmdSide;
use super::nvidia::NvidiaSide;
use super::options::ApplyOptions;
use super::run::ApplyError;
use super::side::Side;
use super::with::AmdWith;
use crate::document::Spec;
use crate::document::dcm::DcmProfile;
use crate::document::vgpu::VgpuSpec;
use crate::document::vgpu_name::VgpuTypeName;
use crate::document::{DeviceRef, Devices};
use crate::report::{ApplyReason, ApplyWarning, Draft, End};
use crate::select::{AmdHostGpu, AmdWanted, amd_gpus, select_amd};
use crate::select::{HostGpu, VgpuJob, Wanted, host_gpus, select, select_vgpu};
use gpu_host_probe::{Host, HostLock, LockError};
use gpu_partition_types::Bdf;
use layout_model::{Board, Declaration, DeclaredGpu, Owned, Unnamed, VgpuDeclared};
use std::collections::BTreeMap;

/// The GPUs an apply writes — NVIDIA ones (`wanted`), AMD ones (`amd`) — and (a restore) the
/// boards declared in the NVIDIA GPUs' slots.
pub(super) struct Job {
    pub wanted: Vec<Wanted>,
    pub amd: Vec<AmdWanted>,
    pub boards: Option<BTreeMap<Bdf, Board>>,
    /// Each declared NVIDIA GPU's owned instances (the declaration's, and a created one's).
    pub owners: BTreeMap<Bdf, Vec<Owned>>,
    /// Whether the host is declared to what it wants once it holds (every apply, leave and
    /// restore); `false`: it brings the cards back to the declaration and leaves that as it
    /// stands (a failed partition create's instance taken back).
    pub declares: bool,
}

impl Job {
    /// The NVIDIA GPUs `wanted`, no AMD GPU, not a restore.
    pub fn nvidia(wanted: Vec<Wanted>) -> Self {
        Self {
            wanted,
            amd: Vec::new(),
            boards: None,
            owners: BTreeMap::new(),
            declares: true,
        }
    }

    /// The AMD GPUs `amd`, no NVIDIA GPU, not a restore.
    pub fn amd(amd: Vec<AmdWanted>) -> Self {
        Self {
            amd,
            ..Self::nvidia(Vec::new())
        }
    }

    /// The same job, with the owned instances `declared` keeps (a job that brought its own
    /// keeps them).
    pub fn owned_by(mut self, declared: Option<&Declaration>) -> Self {
        if self.owners.is_empty() {
            self.owners = owners_of(declared);
        }
        self
    }

    /// Its sides, each where it names a GPU: the NVIDIA GPUs' (treating the instances a layout
    /// does not name as the options say), then the AMD GPUs' (written as `amd` says).
    pub fn sides<'w>(
        self,
        options: &ApplyOptions,
        amd: &'w AmdWith<'w>,
    ) -> Vec<Box<dyn Side + 'w>> {
        let unnamed = options.unnamed.unwrap_or(Unnamed::Match);
        let mut sides: Vec<Box<dyn Side + 'w>> = Vec::new();
        if !self.wanted.is_empty() {
            sides.push(Box::new(NvidiaSide::new(
                self.wanted,
                self.boards,
                unnamed,
                (self.owners, options.release.clone()),
            )));
        }
        if !self.amd.is_empty() {
            sides.push(Box::new(AmdSide::new(self.amd, amd)));
        }
        sides
    }
}

/// The host lock, or how the apply ends without it: blocked `lock_busy` (naming the holder) or
/// `cancelled`.
pub(super) fn take_lock(
    host: &Host,
    options: &ApplyOptions,
) -> Result<Result<HostLock, End>, ApplyError> {
    let taken = host.lock_unless(options.lock_wait, options.cancel.as_ref());
    match taken {
        Ok(lock) => Ok(Ok(lock)),
        Err(busy) if busy.is_busy() => {
            Ok(Err(End::blocked(ApplyReason::LockBusy, busy.to_string())))
        }
        Err(cancelled @ LockError::Cancelled { .. }) => Ok(Err(End::blocked(
            ApplyReason::Cancelled,
            format!("{cancelled}; nothing was changed"),
        ))),
        Err(error) => Err(ApplyError::Lock(error)),
    }
}

/// Of `named` (what a layout or a declaration names, by address), only those `asked` for; none
/// asked: all. An address asked for that is not named is refused, naming it and `label`: the
/// one rule an apply, a restore and an assert share.
fn asked_for<T>(
    named: Vec<T>,
    address: impl Fn(&T) -> Bdf,
    asked: &[Bdf],
    label: &str,
) -> Result<Vec<T>, ApplyError> {
    if let Some(device) = asked
        .iter()
        .find(|device| !named.iter().any(|item| address(item) == **device))
    {
        return Err(ApplyError::NotNamed {
            device: *device,
            label: label.to_owned(),
        });
    }
    Ok(named
        .into_iter()
        .filter(|item| asked.is_empty() || asked.contains(&address(item)))
        .collect())
}

/// The GPUs the layout `specs` names on this host (of `options.devices`, when given), each
/// treating the instances it does not name as the options say (matched by default).
pub(crate) fn resolve(
    host: &Host,
    label: &str,
    specs: &[Spec],
    options: &ApplyOptions,
    draft: &mut Draft,
) -> Result<Vec<Wanted>, ApplyError> {
    resolve_by(host, label, options, draft, |gpus| select(specs, gpus))
}

/// The vGPU spec a declared GPU's vGPUs are restored by: each type by the name the config gave
/// it, with how many VFs hold it (two names of one type apart, as the config had them).
fn declared_spec<'n>(
    device: Bdf,
    vgpus: impl IntoIterator<Item = (&'n str, u32)>,
    heterogeneous: bool,
) -> Result<VgpuSpec, ApplyError> {
    let mut types: Vec<(VgpuTypeName, u32)> = Vec::new();
    for (text, count) in vgpus {
        let name: VgpuTypeName = text.parse().map_err(|source| ApplyError::DeclaredVgpu {
            device,
            name: text.to_owned(),
            source,
        })?;
        match types.iter_mut().find(|(known, _)| *known == name) {
            Some((_, total)) => *total += count,
            None => types.push((name, count)),
        }
    }
    Ok(
        VgpuSpec::new(Devices::Listed(vec![DeviceRef::Address(device)]), types)
            .with_heterogeneous(heterogeneous),
    )
}

/// The vGPU job a declared NVIDIA GPU's VFs are restored by: none where they are not declared;
/// a leave where they are declared off; each type on its declared VF; by counts for a
/// declaration of an earlier schema, which named no VF.
pub(super) fn declared_vgpu_job(
    device: Bdf,
    vgpu: Option<&VgpuDeclared>,
) -> Result<Option<VgpuJob>, ApplyError> {
    Ok(match vgpu {
        None => None,
        Some(VgpuDeclared::Off) => Some(VgpuJob::Leave),
        Some(VgpuDeclared::On {
            types,
            heterogeneous,
        }) => Some(VgpuJob::Restore {
            spec: declared_spec(
                device,
                types.iter().map(|vf| (vf.name.as_str(), 1)),
                *heterogeneous,
            )?,
            vfs: types.clone(),
        }),
        Some(VgpuDeclared::Counted {
            types,
            heterogeneous,
        }) => Some(VgpuJob::Apply(declared_spec(
            device,
            types.iter().map(|vgpu| (vgpu.name.as_str(), vgpu.count)),
            *heterogeneous,
        )?)),
    })
}

/// The GPUs the vGPU config `specs` names on this host (of `options.devices`, when given).
pub(crate) fn resolve_vgpu(
    host: &Host,
    label: &str,
    specs: &[VgpuSpec],
    options: &ApplyOptions,
    draft: &mut Draft,
) -> Result<Vec<Wanted>, ApplyError> {
    resolve_by(host, label, options, draft, |gpus| select_vgpu(specs, gpus))
}

/// Every NVIDIA GPU bound to `nvidia` (of `options.devices`, when given), to leave vGPU: its
/// VFs disabled, then MIG off.
pub(super) fn resolve_vgpu_leave(
    host: &Host,
    label: &str,
    options: &ApplyOptions,
    draft: &mut Draft,
) -> Result<Vec<Wanted>, ApplyError> {
    resolve_by(host, label, options, draft, |gpus| {
        let mut selection = select(&leave_specs(), gpus)?;
        for wanted in &mut selection.wanted {
            wanted.vgpu = Some(VgpuJob::Leave);
        }
        Ok(selection)
    })
}

fn resolve_by(
    host: &Host,
    label: &str,
    options: &ApplyOptions,
    draft: &mut Draft,
    select: impl FnOnce(&[HostGpu]) -> Result<crate::select::Selection, crate::select::SelectError>,
) -> Result<Vec<Wanted>, ApplyError> {
    let gpus = host_gpus(host.sysfs_root())?;
    let selection = select(&gpus)?;
    draft
        .warnings
        .extend(selection.absent.into_iter().map(ApplyWarning::Absent));
    let unnamed = options.unnamed.unwrap_or(Unnamed::Match);
    let mut wanted = asked_for(selection.wanted, |w| w.gpu.bdf, &options.devices, label)?;
    for w in &mut wanted {
        w.want = w.want.clone().unnamed(unnamed);
    }
    Ok(wanted)
}

/// The AMD GPUs the Device Config Manager profile `profile` (labelled `label`) gives
/// partitions on this host (of `options.devices`, when given).
pub(crate) fn resolve_amd(
    host: &Host,
    label: &str,
    profile: &DcmProfile,
    options: &ApplyOptions,
) -> Result<Vec<AmdWanted>, ApplyError> {
    let gpus = amd_gpus(host.sysfs_root())?;
    let wanted = select_amd(profile, &gpus).map_err(ApplyError::Profile)?;
    asked_for(wanted, |w| w.gpu.bdf, &options.devices, label)
}

/// Every AMD GPU bound to `amdgpu` that shows partition files (of `options.devices`, when
/// given), wanting one undivided GPU, with the client services its declaration kept (a leave
/// reads no Device Config Manager file; one running blocks it, as it blocks a restore). A GPU
/// whose files do not read is wanted too: the preflight refuses it, naming why, rather than
/// leave it divided unseen.
pub(super) fn resolve_amd_leave(
    host: &Host,
    store: &mut dyn host_sync::StateStore,
    label: &str,
    options: &ApplyOptions,
) -> Result<Vec<AmdWanted>, ApplyError> {
    let declared = store.load()?.and_then(|state| state.declared);
    let services = |gpu: &AmdHostGpu| match declared.as_ref().and_then(|d| d.gpus.get(&gpu.bdf)) {
        Some(DeclaredGpu::Amd(amd)) => amd.client_services.clone(),
        Some(DeclaredGpu::Nvidia(_)) | None => Vec::new(),
    };
    let wanted = amd_gpus(host.sysfs_root())?
        .into_iter()
        .filter(|gpu| {
            !matches!(
                gpu_host_probe::amdgpu::read_partitions(host.sysfs_root(), gpu.bdf),
                Ok(None)
            )
        })
        .map(|gpu| AmdWanted {
            client_services: services(&gpu),
            gpu,
            want: layout_model::amd::AmdWant::UNDIVIDED,
            line: None,
        })
        .collect();
    asked_for(wanted, |w| w.gpu.bdf, &options.devices, label)
}

/// Each declared GPU (of `options.devices`, when given) that is on the host now bound to its
/// vendor's driver — an NVIDIA GPU to `nvidia`, an AMD GPU to `amdgpu` —, wanting what it is
/// declared to be (an NVIDIA GPU's instances it does not name as the options say, else as it
/// was declared); the others are warned about and left alone.
pub(super) fn declared_job(
    host: &Host,
    declared: &Declaration,
    options: &ApplyOptions,
    draft: &mut Draft,
) -> Result<Job, ApplyError> {
    let gpus: Vec<HostGpu> = host_gpus(host.sysfs_root())?;
    let amd = amd_gpus(host.sysfs_root())?;
    let asked = asked_for(
        declared.gpus.iter().collect(),
        |(bdf, _)| **bdf,
        &options.devices,
        &declared.label,
    )?;
    let mut wanted = Vec::new();
    let mut amd_wanted = Vec::new();
    let mut boards = BTreeMap::new();
    for (bdf, gpu) in asked {
        let absent = ApplyWarning::DeclaredAbsent { device: *bdf };
        match gpu {
            DeclaredGpu::Amd(declared) => match amd.iter().find(|found| found.bdf == *bdf) {
                Some(found) => amd_wanted.push(AmdWanted {
                    gpu: *found,
                    want: declared.want,
                    line: None,
                    client_services: declared.client_services.clone(),
                }),
                None => draft.warnings.push(absent),
            },
            DeclaredGpu::Nvidia(declared) => match gpus.iter().find(|found| found.bdf == *bdf) {
                Some(found) => {
                    let mut want = declared.want();
                    if let Some(unnamed) = options.unnamed {
                        want = want.unnamed(unnamed);
                    }
                    wanted.push(Wanted {
                        gpu: found.clone(),
                        want,
                        line: None,
                        vgpu: declared_vgpu_job(*bdf, declared.vgpu.as_ref())?,
                    });
                    boards.insert(*bdf, declared.board.clone());
                }
                None => draft.warnings.push(absent),
            },
        }
    }
    wanted.sort_by_key(|w| w.gpu.index);
    amd_wanted.sort_by_key(|w| w.gpu.index);
    Ok(Job {
        wanted,
        amd: amd_wanted,
        boards: Some(boards),
        owners: owners_of(Some(declared)),
        declares: true,
    })
}

/// The layout [`leave`](super::leave) applies: MIG off on every NVIDIA GPU.
pub(super) fn leave_specs() -> Vec<crate::document::Spec> {
    vec![crate::document::Spec::new(
        crate::document::Devices::All,
        false,
        Vec::new(),
    )]
}

/// Each declared NVIDIA GPU's owned instances.
pub(super) fn owners_of(declared: Option<&Declaration>) -> BTreeMap<Bdf, Vec<Owned>> {
    declared
        .into_iter()
        .flat_map(|declared| &declared.gpus)
        .filter_map(|(bdf, gpu)| gpu.nvidia().map(|nvidia| (*bdf, nvidia.owners.clone())))
        .filter(|(_, owners)| !owners.is_empty())
        .collect()
}

/// A GPU of a job that is not ours.
pub(super) struct NotOurs {
    /// The GPU.
    pub device: Bdf,
    /// Who owns it.
    pub ownership: gpu_host_probe::Ownership,
}

impl NotOurs {
    /// The end of a job that names it: blocked, nothing written.
    pub fn blocked(&self) -> End {
        End::blocked(
            ApplyReason::GpuNotOurs,
            format!(
                "{} is not ours (ownership {}): nothing is written, restored or reset on it",
                self.device, self.ownership
            ),
        )
    }
}

impl Job {
    /// Its GPUs that are not ours (`owned_by`: each GPU's ownership, absent: ours).
    fn not_ours(&self, owned_by: &BTreeMap<Bdf, gpu_host_probe::Ownership>) -> Vec<NotOurs> {
        self.wanted
            .iter()
            .map(|w| w.gpu.bdf)
            .chain(self.amd.iter().map(|w| w.gpu.bdf))
            .filter_map(|device| {
                owned_by
                    .get(&device)
                    .copied()
                    .filter(|ownership| !ownership.is_ours())
                    .map(|ownership| NotOurs { device, ownership })
            })
            .collect()
    }

    /// The first of its GPUs not ours that the caller named (`named`): the job is refused.
    pub fn names_not_ours(
        &self,
        owned_by: &BTreeMap<Bdf, gpu_host_probe::Ownership>,
        named: &[Bdf],
    ) -> Option<NotOurs> {
        self.not_ours(owned_by)
            .into_iter()
            .find(|not| named.contains(&not.device))
    }

    /// The job without its GPUs that are not ours, and those left out.
    pub fn ours(
        mut self,
        owned_by: &BTreeMap<Bdf, gpu_host_probe::Ownership>,
    ) -> (Job, Vec<NotOurs>) {
        let left = self.not_ours(owned_by);
        self.wanted
            .retain(|w| !left.iter().any(|not| not.device == w.gpu.bdf));
        self.amd
            .retain(|w| !left.iter().any(|not| not.device == w.gpu.bdf));
        (self, left)
    }
}
