//! The vGPUs an NVIDIA GPU is declared to hold on its SR-IOV virtual functions
//! ([`VgpuDeclared`]), and how its VFs compare with them: per VF, so a toolstack that pins a VM
//! to a VF knows whether that VF holds its declared type.

use crate::difference::{Difference, Fact};
use crate::vf::DeclaredVf;
use gpu_partition_types::{Bdf, VgpuTypeId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A vGPU type declared by its count alone: how a declaration of an earlier schema (before
/// schema 6) kept vGPUs, with no VF named. The next apply or restore of the GPU declares them
/// per VF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredVgpu {
    /// The type's ID.
    pub type_id: VgpuTypeId,
    /// Its name, as the config gave it.
    pub name: String,
    /// How many VFs hold it.
    pub count: u32,
}

impl DeclaredVgpu {
    /// `count` VFs of type `type_id` (named `name`).
    pub fn new(type_id: VgpuTypeId, name: impl Into<String>, count: u32) -> Self {
        Self {
            type_id,
            name: name.into(),
            count,
        }
    }
}

/// What a GPU's virtual functions are declared to hold (every match over it decides on each
/// case: not `#[non_exhaustive]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "vfs", rename_all = "snake_case")]
pub enum VgpuDeclared {
    /// No vGPU, the VFs disabled: what a vGPU leave declares.
    Off,
    /// The VFs enabled; each VF listed holds its type, every other VF none.
    On {
        /// The VFs that hold a type, by index.
        #[serde(default)]
        types: Vec<DeclaredVf>,
        /// Heterogeneous vGPU mode on (time-sliced vGPUs of several types on the GPU):
        /// `sriov-manage -e` clears it, so a restore sets it again.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        heterogeneous: bool,
    },
    /// The VFs enabled, holding these types by count, no VF named: a declaration of an earlier
    /// schema, compared by counts until the next apply or restore declares it per VF.
    Counted {
        /// Each type with its count.
        types: Vec<DeclaredVgpu>,
        /// Heterogeneous vGPU mode on.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        heterogeneous: bool,
    },
}

impl VgpuDeclared {
    /// The VFs enabled, each of `types` on its VF.
    pub fn on(types: Vec<DeclaredVf>, heterogeneous: bool) -> Self {
        let mut types = types;
        types.sort();
        Self::On {
            types,
            heterogeneous,
        }
    }

    /// Whether heterogeneous vGPU mode is declared on.
    pub fn heterogeneous(&self) -> bool {
        match self {
            Self::Off => false,
            Self::On { heterogeneous, .. } | Self::Counted { heterogeneous, .. } => *heterogeneous,
        }
    }

    /// How many vGPUs are declared.
    pub fn count(&self) -> u32 {
        match self {
            Self::Off => 0,
            Self::On { types, .. } => u32::try_from(types.len()).unwrap_or(u32::MAX),
            Self::Counted { types, .. } => types.iter().map(|vgpu| vgpu.count).sum(),
        }
    }

    /// Of `found`, the VFs that hold their declared type (a VF declared with none holds it
    /// when it has none): what a toolstack that pins a VM to a VF asks before it starts one.
    /// Empty for a declaration by counts, which names no VF.
    pub fn holding(&self, found: &[VfFound]) -> Vec<u32> {
        let Self::On { types, .. } = self else {
            return Vec::new();
        };
        found
            .iter()
            .filter(|vf| {
                let wanted = types.iter().find(|declared| declared.index == vf.index);
                wanted.map(|declared| declared.type_id) == vf.type_id
            })
            .map(|vf| vf.index)
            .collect()
    }

    /// How the GPU's VFs compare with this declaration: the VFs gone where vGPUs are declared
    /// on them; then per VF, each whose type is not its declared one (found and wanted, naming
    /// the VF), in index order — or, for a declaration by counts, each type's count found and
    /// declared and each type found that is not declared.
    pub fn drift(&self, device: Bdf, found: &VfsRead) -> Vec<Difference> {
        let at = |fact| Difference::new(device, fact);
        let vfs = match found {
            VfsRead::Unreadable(why) => return vec![at(Fact::VfsUnreadable { why: why.clone() })],
            VfsRead::Read(vfs) => vfs,
        };
        let mut differences = Vec::new();
        let declared = self.count();
        if vfs.is_empty() && declared > 0 {
            differences.push(at(Fact::VfsGone { declared }));
        }
        match self {
            Self::Off => differences.extend(
                vfs.iter()
                    .filter_map(|vf| vf.type_id.map(|found| (vf.index, found)))
                    .map(|(index, found)| {
                        at(Fact::VfType {
                            index,
                            found: Some(found),
                            wanted: None,
                        })
                    }),
            ),
            Self::On { types, .. } => {
                let mut indices: Vec<u32> = vfs
                    .iter()
                    .map(|vf| vf.index)
                    .chain(types.iter().map(|declared| declared.index))
                    .collect();
                indices.sort_unstable();
                indices.dedup();
                for index in indices {
                    let found = vfs
                        .iter()
                        .find(|vf| vf.index == index)
                        .and_then(|vf| vf.type_id);
                    let wanted = types.iter().find(|declared| declared.index == index);
                    if found != wanted.map(|declared| declared.type_id) {
                        differences.push(at(Fact::VfType {
                            index,
                            found,
                            wanted: wanted.cloned(),
                        }));
                    }
                }
            }
            Self::Counted { types, .. } => {
                differences.extend(counted_drift(device, types, vfs));
            }
        }
        differences
    }
}

/// A declaration by counts against the VFs found: each declared type's count found and
/// declared, then each type found that is not declared.
fn counted_drift(device: Bdf, declared: &[DeclaredVgpu], vfs: &[VfFound]) -> Vec<Difference> {
    let mut counts: BTreeMap<VgpuTypeId, u32> = BTreeMap::new();
    for id in vfs.iter().filter_map(|vf| vf.type_id) {
        *counts.entry(id).or_default() += 1;
    }
    let mut differences = Vec::new();
    for vgpu in declared {
        let found = counts.remove(&vgpu.type_id).unwrap_or(0);
        if found != vgpu.count {
            differences.push(Difference::new(
                device,
                Fact::VgpuCount {
                    type_id: vgpu.type_id,
                    name: vgpu.name.clone(),
                    found,
                    wanted: vgpu.count,
                },
            ));
        }
    }
    differences.extend(
        counts
            .into_iter()
            .map(|(type_id, found)| Difference::new(device, Fact::VgpuExtra { type_id, found })),
    );
    differences
}

/// One enabled VF as sysfs shows it: its number and its vGPU type (`None`: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VfFound {
    /// The VF's number (`virtfn<index>`).
    pub index: u32,
    /// Its vGPU type.
    pub type_id: Option<VgpuTypeId>,
    /// The GPU instance a MIG-backed vGPU on it sits on (`nvidia/gpu_instance_id`); `None`
    /// while it has none, and for a time-sliced vGPU.
    pub gpu_instance: Option<u32>,
}

impl VfFound {
    /// VF `index` holding `type_id`, on no GPU instance.
    pub fn new(index: u32, type_id: Option<VgpuTypeId>) -> Self {
        Self {
            index,
            type_id,
            gpu_instance: None,
        }
    }

    /// The same VF, its vGPU on GPU instance `id` (`None`: on none).
    pub fn on_instance(mut self, id: Option<u32>) -> Self {
        self.gpu_instance = id;
        self
    }
}

/// What a GPU's virtual functions hold, as sysfs says, for a comparison with what they are
/// declared to hold: each enabled VF with its vGPU type, or why they could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VfsRead {
    /// Each enabled VF, in index order (empty: no VF enabled, or no SR-IOV).
    Read(Vec<VfFound>),
    /// The SR-IOV state did not read: why.
    Unreadable(String),
}
