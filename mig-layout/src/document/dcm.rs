//! ROCm Device Config Manager's partition profiles as they are (`config.json`:
//! `gpu-config-profiles`, `gpuClientSystemdServices`), read with that project's rules, and a
//! profile assigned to a host's AMD GPUs as DCM assigns it. The rules and their sources are in
//! the project's `docs/amd.md`.
//!
//! ```json
//! {
//!   "gpu-config-profiles": {
//!     "cpx-nps4": {
//!       "skippedGPUs": { "ids": [] },
//!       "profiles": [
//!         { "computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8 }
//!       ]
//!     }
//!   },
//!   "gpuClientSystemdServices": { "names": ["amd-metrics-exporter", "gpuagent"] }
//! }
//! ```
//!
//! The rules (ROCm/device-config-manager, `docs/configuration/configmap.md` and
//! `pkg/config_manager/configmanager.go`, `validateProfile`): a profile lists one or more
//! `{computePartition, memoryPartition, numGPUsAssigned}` and optionally `skippedGPUs.ids`;
//! the compute partition is SPX, DPX, QPX or CPX and the memory partition NPS1, NPS2, NPS4 or
//! NPS8; every entry of one profile names the same memory partition; the GPUs, by ID (their
//! order), are those not skipped, assigned to the entries in order, and the counts and the
//! skipped IDs add up to the host's GPUs. One difference, this project's choice as for the
//! other formats: a member neither project defines is refused rather than ignored, so a
//! misspelt member cannot silently change what is applied.

use super::error::LayoutError;
use super::node::Node;
use super::read::read_root;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition, list};
use gpu_partition_types::{JsonPointer, Token};
use layout_model::amd::AmdWant;

/// A Device Config Manager config: its named profiles, in the document's order, and the
/// services that hold the GPUs (stopped before a change, started after).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DcmDocument {
    /// Each profile's name with the profile.
    pub profiles: Vec<(String, DcmProfile)>,
    /// `gpuClientSystemdServices.names`: the systemd services that use the GPUs.
    pub client_services: Vec<String>,
}

/// One profile: the partitions for the host's GPUs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DcmProfile {
    /// The GPU IDs left as they are (`skippedGPUs.ids`).
    pub skipped: Vec<u32>,
    /// The entries, each for the next `gpus` GPUs not skipped.
    pub entries: Vec<DcmEntry>,
    /// The line the profile starts on.
    pub line: Option<usize>,
    /// Where it is (`/gpu-config-profiles/NAME`).
    pub at: JsonPointer,
}

/// One entry of a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DcmEntry {
    /// `computePartition`.
    pub compute: ComputePartition,
    /// `memoryPartition`.
    pub memory: MemoryPartition,
    /// `numGPUsAssigned`.
    pub gpus: u32,
}

/// The compute partitions Device Config Manager takes (`checkInvalidPartitionType`).
const DCM_COMPUTE: [ComputePartition; 4] = [
    ComputePartition::Spx,
    ComputePartition::Dpx,
    ComputePartition::Qpx,
    ComputePartition::Cpx,
];

/// The memory partitions it takes.
const DCM_MEMORY: [MemoryPartition; 4] = [
    MemoryPartition::Nps1,
    MemoryPartition::Nps2,
    MemoryPartition::Nps4,
    MemoryPartition::Nps8,
];

/// Why a profile does not fit the host's GPUs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AssignError {
    /// The counts and the skipped IDs do not add up to the host's GPUs.
    #[error(
        "{at}: the profile assigns {assigned} GPUs and skips {skipped}, and the host has {host}"
    )]
    Count {
        /// The profile.
        at: JsonPointer,
        /// The sum of `numGPUsAssigned`.
        assigned: u64,
        /// How many IDs are skipped.
        skipped: usize,
        /// The host's AMD GPUs.
        host: usize,
    },
    /// A skipped ID the host has no GPU of.
    #[error("{at}: it skips GPU {id}, and the host's GPUs are 0 to {last}")]
    SkippedOutOfRange {
        /// The profile.
        at: JsonPointer,
        /// The ID.
        id: u32,
        /// The host's last GPU ID.
        last: usize,
    },
}

impl DcmDocument {
    /// Reads a config, JSON (or the same in YAML); refused whole, naming the line and member at
    /// fault, when any part breaks a rule.
    pub fn from_text(text: &str) -> Result<DcmDocument, LayoutError> {
        read_root(
            text,
            "the document is empty: it needs `gpu-config-profiles`",
            top,
        )
    }

    /// The profile `name`.
    pub fn profile(&self, name: &str) -> Option<&DcmProfile> {
        self.profiles
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, profile)| profile)
    }
}

impl DcmProfile {
    /// The partitions the profile gives each of a host's `host` GPUs, by ID (PCI address
    /// order): `None` for a GPU it skips.
    pub fn assign(&self, host: usize) -> Result<Vec<Option<AmdWant>>, AssignError> {
        let assigned: u64 = self.entries.iter().map(|entry| u64::from(entry.gpus)).sum();
        let total = usize::try_from(assigned)
            .ok()
            .and_then(|assigned| assigned.checked_add(self.skipped.len()));
        if total != Some(host) {
            return Err(AssignError::Count {
                at: self.at.clone(),
                assigned,
                skipped: self.skipped.len(),
                host,
            });
        }
        if let Some(&id) = self
            .skipped
            .iter()
            .find(|id| usize::try_from(**id).map_or(true, |id| id >= host))
        {
            return Err(AssignError::SkippedOutOfRange {
                at: self.at.clone(),
                id,
                last: host.saturating_sub(1),
            });
        }
        let mut modes = self
            .entries
            .iter()
            .flat_map(|entry| (0..entry.gpus).map(|_| AmdWant::new(entry.compute, entry.memory)));
        Ok((0..host)
            .map(|id| {
                let skipped = u32::try_from(id).is_ok_and(|id| self.skipped.contains(&id));
                if skipped { None } else { modes.next() }
            })
            .collect())
    }
}

fn top(node: Node<'_, '_>) -> Result<DcmDocument, LayoutError> {
    let mut profiles = None;
    let mut client_services = Vec::new();
    for entry in node.mapping("the document")? {
        let name = entry.key.text();
        let at = node.at.clone().member(&name);
        let value = Node::new(entry.value, &at);
        match name.as_str() {
            "gpu-config-profiles" => profiles = Some(profiles_of(value)?),
            "gpuClientSystemdServices" => client_services = services(value)?,
            other => {
                return Err(LayoutError::new(
                    Some(entry.line),
                    at.clone(),
                    format!(
                        "unexpected member {other:?}: a config has `gpu-config-profiles` and \
                         `gpuClientSystemdServices`"
                    ),
                ));
            }
        }
    }
    let profiles = profiles.ok_or_else(|| node.refuse("missing `gpu-config-profiles`"))?;
    Ok(DcmDocument {
        profiles,
        client_services,
    })
}

/// `gpuClientSystemdServices`: `{"names": [...]}`, each a service's name.
fn services(node: Node<'_, '_>) -> Result<Vec<String>, LayoutError> {
    let member = "names";
    let mut found = Vec::new();
    for entry in node.mapping("`gpuClientSystemdServices`")? {
        let name = entry.key.text();
        let at = node.at.clone().member(&name);
        if name != member {
            return Err(LayoutError::new(
                Some(entry.line),
                at,
                format!("unexpected member {name:?}: `gpuClientSystemdServices` has `{member}`"),
            ));
        }
        let value = Node::new(entry.value, &at);
        for (index, item) in value.sequence("`names`")?.iter().enumerate() {
            let at = at.clone().index(index);
            let service = Node::new(item, &at).string("a service's name")?;
            if crate::amd_services::service_unit(service).is_none() {
                return Err(Node::new(item, &at)
                    .refuse(format!("{service:?} is no systemd service's name")));
            }
            found.push(service.to_owned());
        }
    }
    Ok(found)
}

fn profiles_of(node: Node<'_, '_>) -> Result<Vec<(String, DcmProfile)>, LayoutError> {
    let entries = node.mapping("`gpu-config-profiles`")?;
    if entries.is_empty() {
        return Err(node.refuse("`gpu-config-profiles` needs at least one profile"));
    }
    let mut profiles: Vec<(String, DcmProfile)> = Vec::with_capacity(entries.len());
    for entry in &entries {
        let name = entry.key.text();
        let at = node.at.clone().member(&name);
        if profiles.iter().any(|(known, _)| *known == name) {
            return Err(LayoutError::new(
                Some(entry.line),
                at,
                format!("the profile {name:?} is named twice"),
            ));
        }
        let profile = profile(Node::new(entry.value, &at))?;
        profiles.push((name, profile));
    }
    Ok(profiles)
}

fn profile(node: Node<'_, '_>) -> Result<DcmProfile, LayoutError> {
    let mut skipped = Vec::new();
    let mut entries = None;
    for entry in node.mapping("a profile")? {
        let name = entry.key.text();
        let at = node.at.clone().member(&name);
        let value = Node::new(entry.value, &at);
        match name.as_str() {
            "skippedGPUs" => skipped = skipped_of(value)?,
            "profiles" => {
                let items = value.sequence("`profiles`")?;
                if items.is_empty() {
                    return Err(value.refuse("`profiles` needs at least one entry"));
                }
                entries = Some(
                    items
                        .iter()
                        .enumerate()
                        .map(|(index, item)| {
                            let at = at.clone().index(index);
                            entry_of(Node::new(item, &at))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                );
            }
            other => {
                return Err(LayoutError::new(
                    Some(entry.line),
                    at.clone(),
                    format!(
                        "unexpected member {other:?}: a profile has `profiles` and `skippedGPUs`"
                    ),
                ));
            }
        }
    }
    let entries: Vec<DcmEntry> =
        entries.ok_or_else(|| node.refuse("missing required member `profiles`"))?;
    if let Some(first) = entries.first() {
        if let Some(other) = entries.iter().find(|entry| entry.memory != first.memory) {
            return Err(node.refuse(format!(
                "the profile's entries name {} and {}: every GPU of a profile has one memory \
                 partition",
                first.memory, other.memory
            )));
        }
    }
    Ok(DcmProfile {
        skipped,
        entries,
        line: Some(node.line()),
        at: node.at.clone(),
    })
}

fn skipped_of(node: Node<'_, '_>) -> Result<Vec<u32>, LayoutError> {
    let mut ids: Vec<u32> = Vec::new();
    for entry in node.mapping("`skippedGPUs`")? {
        let name = entry.key.text();
        let at = node.at.clone().member(&name);
        if name != "ids" {
            return Err(LayoutError::new(
                Some(entry.line),
                at,
                format!("unexpected member {name:?}: `skippedGPUs` has `ids`"),
            ));
        }
        let value = Node::new(entry.value, &at);
        for (index, item) in value.sequence("`ids`")?.iter().enumerate() {
            let at = at.clone().index(index);
            let node = Node::new(item, &at);
            let id = node.count("a GPU ID")?;
            if ids.contains(&id) {
                return Err(node.refuse(format!("GPU {id} is skipped twice")));
            }
            ids.push(id);
        }
    }
    Ok(ids)
}

fn mode<T: Token>(node: Node<'_, '_>, what: &str, taken: &[T]) -> Result<T, LayoutError> {
    let text = node.string(what)?;
    T::from_token(text)
        .filter(|mode| taken.contains(mode))
        .ok_or_else(|| {
            node.refuse(format!(
                "{text:?} is not a {what} Device Config Manager takes ({})",
                list(taken)
            ))
        })
}

fn entry_of(node: Node<'_, '_>) -> Result<DcmEntry, LayoutError> {
    let (mut compute, mut memory, mut gpus) = (None, None, None);
    for entry in node.mapping("an entry of `profiles`")? {
        let name = entry.key.text();
        let at = node.at.clone().member(&name);
        let value = Node::new(entry.value, &at);
        match name.as_str() {
            "computePartition" => compute = Some(mode(value, "compute partition", &DCM_COMPUTE)?),
            "memoryPartition" => memory = Some(mode(value, "memory partition", &DCM_MEMORY)?),
            "numGPUsAssigned" => gpus = Some(value.count("`numGPUsAssigned`")?),
            other => {
                return Err(LayoutError::new(
                    Some(entry.line),
                    at.clone(),
                    format!(
                        "unexpected member {other:?}: an entry has `computePartition`, \
                         `memoryPartition` and `numGPUsAssigned`"
                    ),
                ));
            }
        }
    }
    let missing = |member: &str| node.refuse(format!("missing required member `{member}`"));
    Ok(DcmEntry {
        compute: compute.ok_or_else(|| missing("computePartition"))?,
        memory: memory.ok_or_else(|| missing("memoryPartition"))?,
        gpus: gpus.ok_or_else(|| missing("numGPUsAssigned"))?,
    })
}
