//! The host's vGPUs as a vgpu-device-manager v1 document, which `vgpu apply` takes back as zero
//! writes: per GPU, the types its VFs hold counted by the names its card's catalogue gives
//! (short names, as vgpu-device-manager compares them); GPUs alike share one entry (`devices:
//! all` when every GPU of the host is alike). [`export_vgpu_host`] reads the cards and their
//! VFs under the host lock; [`export_vgpu_declared`] writes what the host is declared to hold
//! instead, each GPU by its PCI address.
//!
//! What the format cannot say is left out with a typed warning, never guessed: a GPU with no
//! VF enabled (`vgpu-devices: {}` asks for VFs), a type the catalogue does not name; and where
//! a GPU's MIG layout is not the one its vGPUs need, the document is written and the warning
//! names what applying it would change.

use crate::apply::ApplyError;
use crate::apply::vgpu::catalogue;
use crate::document::DeviceRef;
use crate::document::vgpu::{VgpuDocument, VgpuSpec};
use crate::document::vgpu_name::VgpuTypeName;
use crate::export::grouped;
use crate::select::{HostGpu, host_gpus, want_of};
use gpu_host_probe::Host;
use gpu_host_probe::helper::{Helper, ReadFailure};
use gpu_partition_types::{Bdf, Reply, VgpuType};
use layout_model::{Declaration, Difference, Unnamed, VfsRead, VgpuDeclared, differences};
use serde::Serialize;
use std::time::Duration;

/// What a vGPU export wrote, and what it could not say in the format.
///
/// It serializes to the document of `mxctl --json vgpu export`: `document` (the v1 document,
/// as JSON) and `warnings` (each `{"kind", "device", "index", …, "message"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct VgpuExported {
    /// The document.
    #[serde(serialize_with = "document_json")]
    pub document: VgpuDocument,
    /// What the format cannot carry.
    pub warnings: Vec<VgpuExportWarning>,
}

fn document_json<S: serde::Serializer>(
    document: &VgpuDocument,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    document.to_json().serialize(serializer)
}

/// What a vgpu-device-manager document cannot carry of a GPU: its facts, the message derived
/// from them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VgpuExportWarning {
    /// The GPU's card did not read (the helper's failure), so its types have no names: left
    /// out.
    Unread {
        /// The GPU.
        gpu: HostGpu,
        /// Why.
        failure: ReadFailure,
    },
    /// The card's reply lists no readable vGPU type catalogue: left out.
    NoCatalogue {
        /// The GPU.
        gpu: HostGpu,
    },
    /// The GPU's SR-IOV state did not read: left out.
    VfsUnread {
        /// The GPU.
        gpu: HostGpu,
        /// Why.
        why: String,
    },
    /// No VF is enabled on the GPU: left out (`vgpu-devices: {}` would enable them).
    NoVfs {
        /// The GPU.
        gpu: HostGpu,
    },
    /// A VF holds a type the card's catalogue does not name as a vgpu-device-manager name: the
    /// GPU is left out.
    UnnamedType {
        /// The GPU.
        gpu: HostGpu,
        /// The VF's number.
        index: u32,
        /// The type's ID.
        type_id: u32,
    },
    /// The GPU's MIG layout is not the one its vGPUs need (as the catalogue sizes them):
    /// exported; applying the document changes what these name.
    MigDiffers {
        /// The GPU.
        gpu: HostGpu,
        /// How the card differs from the layout its vGPUs need.
        differences: Vec<Difference>,
    },
    /// A declared GPU whose declaration is a MIG layout alone (`partition export --declared`
    /// writes it), or no vGPU (a `vgpu leave`): left out.
    NotDeclaredVgpu {
        /// The GPU.
        device: Bdf,
        /// Whether it is declared with no vGPU (a leave), rather than a MIG layout alone.
        left: bool,
    },
    /// A declared type name that is no vGPU type name (a state edited by hand): the GPU is
    /// left out rather than guessed.
    DeclaredName {
        /// The GPU.
        device: Bdf,
        /// The name as the state has it.
        name: String,
    },
}

impl VgpuExportWarning {
    /// Its kind, as a token (`kind` in `--json`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Unread { .. } => "unread",
            Self::NoCatalogue { .. } => "no_catalogue",
            Self::VfsUnread { .. } => "vfs_unread",
            Self::NoVfs { .. } => "no_vfs",
            Self::UnnamedType { .. } => "unnamed_type",
            Self::MigDiffers { .. } => "mig_differs",
            Self::NotDeclaredVgpu { .. } => "not_declared_vgpu",
            Self::DeclaredName { .. } => "declared_name",
        }
    }

    fn gpu(&self) -> Option<&HostGpu> {
        match self {
            Self::Unread { gpu, .. }
            | Self::NoCatalogue { gpu }
            | Self::VfsUnread { gpu, .. }
            | Self::NoVfs { gpu }
            | Self::UnnamedType { gpu, .. }
            | Self::MigDiffers { gpu, .. } => Some(gpu),
            Self::NotDeclaredVgpu { .. } | Self::DeclaredName { .. } => None,
        }
    }

    /// The GPU it is about.
    pub fn device(&self) -> Bdf {
        match self {
            Self::NotDeclaredVgpu { device, .. } | Self::DeclaredName { device, .. } => *device,
            Self::Unread { gpu, .. }
            | Self::NoCatalogue { gpu }
            | Self::VfsUnread { gpu, .. }
            | Self::NoVfs { gpu }
            | Self::UnnamedType { gpu, .. }
            | Self::MigDiffers { gpu, .. } => gpu.bdf,
        }
    }

    /// The GPU's index on the host (`None`: a declared GPU, named by address).
    pub fn index(&self) -> Option<u32> {
        self.gpu().map(|gpu| gpu.index)
    }
}

impl std::fmt::Display for VgpuExportWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unread { gpu, failure } => write!(f, "{gpu} is left out: {failure}"),
            Self::NoCatalogue { gpu } => write!(
                f,
                "{gpu} is left out: its vGPU type catalogue did not read, so its types have no \
                 names"
            ),
            Self::VfsUnread { gpu, why } => write!(f, "{gpu} is left out: {why}"),
            Self::NoVfs { gpu } => write!(
                f,
                "{gpu} is left out: it has no virtual function enabled (`vgpu-devices: {{}}` \
                 would enable them)"
            ),
            Self::UnnamedType {
                gpu,
                index,
                type_id,
            } => write!(
                f,
                "{gpu} is left out: virtual function {index} holds vGPU type {type_id}, which \
                 its catalogue does not name as a vgpu-device-manager type"
            ),
            Self::MigDiffers { gpu, differences } => write!(
                f,
                "{gpu}: its MIG layout is not the one its vGPUs need; applying this document \
                 changes it: {}",
                differences
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Self::NotDeclaredVgpu { device, left } => {
                if *left {
                    write!(
                        f,
                        "{device} is left out: it is declared with no vGPU (a leave)"
                    )
                } else {
                    write!(
                        f,
                        "{device} is left out: it is declared a MIG layout alone \
                         (`partition export --declared` prints it)"
                    )
                }
            }
            Self::DeclaredName { device, name } => write!(
                f,
                "{device} is left out: its declared type name {name:?} is no vGPU type name"
            ),
        }
    }
}

impl Serialize for VgpuExportWarning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.as_str())?;
        map.serialize_entry("device", &self.device().to_string())?;
        map.serialize_entry("index", &self.index())?;
        match self {
            Self::Unread { failure, .. } => {
                map.serialize_entry("reason", &failure.reason.to_string())?;
            }
            Self::VfsUnread { why, .. } => map.serialize_entry("why", why)?,
            Self::UnnamedType { index, type_id, .. } => {
                map.serialize_entry("vf", index)?;
                map.serialize_entry("type_id", type_id)?;
            }
            Self::MigDiffers { differences, .. } => {
                map.serialize_entry("differences", differences)?;
            }
            Self::NotDeclaredVgpu { left, .. } => map.serialize_entry("left", left)?,
            Self::DeclaredName { name, .. } => map.serialize_entry("name", name)?,
            Self::NoCatalogue { .. } | Self::NoVfs { .. } => {}
        }
        map.serialize_entry("message", &self.to_string())?;
        map.end()
    }
}

/// A GPU's vGPUs: each type's name with its count, sorted by name.
type GpuVgpus = Vec<(VgpuTypeName, u32)>;

/// The name vgpu-device-manager gives the catalogue's type `id`.
fn name_of(catalogue: &[VgpuType], id: u32) -> Option<VgpuTypeName> {
    let kind = catalogue.iter().find(|kind| kind.id == id)?;
    let full = kind.name.read()?;
    VgpuTypeName::short_name(full)?.parse().ok()
}

/// One GPU's vGPUs from its reply and its VFs' types, or why the format cannot say them.
fn vgpus_of(
    gpu: &HostGpu,
    reply: &Reply,
    found: &VfsRead,
    warnings: &mut Vec<VgpuExportWarning>,
) -> Option<GpuVgpus> {
    let types = match found {
        VfsRead::Read(types) if types.is_empty() => {
            warnings.push(VgpuExportWarning::NoVfs { gpu: gpu.clone() });
            return None;
        }
        VfsRead::Read(types) => types,
        unread => {
            let why = match unread {
                VfsRead::Unreadable(why) => why.clone(),
                _ => "its SR-IOV state did not read".to_owned(),
            };
            warnings.push(VgpuExportWarning::VfsUnread {
                gpu: gpu.clone(),
                why,
            });
            return None;
        }
    };
    let Some(catalogue) = catalogue(reply) else {
        warnings.push(VgpuExportWarning::NoCatalogue { gpu: gpu.clone() });
        return None;
    };
    let mut counts: GpuVgpus = Vec::new();
    for vf in types {
        let (index, Some(type_id)) = (vf.index, vf.type_id) else {
            continue;
        };
        let type_id = type_id.get();
        let Some(name) = name_of(&catalogue, type_id) else {
            warnings.push(VgpuExportWarning::UnnamedType {
                gpu: gpu.clone(),
                index,
                type_id,
            });
            return None;
        };
        match counts.iter_mut().find(|(known, _)| *known == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    counts.sort_by_key(|(name, _)| name.to_string());
    // What applying it would change of the MIG layout, by the rule an assert compares with.
    let spec = VgpuSpec::new(crate::Devices::All, counts.clone());
    if let Ok(layout) = spec.sized_by(&catalogue) {
        let found = differences(reply, &want_of(&layout).unnamed(Unnamed::Match));
        if !found.is_empty() {
            warnings.push(VgpuExportWarning::MigDiffers {
                gpu: gpu.clone(),
                differences: found,
            });
        }
    }
    Some(counts)
}

/// The document of `specs` under `name`: none where no GPU is exported.
fn document_of(name: &str, specs: Vec<VgpuSpec>) -> VgpuDocument {
    if specs.is_empty() {
        VgpuDocument::new(Vec::new())
    } else {
        VgpuDocument::new(vec![(name.to_owned(), specs)])
    }
}

/// The vGPUs of `gpus` (each with its card's read reply and its VFs' types, in index order)
/// under the config `name`, on a host of `host_gpus` GPUs.
pub fn export_vgpu(
    name: &str,
    gpus: &[(HostGpu, Reply, VfsRead)],
    host_gpus: usize,
) -> VgpuExported {
    let mut warnings = Vec::new();
    let found: Vec<(GpuVgpus, DeviceRef)> = gpus
        .iter()
        .filter_map(|(gpu, reply, vfs)| {
            vgpus_of(gpu, reply, vfs, &mut warnings).map(|v| (v, DeviceRef::Index(gpu.index)))
        })
        .collect();
    let specs = grouped(found, Some(host_gpus))
        .into_iter()
        .map(|(vgpus, devices)| VgpuSpec::new(devices, vgpus))
        .collect();
    VgpuExported {
        document: document_of(name, specs),
        warnings,
    }
}

/// The vGPUs of the host's NVIDIA GPUs bound to `nvidia`, their cards and VFs read under the
/// host lock (waiting up to `lock_wait`); a GPU the format cannot say is left out with a
/// warning.
pub fn export_vgpu_host(
    host: &Host,
    helper: &Helper,
    name: &str,
    lock_wait: Duration,
) -> Result<VgpuExported, ApplyError> {
    let gpus = host_gpus(host.sysfs_root())?;
    let total = gpus.len();
    let lock = host.lock(lock_wait).map_err(ApplyError::Lock)?;
    let replies = crate::assert::read_cards(&lock, helper, &gpus);
    let vfs: Vec<VfsRead> = gpus
        .iter()
        .map(|gpu| host_sync::sriov::read_vf_types(host.sysfs_root(), gpu.bdf))
        .collect();
    drop(lock);
    let mut read = Vec::with_capacity(gpus.len());
    let mut unread = Vec::new();
    for ((gpu, reply), vfs) in gpus.into_iter().zip(replies).zip(vfs) {
        match reply {
            Ok(reply) => read.push((gpu, reply, vfs)),
            Err(failure) => unread.push(VgpuExportWarning::Unread { gpu, failure }),
        }
    }
    let mut exported = export_vgpu(name, &read, total);
    exported.warnings.splice(0..0, unread);
    Ok(exported)
}

/// What the host is declared to hold of vGPUs, as a vgpu-device-manager document under its
/// label that `vgpu apply` takes back: each GPU declared with vGPUs by its PCI address (GPUs
/// declared alike share an entry), its types by the names the config gave them.
pub fn export_vgpu_declared(declared: &Declaration) -> VgpuExported {
    let mut warnings = Vec::new();
    let mut found: Vec<(GpuVgpus, DeviceRef)> = Vec::new();
    for (bdf, gpu) in &declared.gpus {
        // A config names types by count, not VFs: a declaration per VF is exported by count.
        let vgpus: Vec<(&str, u32)> = match gpu.nvidia().and_then(|gpu| gpu.vgpu.as_ref()) {
            Some(VgpuDeclared::On { types, .. }) => {
                types.iter().map(|vf| (vf.name.as_str(), 1)).collect()
            }
            Some(VgpuDeclared::Counted { types, .. }) => types
                .iter()
                .map(|vgpu| (vgpu.name.as_str(), vgpu.count))
                .collect(),
            Some(VgpuDeclared::Off) | None => Vec::new(),
        };
        if vgpus.is_empty() {
            let left = gpu.nvidia().is_some_and(|gpu| gpu.vgpu.is_some());
            warnings.push(VgpuExportWarning::NotDeclaredVgpu { device: *bdf, left });
            continue;
        }
        let mut counts: GpuVgpus = Vec::new();
        for (text, count) in vgpus {
            // A declared name was read from a config, so it parses; one that does not (a
            // state edited by hand) leaves the GPU out rather than guess.
            let Ok(name) = text.parse::<VgpuTypeName>() else {
                warnings.push(VgpuExportWarning::DeclaredName {
                    device: *bdf,
                    name: text.to_owned(),
                });
                counts.clear();
                break;
            };
            match counts.iter_mut().find(|(known, _)| *known == name) {
                Some((_, total)) => *total += count,
                None => counts.push((name, count)),
            }
        }
        if counts.is_empty() {
            continue;
        }
        counts.sort_by_key(|(name, _)| name.to_string());
        found.push((counts, DeviceRef::Address(*bdf)));
    }
    let specs = grouped(found, None)
        .into_iter()
        .map(|(vgpus, devices)| VgpuSpec::new(devices, vgpus))
        .collect();
    VgpuExported {
        document: document_of(&declared.label, specs),
        warnings,
    }
}
