//! NVIDIA vgpu-device-manager's config files as they are (`version: v1`, `vgpu-configs`),
//! read with that project's rules, and the MIG layout a spec of MIG-backed vGPU types needs,
//! sized from the card's catalogue. The rules and their sources:
//! `host-sync/tests/samples/vgpu/CATALOGUE.md`, part A.
//!
//! ```yaml
//! version: v1
//! vgpu-configs:
//!   A100-1-5C:
//!     - devices: all
//!       vgpu-devices:
//!         A100-1-5C: 7
//! ```
//!
//! The rules (`api/spec/v1/spec.go`, `pkg/types/vgpu_config.go`): `version` is `v1` and
//! required; `vgpu-configs` (at least one config, each at least one spec) is the only other
//! member; a spec has `devices` (`all` or a list) and `vgpu-devices` (required: a mapping of
//! type name to a count above 0; `{}` is "no vGPU"), and optionally `device-filter`; any other
//! member is refused; one spec mixes no time-sliced type with a MIG-backed one. Two differences,
//! both this project's choice: as in mig-parted's documents here, `devices` may also list PCI
//! addresses (vgpu-device-manager takes indices only), and a document without `vgpu-configs`
//! (vgpu-device-manager reads it as "nothing") is refused, since there is nothing to apply.

use super::error::LayoutError;
use super::node::Node;
use super::read::{device_filter, devices_of, labelled, read_root, versioned};
use super::vgpu_name::VgpuTypeName;
use super::{DeviceId, Devices, Spec};
use gpu_partition_types::{JsonPointer, Nullable, VgpuType};
use layout_model::ProfileKey;

/// A vgpu-device-manager config document: named configs, in the document's order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VgpuDocument {
    /// Each config's name with its specs.
    pub configs: Vec<(String, Vec<VgpuSpec>)>,
}

/// One spec of a vGPU config: the GPUs it is for and the vGPUs each should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VgpuSpec {
    /// The GPUs.
    pub devices: Devices,
    /// Only GPUs with one of these PCI device IDs (none: any).
    pub device_filter: Vec<DeviceId>,
    /// The vGPU types with their counts, in the document's order (none: no vGPU).
    pub vgpu_devices: Vec<(VgpuTypeName, u32)>,
    /// Heterogeneous vGPU mode asked for (`nvidia-smi vgpu -shm 1`): time-sliced vGPUs of
    /// several types on one GPU. Not in vgpu-device-manager's format: an apply's option
    /// (`mxctl vgpu apply --heterogeneous`), kept in the declaration.
    pub heterogeneous: bool,
    /// The line the spec starts on.
    pub line: Option<usize>,
    /// Where it is in the document (`/vgpu-configs/NAME/INDEX`).
    pub at: JsonPointer,
}

impl VgpuSpec {
    /// A spec of `vgpu_devices` for `devices` not read from a document (an embedder's own, a
    /// restore's of a declaration).
    pub fn new(devices: Devices, vgpu_devices: Vec<(VgpuTypeName, u32)>) -> Self {
        Self {
            devices,
            device_filter: Vec::new(),
            vgpu_devices,
            heterogeneous: false,
            line: None,
            at: JsonPointer::root(),
        }
    }

    /// The same spec, asking for heterogeneous vGPU mode (or not).
    pub fn with_heterogeneous(mut self, on: bool) -> Self {
        self.heterogeneous = on;
        self
    }
}

impl VgpuDocument {
    /// Reads a document, YAML or JSON; refused whole, naming the line and member at fault,
    /// when any part breaks a rule.
    pub fn from_text(text: &str) -> Result<VgpuDocument, LayoutError> {
        read_root(
            text,
            "the document is empty: it needs `version: v1` and `vgpu-configs`",
            top,
        )
    }

    /// A document of these configs.
    pub fn new(configs: Vec<(String, Vec<VgpuSpec>)>) -> Self {
        Self { configs }
    }

    /// The specs of the config `name`.
    pub fn config(&self, name: &str) -> Option<&[VgpuSpec]> {
        self.configs
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, specs)| specs.as_slice())
    }
}

fn top(node: Node<'_, '_>) -> Result<VgpuDocument, LayoutError> {
    let configs = versioned(node, "vgpu-configs", vgpu_configs)?
        .ok_or_else(|| node.refuse("missing `vgpu-configs`: a document with no config"))?;
    Ok(VgpuDocument { configs })
}

fn vgpu_configs(node: Node<'_, '_>) -> Result<Vec<(String, Vec<VgpuSpec>)>, LayoutError> {
    labelled(node, "vgpu-configs", ("config", "config"), spec)
}

fn spec(node: Node<'_, '_>) -> Result<VgpuSpec, LayoutError> {
    let entries = node.mapping("an entry of a config")?;
    let mut devices = None;
    let mut vgpu_devices = None;
    let mut filter = Vec::new();
    for entry in &entries {
        let value = entry.node();
        match entry.name.as_str() {
            "devices" => devices = Some(devices_of(value)?),
            "vgpu-devices" => vgpu_devices = Some(vgpu_devices_of(value)?),
            "device-filter" => filter = device_filter(value)?,
            _ => {
                return Err(
                    entry.unexpected("an entry has `devices`, `vgpu-devices` and `device-filter`")
                );
            }
        }
    }
    let devices = devices.ok_or_else(|| node.refuse("missing required member `devices`"))?;
    let vgpu_devices = vgpu_devices
        .ok_or_else(|| node.refuse("missing required member `vgpu-devices` (`{}` for no vGPU)"))?;
    let mig = vgpu_devices
        .iter()
        .filter(|(name, _)| name.is_mig_backed())
        .count();
    if mig > 0 && mig < vgpu_devices.len() {
        return Err(node.refuse(
            "`vgpu-devices` mixes time-sliced and MIG-backed types, which one GPU cannot hold",
        ));
    }
    Ok(VgpuSpec {
        devices,
        device_filter: filter,
        vgpu_devices,
        heterogeneous: false,
        line: Some(node.line()),
        at: node.at.clone(),
    })
}

fn vgpu_devices_of(node: Node<'_, '_>) -> Result<Vec<(VgpuTypeName, u32)>, LayoutError> {
    if node.is_null() {
        return Err(node.refuse("`vgpu-devices` must be a mapping (`{}` for no vGPU)"));
    }
    let entries = node.mapping("`vgpu-devices`")?;
    let mut listed: Vec<(VgpuTypeName, u32)> = Vec::with_capacity(entries.len());
    for entry in &entries {
        let text = &entry.name;
        let refuse = |message: String| entry.refuse(message);
        let name: VgpuTypeName = text
            .parse()
            .map_err(|error: super::vgpu_name::VgpuNameError| refuse(error.to_string()))?;
        if listed.iter().any(|(known, _)| *known == name) {
            return Err(refuse(format!("{name} is named twice")));
        }
        let count = entry.node().count(&format!("the count of {text}"))?;
        if count == 0 {
            return Err(refuse(format!(
                "the count of {text} is 0: a count is above 0 (leave the type out instead)"
            )));
        }
        listed.push((name, count));
    }
    Ok(listed)
}

/// Why a vGPU spec's MIG layout cannot be sized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeriveError {
    /// The card's catalogue does not say how many vGPUs of a type one GPU instance holds.
    #[error(
        "{at}: the card's catalogue does not give how many {name} vGPUs one GPU instance holds"
    )]
    NotInCatalogue {
        /// The type.
        name: VgpuTypeName,
        /// The spec.
        at: JsonPointer,
    },
    /// The card lists no vGPU type of this name.
    #[error("{at}: the card supports no {name} vGPU (its catalogue lists no type of that name)")]
    NotSupported {
        /// The type.
        name: VgpuTypeName,
        /// The spec.
        at: JsonPointer,
    },
    /// The spec asks for more vGPUs of a type than the card holds.
    #[error("{at}: {count} {name} vGPUs asked for, and the card holds at most {max}")]
    MoreThanTheCardHolds {
        /// The type.
        name: VgpuTypeName,
        /// How many the spec asks for.
        count: u32,
        /// How many the card holds (the catalogue's max instances).
        max: u32,
        /// The spec.
        at: JsonPointer,
    },
}

impl VgpuSpec {
    /// The MIG layout the spec needs on a card with this catalogue (the helper's
    /// `vgpu_types`), checked before any write: every type must be one the card lists, no more
    /// of it than the card holds (where the catalogue gives the maximum), and each MIG-backed
    /// type sized by [`per_gpu_instance_in`].
    pub fn sized_by(&self, catalogue: &[VgpuType]) -> Result<Spec, DeriveError> {
        for (name, count) in &self.vgpu_devices {
            let listed = find_in(catalogue, name).ok_or_else(|| DeriveError::NotSupported {
                name: name.clone(),
                at: self.at.clone(),
            })?;
            if let Some(&max) = listed.max_instances.read() {
                if *count > max {
                    return Err(DeriveError::MoreThanTheCardHolds {
                        name: name.clone(),
                        count: *count,
                        max,
                        at: self.at.clone(),
                    });
                }
            }
        }
        self.mig_layout(per_gpu_instance_in(catalogue))
    }

    /// The MIG layout the spec's vGPUs need, as a mig-parted spec for the same GPUs: MIG on
    /// with, per MIG-backed type, `ceil(count / per GPU instance)` GPU instances of the
    /// type's profile (vgpu-device-manager makes one per vGPU, which is wrong where a GPU
    /// instance holds several: `per_gpu_instance` gives it from the card's catalogue, NVML's
    /// "max instances per GPU instance"); two types of one profile add up. A spec of
    /// time-sliced types, or of none, is MIG off.
    pub fn mig_layout(
        &self,
        per_gpu_instance: impl Fn(&VgpuTypeName) -> Option<u32>,
    ) -> Result<Spec, DeriveError> {
        let mut mig_devices: Vec<(ProfileKey, u32)> = Vec::new();
        for (name, count) in &self.vgpu_devices {
            let Some(profile) = name.mig_profile() else {
                continue;
            };
            let per = per_gpu_instance(name)
                .filter(|per| *per > 0)
                .ok_or_else(|| DeriveError::NotInCatalogue {
                    name: name.clone(),
                    at: self.at.clone(),
                })?;
            let instances = count.div_ceil(per);
            let key = ProfileKey::Name(profile);
            match mig_devices.iter_mut().find(|(known, _)| *known == key) {
                Some((_, total)) => *total = total.saturating_add(instances),
                None => mig_devices.push((key, instances)),
            }
        }
        let mig_enabled = !mig_devices.is_empty();
        let mut spec = Spec::new(self.devices.clone(), mig_enabled, mig_devices);
        spec.device_filter = self.device_filter.clone();
        spec.line = self.line;
        spec.at = self.at.clone();
        Ok(spec)
    }
}

/// How many vGPUs of a type one GPU instance holds, as the card's catalogue (the helper's
/// `vgpu_types`) says: the catalogue's type whose short name is the config's name, exactly as
/// vgpu-device-manager compares them ([`VgpuTypeName::short_name`]). `None` where no type of
/// that name is listed, or the driver did not give the count (never guessed); the function
/// [`VgpuSpec::mig_layout`] takes.
pub fn per_gpu_instance_in(catalogue: &[VgpuType]) -> impl Fn(&VgpuTypeName) -> Option<u32> + '_ {
    move |wanted| {
        find_in(catalogue, wanted).and_then(|kind| {
            match kind.max_instances_per_gpu_instance.read() {
                Some(Nullable::Value(count)) => Some(*count),
                _ => None,
            }
        })
    }
}

/// The catalogue's type whose short name is `wanted`, as vgpu-device-manager compares them.
pub(crate) fn find_in<'a>(
    catalogue: &'a [VgpuType],
    wanted: &VgpuTypeName,
) -> Option<&'a VgpuType> {
    let wanted = wanted.to_string();
    catalogue.iter().find(|kind| {
        kind.name
            .read()
            .and_then(|name| VgpuTypeName::short_name(name))
            == Some(wanted.as_str())
    })
}
