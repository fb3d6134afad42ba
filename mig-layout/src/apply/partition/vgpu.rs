//! The vGPU side of one partition: which VF a MIG-backed vGPU takes, whether the driver can
//! only place it on the GPU instance made for it, and which declared VF goes with a GPU
//! instance destroyed.

use super::base::{Base, DeclaredVfs, Seen};
use super::refusal::PartitionRefusal;
use crate::apply::vgpu::catalogue;
use crate::document::vgpu::find_in;
use crate::vgpu::VgpuTypeName;
use gpu_partition_types::{Nullable, VgpuTypeId};
use layout_model::{DeclaredVf, VgpuDeclared};

/// Refused unless the GPU's VFs hold what its declaration says (each declared type on its
/// VF, every other VF none; with no vGPU declared, no VF holding a type: another's vGPU, made
/// by hand or left by a layout that declares no VF): otherwise restoring them with the one
/// partition's change would write more than that partition. VFs declared enabled (vGPUs
/// declared, even none left) and found disabled on a card that holds a GPU instance are a
/// difference too: enabling them again (`sriov-manage -e`) would wipe every instance.
pub(super) fn as_declared(base: &Base, seen: &Seen) -> Result<(), PartitionRefusal> {
    let found = seen.vfs()?;
    let differs = match &base.vfs {
        None => found.iter().any(|vf| vf.type_id.is_some()),
        Some(_) if found.is_empty() && !seen.card.instances_now().is_empty() => true,
        Some(vfs) => !VgpuDeclared::on(vfs.types.clone(), vfs.heterogeneous)
            .drift(seen.card.device, &seen.vfs)
            .is_empty(),
    };
    if differs {
        Err(PartitionRefusal::CardDiffers {
            device: seen.card.device,
        })
    } else {
        Ok(())
    }
}

/// A MIG-backed vGPU of type `name`: the GPU instance profile it sits on, and the VF it takes
/// (the lowest enabled VF that holds no type and is declared to hold none; VF 0 where the VFs
/// are enabled for it, on a card that holds no GPU instance).
///
/// The driver places a MIG-backed vGPU on a GPU instance of its type's profile that has room
/// for it; NVIDIA does not publish which one it picks when several have room. So the request is
/// refused while any GPU instance of the profile is on the card: once the partition's GPU
/// instance is made, it is the only one the vGPU can land on, now and after a restore.
pub(super) fn chosen_vf(
    base: &Base,
    seen: &Seen,
    name: &VgpuTypeName,
) -> Result<(u32, DeclaredVf), PartitionRefusal> {
    let device = seen.card.device;
    let vfs = seen.vfs()?;
    if !seen.sriov {
        return Err(PartitionRefusal::NoSriov { device });
    }
    // VFs disabled: enabling them (`sriov-manage -e`, in the executor) wipes every GPU
    // instance, so only a card that holds none may have them enabled for one partition.
    if vfs.is_empty() && !seen.card.instances_now().is_empty() {
        return Err(PartitionRefusal::VfsDisabled { device });
    }
    let catalogue = catalogue(&seen.reply).ok_or_else(|| PartitionRefusal::Unreadable {
        device,
        why: "its vGPU type catalogue did not read".to_owned(),
    })?;
    let no_type = || PartitionRefusal::NoVgpuType {
        device,
        name: name.clone(),
    };
    let kind = find_in(&catalogue, name).ok_or_else(no_type)?;
    let type_id = VgpuTypeId::new(kind.id).ok_or_else(no_type)?;
    let profile_id = match kind.gpu_instance_profile_id.read() {
        Some(Nullable::Value(profile_id)) => *profile_id,
        Some(Nullable::Null) => {
            return Err(PartitionRefusal::TimeSliced {
                device,
                name: name.clone(),
            });
        }
        None => {
            return Err(PartitionRefusal::Unreadable {
                device,
                why: format!("the GPU instance profile of vGPU type {name} did not read"),
            });
        }
    };
    // The declaration keeps which VF a vGPU is on, not which GPU instance, and the driver
    // places a MIG-backed vGPU on an instance of its profile with room, which one NVIDIA does
    // not say: with another instance of the profile on the card, the vGPU could land there now,
    // or when a restore makes every instance again before it writes the types. So a vGPU
    // partition's profile has one instance on the GPU: its own.
    if let Some(instance) = seen
        .card
        .instances_now()
        .iter()
        .find(|instance| instance.profile_id == profile_id)
    {
        return Err(PartitionRefusal::LandsElsewhere {
            device,
            gpu_instance_id: instance.id,
        });
    }
    let declared = |index: u32| {
        base.vfs
            .iter()
            .flat_map(|vfs| &vfs.types)
            .any(|vf| vf.index == index)
    };
    // The VFs about to be enabled all come up without a type: the first is free.
    let free = if vfs.is_empty() {
        0
    } else {
        vfs.iter()
            .filter(|vf| vf.type_id.is_none() && !declared(vf.index))
            .map(|vf| vf.index)
            .min()
            .ok_or(PartitionRefusal::NoFreeVf { device })?
    };
    Ok((profile_id, DeclaredVf::new(free, type_id, name.to_string())))
}

/// The GPU's VFs' declared types once GPU instance `id` is destroyed (the vGPU on it goes
/// with it, its type cleared first; its VF stays enabled), and whether one did.
pub(super) fn without_the_one_on(
    base: &Base,
    seen: &Seen,
    id: u32,
) -> Result<(Option<DeclaredVfs>, bool), PartitionRefusal> {
    let vfs = seen.vfs()?;
    // With MIG on, every vGPU is MIG-backed: one whose GPU instance did not read could sit on
    // the instance to destroy, which NVML refuses to destroy under it.
    if let Some(vf) = vfs
        .iter()
        .find(|vf| vf.type_id.is_some() && vf.gpu_instance.is_none())
    {
        return Err(PartitionRefusal::Unreadable {
            device: seen.card.device,
            why: format!(
                "virtual function {} holds a vGPU type, and the GPU instance it sits on did not \
                 read",
                vf.index
            ),
        });
    }
    let on: Vec<u32> = vfs
        .iter()
        .filter(|vf| vf.gpu_instance == Some(id))
        .map(|vf| vf.index)
        .collect();
    if on.is_empty() {
        return Ok((base.vfs.clone(), false));
    }
    // A vGPU sits on it: declared (the VFs read as declared), or the card differs.
    let Some(vfs) = &base.vfs else {
        return Err(PartitionRefusal::CardDiffers {
            device: seen.card.device,
        });
    };
    let types = vfs
        .types
        .iter()
        .filter(|vf| !on.contains(&vf.index))
        .cloned()
        .collect();
    let kept = DeclaredVfs {
        types,
        heterogeneous: vfs.heterogeneous,
    };
    Ok((Some(kept), true))
}

/// A GPU instance of `profile_id` made beside a vGPU partition of that profile: refused, as a
/// restore could then place the vGPU on either (one instance per vGPU partition's profile).
pub(super) fn beside_a_vgpu(seen: &Seen, profile_id: u32) -> Result<(), PartitionRefusal> {
    let vfs = seen.vfs()?;
    let taken = seen.card.instances_now().iter().find(|instance| {
        instance.profile_id == profile_id
            && vfs
                .iter()
                .any(|vf| vf.type_id.is_some() && vf.gpu_instance == Some(instance.id))
    });
    match taken {
        Some(instance) => Err(PartitionRefusal::ProfileHoldsVgpu {
            device: seen.card.device,
            gpu_instance_id: instance.id,
        }),
        None => Ok(()),
    }
}
