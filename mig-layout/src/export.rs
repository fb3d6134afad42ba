//! The host's layout as a mig-parted v1 document, which `apply` takes back as zero steps: each
//! GPU's mode and its GPU instances counted by the profile names its card gives (the ID where a
//! name did not read); GPUs alike share one entry (`devices: all` when every GPU is alike).
//! [`export_host`] reads the cards (under the host lock, several at once); [`export_declared`]
//! writes what the host is declared to be instead, each GPU by its PCI address.

use crate::apply::ApplyError;
use crate::document::{DeviceRef, Devices, Document, Spec};
use crate::select::{HostGpu, host_gpus};
use gpu_host_probe::Host;
use gpu_host_probe::helper::{Helper, ReadFailure};
use gpu_partition_types::Reply;
use layout_model::{Card, CardUnreadable, Declaration, ProfileKey};
use serde::Serialize;
use std::time::Duration;

/// What `export` wrote, and what it could not say in the format.
///
/// It serializes to the document of `mxctl --json partition export`: `document` (the v1
/// document, as JSON) and `warnings` (each `{"kind", "device", "index", …, "message"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Exported {
    /// The document.
    #[serde(serialize_with = "document_json")]
    pub document: Document,
    /// What the format cannot carry.
    pub warnings: Vec<ExportWarning>,
}

fn document_json<S: serde::Serializer>(
    document: &Document,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    crate::document::to_json(document).serialize(serializer)
}

/// What a v1 document cannot carry of a GPU: its facts, the message derived from them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExportWarning {
    /// The GPU's card did not read (the helper's failure): the GPU is left out.
    Unread {
        /// The GPU.
        gpu: HostGpu,
        /// Why.
        failure: ReadFailure,
    },
    /// The card's reply does not give a layout (a member did not read): the GPU is left out.
    NoLayout {
        /// The GPU.
        gpu: HostGpu,
        /// What did not read.
        unreadable: CardUnreadable,
    },
    /// A MIG mode change is pending until the next reset: exported as the mode is now.
    PendingMode {
        /// The GPU.
        gpu: HostGpu,
        /// Whether MIG is on now.
        current: bool,
        /// Whether it is on after the next reset.
        pending: bool,
    },
    /// A GPU instance lacks the compute instance that fills it: applying the document
    /// creates it.
    Unfilled {
        /// The GPU.
        gpu: HostGpu,
        /// The GPU instance.
        gpu_instance_id: u32,
        /// Its profile, as the card names it.
        profile: String,
    },
    /// A declared AMD GPU (`export_declared`): its partitions are no MIG layout, and
    /// mig-parted's format has nothing for them; it is left out.
    AmdDeclared {
        /// The GPU.
        device: gpu_partition_types::Bdf,
        /// Its declared partitions.
        want: layout_model::amd::AmdWant,
    },
}

impl ExportWarning {
    /// Its kind, as a token (`kind` in `--json`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Unread { .. } => "unread",
            Self::NoLayout { .. } => "no_layout",
            Self::PendingMode { .. } => "pending_mode",
            Self::Unfilled { .. } => "unfilled",
            Self::AmdDeclared { .. } => "amd_declared",
        }
    }

    /// The NVIDIA GPU it is about (with its index); `None` for an AMD GPU.
    pub fn gpu(&self) -> Option<&HostGpu> {
        match self {
            Self::Unread { gpu, .. }
            | Self::NoLayout { gpu, .. }
            | Self::PendingMode { gpu, .. }
            | Self::Unfilled { gpu, .. } => Some(gpu),
            Self::AmdDeclared { .. } => None,
        }
    }

    /// The GPU it is about, by address.
    pub fn device(&self) -> gpu_partition_types::Bdf {
        match self {
            Self::AmdDeclared { device, .. } => *device,
            Self::Unread { gpu, .. }
            | Self::NoLayout { gpu, .. }
            | Self::PendingMode { gpu, .. }
            | Self::Unfilled { gpu, .. } => gpu.bdf,
        }
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

impl std::fmt::Display for ExportWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unread { gpu, failure } => write!(f, "{gpu} is left out: {failure}"),
            Self::NoLayout { gpu, unreadable } => write!(f, "{gpu} is left out: {unreadable}"),
            Self::PendingMode {
                gpu,
                current,
                pending,
            } => write!(
                f,
                "{gpu}: MIG is {} now and {} after the next reset; exported as it is now",
                on_off(*current),
                on_off(*pending)
            ),
            Self::Unfilled {
                gpu,
                gpu_instance_id,
                profile,
            } => write!(
                f,
                "{gpu}: GPU instance {gpu_instance_id} ({profile}) lacks the compute instance \
                 that fills it; applying this document creates it"
            ),
            Self::AmdDeclared { device, want } => write!(
                f,
                "{device} is declared with AMD partitions ({want}), which a mig-parted document \
                 cannot say: it is left out"
            ),
        }
    }
}

impl Serialize for ExportWarning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.as_str())?;
        map.serialize_entry("device", &self.device().to_string())?;
        map.serialize_entry("index", &self.gpu().map(|gpu| gpu.index))?;
        match self {
            Self::Unread { failure, .. } => {
                map.serialize_entry("reason", &failure.reason.to_string())?;
            }
            Self::NoLayout { unreadable, .. } => {
                map.serialize_entry("unread", &unreadable.what.to_string())?;
            }
            Self::PendingMode {
                current, pending, ..
            } => {
                map.serialize_entry("current", current)?;
                map.serialize_entry("pending", pending)?;
            }
            Self::Unfilled {
                gpu_instance_id,
                profile,
                ..
            } => {
                map.serialize_entry("gpu_instance_id", gpu_instance_id)?;
                map.serialize_entry("profile", profile)?;
            }
            Self::AmdDeclared { want, .. } => {
                map.serialize_entry("compute", &want.compute)?;
                map.serialize_entry("memory", &want.memory)?;
            }
        }
        map.serialize_entry("message", &self.to_string())?;
        map.end()
    }
}

/// A GPU's layout: MIG on or off, and its instances counted by profile.
type GpuLayout = (bool, Vec<(ProfileKey, u32)>);

fn spec_of(gpu: &HostGpu, reply: &Reply, warnings: &mut Vec<ExportWarning>) -> Option<GpuLayout> {
    let card = match Card::of(reply) {
        Ok(card) => card,
        Err(unreadable) => {
            warnings.push(ExportWarning::NoLayout {
                gpu: gpu.clone(),
                unreadable,
            });
            return None;
        }
    };
    if let Some(pending) = card.pending {
        warnings.push(ExportWarning::PendingMode {
            gpu: gpu.clone(),
            current: card.current,
            pending,
        });
    }
    if !card.current {
        return Some((false, Vec::new()));
    }
    let mut counts: Vec<(ProfileKey, u32)> = Vec::new();
    for instance in &card.instances {
        if !card.complete(instance) {
            warnings.push(ExportWarning::Unfilled {
                gpu: gpu.clone(),
                gpu_instance_id: instance.id,
                profile: card.label(instance.profile_id).to_string(),
            });
        }
        let key = match card
            .profile(instance.profile_id)
            .and_then(|p| p.name.clone())
        {
            Some(name) => ProfileKey::Name(name),
            None => ProfileKey::Id(instance.profile_id),
        };
        match counts.iter_mut().find(|(known, _)| *known == key) {
            Some((_, count)) => *count += 1,
            None => counts.push((key, 1)),
        }
    }
    counts.sort();
    Some((true, counts))
}

/// GPUs alike as one entry each, in the order first found: by index, `devices: all` where one
/// entry holds every one of the host's `host_gpus`; by address (`host_gpus` is `None`), always
/// listed. The one rule of both exports' grouping.
pub(crate) fn grouped<L: PartialEq>(
    gpus: impl IntoIterator<Item = (L, DeviceRef)>,
    host_gpus: Option<usize>,
) -> Vec<(L, Devices)> {
    let mut groups: Vec<(L, Vec<DeviceRef>)> = Vec::new();
    for (layout, device) in gpus {
        match groups.iter_mut().find(|(known, _)| *known == layout) {
            Some((_, devices)) => devices.push(device),
            None => groups.push((layout, vec![device])),
        }
    }
    let every = match (groups.as_slice(), host_gpus) {
        ([(_, devices)], Some(total)) => devices.len() == total,
        _ => false,
    };
    groups
        .into_iter()
        .map(|(layout, devices)| {
            let devices = if every {
                Devices::All
            } else {
                Devices::Listed(devices)
            };
            (layout, devices)
        })
        .collect()
}

/// The layout of `gpus` (each with its card's read reply) under `label`, on a host of
/// `host_gpus` GPUs (those not given did not read, so `devices: all` is not written).
pub fn export(label: &str, gpus: &[(HostGpu, Reply)], host_gpus: usize) -> Exported {
    let mut warnings = Vec::new();
    let layouts: Vec<(GpuLayout, DeviceRef)> = gpus
        .iter()
        .filter_map(|(gpu, reply)| {
            spec_of(gpu, reply, &mut warnings).map(|layout| (layout, DeviceRef::Index(gpu.index)))
        })
        .collect();
    let specs: Vec<Spec> = grouped(layouts, Some(host_gpus))
        .into_iter()
        .map(|((enabled, instances), devices)| Spec::new(devices, enabled, instances))
        .collect();
    let configs = if specs.is_empty() {
        Vec::new()
    } else {
        vec![(label.to_owned(), specs)]
    };
    Exported {
        document: Document::new(configs),
        warnings,
    }
}

/// The layout of the host's NVIDIA GPUs bound to `nvidia`, read under the host lock (waiting up
/// to `lock_wait`), several at once; a card that does not read is left out with a warning.
pub fn export_host(
    host: &Host,
    helper: &Helper,
    label: &str,
    lock_wait: Duration,
) -> Result<Exported, ApplyError> {
    let gpus = host_gpus(host.sysfs_root())?;
    let total = gpus.len();
    let lock = host.lock(lock_wait).map_err(ApplyError::Lock)?;
    let replies = crate::assert::read_cards(&lock, helper, &gpus);
    drop(lock);
    let mut read = Vec::with_capacity(gpus.len());
    let mut unread = Vec::new();
    for (gpu, reply) in gpus.into_iter().zip(replies) {
        match reply {
            Ok(reply) => read.push((gpu, reply)),
            Err(failure) => unread.push(ExportWarning::Unread { gpu, failure }),
        }
    }
    let mut exported = export(label, &read, total);
    exported.warnings.splice(0..0, unread);
    Ok(exported)
}

/// What the host is declared to be, as a v1 document under its label that `apply` takes back:
/// each GPU by its PCI address (GPUs declared alike share an entry), MIG on or off, its GPU
/// instances by profile as the layout named them. (The placements a declaration keeps are not
/// in the format; `apply` chooses them again, and `partition restore` keeps them.) A declared
/// AMD GPU is left out: the format has no partitions of AMD's.
pub fn export_declared(declared: &Declaration) -> Exported {
    // An AMD GPU's partitions are no MIG layout: mig-parted's format has nothing for them.
    let warnings: Vec<ExportWarning> = declared
        .gpus
        .iter()
        .filter_map(|(device, gpu)| {
            gpu.amd().map(|amd| ExportWarning::AmdDeclared {
                device: *device,
                want: amd.want,
            })
        })
        .collect();
    let mig = declared
        .gpus
        .iter()
        .filter_map(|(bdf, gpu)| gpu.nvidia().map(|nvidia| (bdf, nvidia)));
    let layouts = mig.map(|(bdf, gpu)| {
        let mut counts: Vec<(ProfileKey, u32)> = gpu
            .profiles
            .iter()
            .map(|count| (count.profile.clone(), count.count))
            .collect();
        counts.sort();
        ((gpu.mig_enabled, counts), DeviceRef::Address(*bdf))
    });
    let specs: Vec<Spec> = grouped(layouts, None)
        .into_iter()
        .map(|((enabled, instances), devices)| Spec::new(devices, enabled, instances))
        .collect();
    let configs = if specs.is_empty() {
        Vec::new()
    } else {
        vec![(declared.label.clone(), specs)]
    };
    Exported {
        document: Document::new(configs),
        warnings,
    }
}
