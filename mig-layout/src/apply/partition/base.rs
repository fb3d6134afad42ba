//! What one partition's request builds on and reads: the GPU's declaration as the request
//! changes it, and the card and its VFs as read under the host lock.

use super::refusal::PartitionRefusal;
use gpu_partition_types::{Bdf, Reply};
use layout_model::{
    Card, Declaration, DeclaredGpu, DeclaredVf, NvidiaDeclared, Owned, Placed, Unnamed, VfsRead,
    VgpuDeclared,
};

/// The label a GPU's declaration gets from a partition created where nothing was declared.
pub const PARTITIONS_LABEL: &str = "partitions";

/// The GPU's declaration, as one partition at a time changes it: its instances at their
/// placements, its owners, its board and its label.
pub(super) struct Base {
    pub(super) label: String,
    pub(super) placed: Vec<Placed>,
    pub(super) owners: Vec<Owned>,
    /// What becomes of the instances it does not name: the declared GPU's, `adopt` for a GPU
    /// not declared (its instances are not ours to destroy).
    pub(super) unnamed: Unnamed,
    /// Its VFs' declared types and heterogeneous mode, where vGPUs are declared per VF.
    pub(super) vfs: Option<DeclaredVfs>,
}

/// The types a GPU's VFs are declared to hold, per VF, and its heterogeneous vGPU mode.
#[derive(Debug, Clone, Default)]
pub(super) struct DeclaredVfs {
    pub(super) types: Vec<DeclaredVf>,
    pub(super) heterogeneous: bool,
}

/// What the request may build on: the GPU declared with MIG on and placed (or not declared).
pub(super) fn base(declared: Option<&Declaration>, device: Bdf) -> Result<Base, PartitionRefusal> {
    let label = declared.map_or_else(|| PARTITIONS_LABEL.to_owned(), |d| d.label.clone());
    let Some(gpu) = declared.and_then(|declared| declared.gpus.get(&device)) else {
        return Ok(Base {
            label,
            placed: Vec::new(),
            owners: Vec::new(),
            unnamed: Unnamed::Adopt,
            vfs: None,
        });
    };
    let nvidia: &NvidiaDeclared = match gpu {
        DeclaredGpu::Nvidia(nvidia) => nvidia,
        DeclaredGpu::Amd(_) => return Err(PartitionRefusal::NotNvidia { device }),
    };
    if !nvidia.mig_enabled {
        return Err(PartitionRefusal::MigOff { device });
    }
    // VFs declared off (a vGPU leave; a MIG layout applied after it declares nothing of
    // VFs, as here) carry no vGPU to keep.
    let vfs = match &nvidia.vgpu {
        None | Some(VgpuDeclared::Off) => None,
        Some(VgpuDeclared::On {
            types,
            heterogeneous,
        }) => Some(DeclaredVfs {
            types: types.clone(),
            heterogeneous: *heterogeneous,
        }),
        Some(VgpuDeclared::Counted { .. }) => return Err(PartitionRefusal::NotPlaced { device }),
    };
    let Some(placed) = nvidia.instances.clone() else {
        return Err(PartitionRefusal::NotPlaced { device });
    };
    Ok(Base {
        label,
        placed,
        owners: nvidia.owners.clone(),
        unnamed: nvidia.unnamed,
        vfs,
    })
}

/// What the request reads of the GPU under the lock: its card, and what its VFs hold.
pub(super) struct Seen {
    pub(super) reply: Reply,
    pub(super) card: Card,
    /// Whether the GPU offers SR-IOV virtual functions at all (`sriov_totalvfs`; where it
    /// did not read, `vfs` says why).
    pub(super) sriov: bool,
    pub(super) vfs: VfsRead,
}

impl Seen {
    /// The VFs as read, or why not: every vGPU decision needs them.
    pub(super) fn vfs(&self) -> Result<&[layout_model::VfFound], PartitionRefusal> {
        match &self.vfs {
            VfsRead::Read(vfs) => Ok(vfs),
            VfsRead::Unreadable(why) => Err(PartitionRefusal::Unreadable {
                device: self.card.device,
                why: why.clone(),
            }),
            _ => Err(PartitionRefusal::Unreadable {
                device: self.card.device,
                why: "what its virtual functions hold was read in a form not known here".to_owned(),
            }),
        }
    }
}
