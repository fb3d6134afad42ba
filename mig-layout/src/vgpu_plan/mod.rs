//! The vGPU plan of one GPU: from what the card holds (its MIG mode, its VFs and their types,
//! its catalogue, who holds each VF) and a vGPU spec, the steps in the order the driver forces,
//! or why none may be taken. Pure: the executor runs the steps.
//!
//! The order, as measured on hardware (bigstack cubecos PR 1223) and as NVIDIA's vGPU user guide
//! and vgpu-device-manager's per-VF backend (PR 195) agree:
//!
//! - apply: MIG mode on → `sriov-manage -e` (it rebinds the GPU and wipes every GPU instance) →
//!   heterogeneous mode where asked (`sriov-manage` clears it) → GPU instances → the type written
//!   to each VF (a type on a VF whose GPU instance was made before the VFs fails with EIO);
//! - on VFs that stay: each type that goes cleared first, before any GPU instance is destroyed
//!   (NVML refuses to destroy a GPU instance a vGPU sits on: `NVML_ERROR_IN_USE`);
//! - leave: `sriov-manage -d` first (the driver refuses a raw `sriov_numvfs` write, and takes
//!   the instances with the VFs), then what instances remain, then MIG off (refused while VFs
//!   exist).
//!
//! MIG mode cannot change while VFs exist, so a host whose VFs exist with MIG off, asked for
//! MIG-backed types, has its VFs disabled first and enabled again after the mode.

use crate::document::vgpu::find_in;
use crate::vgpu::{VgpuSpec, VgpuTypeName};
use gpu_host_probe::Holder;
use gpu_partition_types::{Bdf, Nullable, VgpuType, VgpuTypeId};
use host_sync::sriov::{Sriov, VirtualFunction};
use layout_model::DeclaredVf;
use std::collections::BTreeMap;

mod refusal;
mod step;

pub(crate) use refusal::describe;
pub use refusal::{Missing, VgpuRefusal};
pub use step::VgpuStep;

/// What the host holds of one GPU's vGPU side, as read before the plan.
#[derive(Debug, Clone, Copy)]
pub struct VgpuCard<'a> {
    /// The GPU.
    pub device: Bdf,
    /// Whether MIG mode is on now (the helper's read).
    pub mig_enabled: bool,
    /// Whether heterogeneous vGPU mode is on (the helper's `vgpu_mode`); `None` where the card
    /// has no such setting or it could not be read.
    pub heterogeneous: Option<bool>,
    /// Its SR-IOV state (`host_sync::sriov::read_sriov`).
    pub sriov: &'a Sriov,
    /// Its vGPU type catalogue (the helper's `vgpu_types`).
    pub catalogue: &'a [VgpuType],
    /// Every process holding a VFIO group file open (`gpu_host_probe::holders` over the VFs'
    /// [`VirtualFunction::vfio_group_file`]s).
    pub holders: &'a [Holder],
}

/// The steps that bring `card` to `spec`, in the driver's order, after every check a write
/// must wait for: the catalogue's ([`VgpuSpec::sized_by`]), the VF count, the types the card
/// can run together, and no VF the plan changes held by a VM. No step where the card holds the
/// spec, but the MIG layout of a MIG-backed spec, which the MIG executor diffs (zero writes
/// where it holds). The spec's `heterogeneous` asks for heterogeneous vGPU mode, after the VFs
/// and before any type. On VFs that stay, one holding a wanted type keeps it (up to the count)
/// and every other with a type is cleared; the free VFs are filled in index order.
pub fn plan_vgpu(spec: &VgpuSpec, card: &VgpuCard<'_>) -> Result<Vec<VgpuStep>, VgpuRefusal> {
    plan_with(spec, None, card)
}

/// [`plan_vgpu`] with each type on the VF `vfs` declares for it (a restore: a VM pinned to a
/// VF finds its type there again); every other VF holds none. `spec` is the same vGPUs by
/// count (what sizes the MIG layout), and its `heterogeneous`.
pub fn plan_vgpu_on_vfs(
    spec: &VgpuSpec,
    vfs: &[DeclaredVf],
    card: &VgpuCard<'_>,
) -> Result<Vec<VgpuStep>, VgpuRefusal> {
    plan_with(spec, Some(vfs), card)
}

/// The plan, each type on a free VF (`pinned` none) or on its declared one.
fn plan_with(
    spec: &VgpuSpec,
    pinned: Option<&[DeclaredVf]>,
    card: &VgpuCard<'_>,
) -> Result<Vec<VgpuStep>, VgpuRefusal> {
    let heterogeneous = spec.heterogeneous;
    let device = card.device;
    let missing = |missing| VgpuRefusal::NotAVgpuHost { device, missing };
    if card.sriov.total_vfs == 0 {
        return Err(missing(Missing::Sriov));
    }
    let layout = spec
        .sized_by(card.catalogue)
        .map_err(|source| VgpuRefusal::Impossible { device, source })?;
    let wanted: u32 = spec.vgpu_devices.iter().map(|(_, count)| *count).sum();
    let beyond = pinned
        .into_iter()
        .flatten()
        .map(|vf| vf.index)
        .find(|index| *index >= card.sriov.total_vfs);
    if wanted > card.sriov.total_vfs || beyond.is_some() {
        return Err(VgpuRefusal::TooManyVgpus {
            device,
            wanted,
            total: card.sriov.total_vfs,
        });
    }
    // Each wanted type with its ID (sized_by found every one in the catalogue).
    let types: Vec<(&VgpuTypeName, VgpuTypeId, u32)> = spec
        .vgpu_devices
        .iter()
        .filter_map(|(name, count)| {
            let kind = find_in(card.catalogue, name)?;
            VgpuTypeId::new(kind.id).map(|id| (name, id, *count))
        })
        .collect();

    // VFs restored to hold no type leave the MIG mode to the GPU's MIG declaration (the last
    // vGPU partition destroyed keeps MIG on and the VFs enabled).
    let needs_mig = if pinned.is_some_and(<[DeclaredVf]>::is_empty) {
        card.mig_enabled
    } else {
        layout.mig_enabled
    };
    let vfs_on = !card.sriov.vfs.is_empty();
    let mig_change = needs_mig != card.mig_enabled;
    // The VFs are enabled by this plan when there are none; again when the MIG mode must change
    // under them (the driver refuses the change while they exist), or when fewer are enabled
    // than the spec has vGPUs or than a pinned VF needs (`sriov-manage -e` enables every VF the
    // GPU can have).
    let enabled = card.sriov.vfs.len();
    let too_few = usize::try_from(wanted).map_or(true, |wanted| wanted > enabled)
        || pinned
            .into_iter()
            .flatten()
            .any(|vf| !card.sriov.vfs.iter().any(|found| found.index == vf.index));
    let enable = !vfs_on || mig_change || too_few;
    let mut steps = Vec::new();
    if vfs_on && enable {
        steps.push(VgpuStep::DisableVfs);
    }
    if mig_change {
        steps.push(VgpuStep::MigMode(needs_mig));
    }
    if enable {
        steps.push(VgpuStep::EnableVfs);
    }
    if heterogeneous && needs_mig {
        return Err(missing(Missing::HeterogeneousWithMig));
    }
    if heterogeneous && (enable || card.heterogeneous != Some(true)) {
        if card.heterogeneous.is_none() {
            return Err(missing(Missing::Heterogeneous));
        }
        steps.push(VgpuStep::Heterogeneous);
    }
    // The types the card runs together: one time-sliced type at a time unless heterogeneous
    // mode is on once the plan has run (`sriov-manage -e` clears it).
    let mixes = heterogeneous || (!enable && card.heterogeneous == Some(true));
    refuse_together(device, &types, card.catalogue, mixes)?;
    if needs_mig && layout.mig_enabled {
        steps.push(VgpuStep::GpuInstances(layout));
    }

    // What each VF that stays holds now (none once the plan enables them).
    let mut now: BTreeMap<u32, VgpuTypeId> = BTreeMap::new();
    if !enable {
        for vf in &card.sriov.vfs {
            let vgpu = vf
                .vgpu
                .as_ref()
                .ok_or(missing(Missing::VgpuFiles { index: vf.index }))?;
            if let Some(current) = vgpu.current_type {
                now.insert(vf.index, current);
            }
        }
    }
    let target = match pinned {
        Some(vfs) => vfs
            .iter()
            .filter_map(|vf| {
                types
                    .iter()
                    .find(|(_, id, _)| *id == vf.type_id)
                    .map(|(name, id, _)| (vf.index, ((*name).clone(), *id)))
            })
            .collect(),
        None => free_target(&types, &now, enable, card),
    };
    let cleared: Vec<u32> = now
        .iter()
        .filter(|(index, id)| target.get(index).map(|(_, want)| want) != Some(*id))
        .map(|(index, _)| *index)
        .collect();
    let writes: Vec<VgpuStep> = target
        .iter()
        .filter(|(index, (_, id))| now.get(index) != Some(id))
        .map(|(index, (name, id))| VgpuStep::WriteType {
            index: *index,
            name: name.clone(),
            id: *id,
        })
        .collect();

    // Nothing a running VM uses may change: every VF when the VFs are disabled, else each VF
    // cleared or written.
    let touched: Vec<&VirtualFunction> = if vfs_on && enable {
        card.sriov.vfs.iter().collect()
    } else {
        let changed = cleared
            .iter()
            .copied()
            .chain(writes.iter().filter_map(|step| match step {
                VgpuStep::WriteType { index, .. } => Some(*index),
                _ => None,
            }));
        let mut touched: Vec<&VirtualFunction> = changed
            .filter_map(|index| card.sriov.vfs.iter().find(|vf| vf.index == index))
            .collect();
        touched.sort_by_key(|vf| vf.index);
        touched.dedup_by_key(|vf| vf.index);
        touched
    };
    refuse_held(device, &touched, card.holders)?;

    // The clears come first, before any GPU instance is destroyed: the driver refuses to
    // destroy a GPU instance a MIG-backed vGPU sits on. (A plan with clears keeps its VFs, so
    // it has no `sriov-manage` or mode step to come before them.)
    let mut ordered: Vec<VgpuStep> = cleared
        .iter()
        .map(|index| VgpuStep::ClearType { index: *index })
        .collect();
    ordered.extend(steps);
    ordered.extend(writes);
    Ok(ordered)
}

/// Where a config's types go, each anywhere free: on VFs that stay, one holding a wanted type
/// keeps it (up to the count); the VFs left (every other, cleared) are filled in index order.
fn free_target(
    types: &[(&VgpuTypeName, VgpuTypeId, u32)],
    now: &BTreeMap<u32, VgpuTypeId>,
    enable: bool,
    card: &VgpuCard<'_>,
) -> BTreeMap<u32, (VgpuTypeName, VgpuTypeId)> {
    let mut target = BTreeMap::new();
    let mut held: Vec<u32> = vec![0; types.len()];
    let indices: Vec<u32> = if enable {
        (0..card.sriov.total_vfs).collect()
    } else {
        card.sriov.vfs.iter().map(|vf| vf.index).collect()
    };
    let mut free = Vec::new();
    for index in indices {
        let keep = now.get(&index).and_then(|current| {
            types
                .iter()
                .zip(&held)
                .position(|((_, id, count), held)| id == current && held < count)
        });
        match keep.and_then(|at| Some((at, types.get(at)?))) {
            Some((at, (name, id, _))) => {
                if let Some(count) = held.get_mut(at) {
                    *count += 1;
                }
                target.insert(index, ((*name).clone(), *id));
            }
            None => free.push(index),
        }
    }
    free.sort_unstable();
    let mut slots = free.into_iter();
    for ((name, id, count), held) in types.iter().zip(&held) {
        for _ in *held..*count {
            // Never short: the spec asks for no more vGPUs than the VFs the plan leaves.
            let Some(index) = slots.next() else {
                break;
            };
            target.insert(index, ((*name).clone(), *id));
        }
    }
    target
}

/// The types a plan leaves on the card refused together where the card cannot run them: more
/// than one time-sliced type without heterogeneous mode (NVML's `nvmlDeviceGetCreatableVgpus`:
/// with a time-sliced vGPU running, only its own type stays creatable).
fn refuse_together(
    device: Bdf,
    types: &[(&VgpuTypeName, VgpuTypeId, u32)],
    catalogue: &[VgpuType],
    mixes: bool,
) -> Result<(), VgpuRefusal> {
    if mixes {
        return Ok(());
    }
    let time_sliced: Vec<VgpuTypeName> = types
        .iter()
        .filter(|(_, id, count)| {
            *count > 0
                && catalogue.iter().any(|kind| {
                    kind.id == id.get()
                        && matches!(kind.gpu_instance_profile_id.read(), Some(Nullable::Null))
                })
        })
        .map(|(name, _, _)| (*name).clone())
        .collect();
    if time_sliced.len() > 1 {
        return Err(VgpuRefusal::TypesTogether {
            device,
            types: time_sliced,
        });
    }
    Ok(())
}

/// What each VF holds once `steps` have run on `card` (the VFs enabled anew hold nothing until
/// a type is written): the per-VF declaration an apply leaves, in index order.
pub(crate) fn assigned(card: &VgpuCard<'_>, steps: &[VgpuStep]) -> Vec<DeclaredVf> {
    let mut held: BTreeMap<u32, (Option<VgpuTypeName>, VgpuTypeId)> = BTreeMap::new();
    if !steps.contains(&VgpuStep::EnableVfs) {
        for vf in &card.sriov.vfs {
            if let Some(current) = vf.vgpu.as_ref().and_then(|vgpu| vgpu.current_type) {
                held.insert(vf.index, (None, current));
            }
        }
    }
    for step in steps {
        match step {
            VgpuStep::ClearType { index } => {
                held.remove(index);
            }
            VgpuStep::WriteType { index, name, id } => {
                held.insert(*index, (Some(name.clone()), *id));
            }
            _ => {}
        }
    }
    held.into_iter()
        .filter_map(|(index, (name, type_id))| {
            // A type kept on its VF is named as the catalogue names it, short.
            let name = name.map(|name| name.to_string()).or_else(|| {
                card.catalogue
                    .iter()
                    .find(|kind| kind.id == type_id.get())
                    .and_then(|kind| kind.name.read())
                    .and_then(|name| VgpuTypeName::short_name(name).map(str::to_owned))
            })?;
            Some(DeclaredVf::new(index, type_id, name))
        })
        .collect()
}

/// The steps that leave vGPU on `card`: the VFs disabled first (the GPU instances go with
/// them), then MIG off (the MIG executor leaves what instances remain). None where there are
/// no VFs and MIG is off.
pub fn plan_vgpu_leave(card: &VgpuCard<'_>) -> Result<Vec<VgpuStep>, VgpuRefusal> {
    let mut steps = Vec::new();
    if !card.sriov.vfs.is_empty() {
        let all: Vec<&VirtualFunction> = card.sriov.vfs.iter().collect();
        refuse_held(card.device, &all, card.holders)?;
        steps.push(VgpuStep::DisableVfs);
    }
    if card.mig_enabled {
        steps.push(VgpuStep::MigMode(false));
    }
    Ok(steps)
}

/// The first VF of `touched` whose VFIO group is held refuses the plan, naming who holds it.
fn refuse_held(
    device: Bdf,
    touched: &[&VirtualFunction],
    holders: &[Holder],
) -> Result<(), VgpuRefusal> {
    for vf in touched {
        let Some(file) = vf.vfio_group_file() else {
            continue;
        };
        let held: Vec<Holder> = holders
            .iter()
            .filter(|holder| holder.file == file)
            .cloned()
            .collect();
        if !held.is_empty() {
            return Err(VgpuRefusal::InUse {
                device,
                index: vf.index,
                vf: vf.bdf,
                holders: held,
            });
        }
    }
    Ok(())
}
