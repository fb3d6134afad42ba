//! The walk of a DCM config: what Go's `encoding/json` would refuse (a member of the wrong
//! type) and what is not DCM's shape refuse the document; a profile's values are kept as given
//! for [`DcmProfile::assign`](super::DcmProfile::assign) to judge.

use super::{
    DCM_COMPUTE, DCM_MEMORY, DcmDocument, DcmEntry, DcmMode, DcmProfile, InvalidMode, UnknownMember,
};
use crate::document::error::LayoutError;
use crate::document::node::{Entry, Node};
use gpu_partition_types::Token;

pub(super) fn top(node: Node<'_, '_>) -> Result<DcmDocument, LayoutError> {
    let mut profiles = None;
    let mut client_services = Vec::new();
    for entry in node.mapping("the document")? {
        let value = entry.node();
        match entry.name.as_str() {
            "gpu-config-profiles" => profiles = Some(profiles_of(value)?),
            "gpuClientSystemdServices" => client_services = services(value)?,
            _ => {
                return Err(entry.unexpected(
                    "a config has `gpu-config-profiles` and `gpuClientSystemdServices`",
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
        if entry.name != member {
            return Err(entry.unexpected(&format!("`gpuClientSystemdServices` has `{member}`")));
        }
        for (index, item) in entry.node().sequence("`names`")?.iter().enumerate() {
            let at = entry.at.clone().index(index);
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

fn profiles_of(node: Node<'_, '_>) -> Result<Vec<DcmProfile>, LayoutError> {
    let entries = node.mapping("`gpu-config-profiles`")?;
    if entries.is_empty() {
        return Err(node.refuse("`gpu-config-profiles` needs at least one profile"));
    }
    let mut profiles: Vec<DcmProfile> = Vec::with_capacity(entries.len());
    for entry in &entries {
        // JSON cannot name a key twice here (the parser refuses a repeated key); YAML can, as
        // `1` and `"1"`.
        if profiles.iter().any(|known| known.name == entry.name) {
            return Err(entry.refuse(format!("the profile {:?} is named twice", entry.name)));
        }
        profiles.push(profile(entry.name.clone(), entry.line, entry.node())?);
    }
    Ok(profiles)
}

/// The node, unless it is `null`: Go's `encoding/json` leaves a member given `null` as it
/// leaves one not given.
fn given<'n, 'i>(node: Node<'n, 'i>) -> Option<Node<'n, 'i>> {
    (!node.is_null()).then_some(node)
}

fn unknown(entry: &Entry<'_, '_>) -> UnknownMember {
    UnknownMember {
        name: entry.name.clone(),
        at: entry.at.clone(),
        line: entry.line,
    }
}

/// The profile `name`, named on `line`.
fn profile(name: String, line: usize, node: Node<'_, '_>) -> Result<DcmProfile, LayoutError> {
    let mut profile = DcmProfile {
        name,
        skipped: Vec::new(),
        entries: Vec::new(),
        unknown: Vec::new(),
        line: Some(line),
        at: node.at.clone(),
    };
    let Some(node) = given(node) else {
        return Ok(profile);
    };
    for entry in node.mapping("a profile")? {
        let value = entry.node();
        match entry.name.as_str() {
            "skippedGPUs" => {
                if let Some(value) = given(value) {
                    profile.skipped = skipped_of(value, &mut profile.unknown)?;
                }
            }
            "profiles" => {
                if let Some(value) = given(value) {
                    for (index, item) in value.sequence("`profiles`")?.iter().enumerate() {
                        let at = entry.at.clone().index(index);
                        let read = entry_of(Node::new(item, &at), &mut profile.unknown)?;
                        profile.entries.push(read);
                    }
                }
            }
            _ => profile.unknown.push(unknown(&entry)),
        }
    }
    Ok(profile)
}

fn skipped_of(
    node: Node<'_, '_>,
    strays: &mut Vec<UnknownMember>,
) -> Result<Vec<u32>, LayoutError> {
    let mut ids = Vec::new();
    for entry in node.mapping("`skippedGPUs`")? {
        if entry.name != "ids" {
            strays.push(unknown(&entry));
            continue;
        }
        let Some(value) = given(entry.node()) else {
            continue;
        };
        for (index, item) in value.sequence("`ids`")?.iter().enumerate() {
            let at = entry.at.clone().index(index);
            // Go would read a `null` ID as GPU 0: refused as no number, not guessed.
            ids.push(Node::new(item, &at).count("a GPU ID")?);
        }
    }
    Ok(ids)
}

/// A mode as DCM's `checkInvalidPartitionType` sees it: one of `valid`, spelt exactly, or
/// the text it refuses; not a string refuses the document (Go's reader fails on it).
fn mode<T: Token>(node: Node<'_, '_>, what: &str, valid: &[T]) -> Result<DcmMode<T>, LayoutError> {
    let text = node.string(what)?;
    Ok(
        match T::from_token(text).filter(|mode| valid.contains(mode)) {
            Some(mode) => DcmMode::Valid(mode),
            None => DcmMode::Invalid(InvalidMode {
                given: Some(text.to_owned()),
            }),
        },
    )
}

/// A mode not given (DCM reads the empty string, which it refuses).
fn absent<T>() -> DcmMode<T> {
    DcmMode::Invalid(InvalidMode { given: None })
}

fn entry_of(node: Node<'_, '_>, strays: &mut Vec<UnknownMember>) -> Result<DcmEntry, LayoutError> {
    let mut entry = DcmEntry {
        compute: absent(),
        memory: absent(),
        gpus: None,
    };
    let Some(node) = given(node) else {
        return Ok(entry);
    };
    for member in node.mapping("an entry of `profiles`")? {
        let value = given(member.node());
        match (member.name.as_str(), value) {
            ("computePartition", Some(value)) => {
                entry.compute = mode(value, "compute partition", &DCM_COMPUTE)?;
            }
            ("memoryPartition", Some(value)) => {
                entry.memory = mode(value, "memory partition", &DCM_MEMORY)?;
            }
            ("numGPUsAssigned", Some(value)) => {
                entry.gpus = Some(value.count("`numGPUsAssigned`")?);
            }
            ("computePartition" | "memoryPartition" | "numGPUsAssigned", None) => {}
            _ => strays.push(unknown(&member)),
        }
    }
    Ok(entry)
}
