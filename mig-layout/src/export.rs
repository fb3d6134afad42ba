//! The host's layout as a mig-parted v1 document, which `apply` takes back as zero steps: each
//! GPU's mode and its GPU instances counted by the profile names its card gives (the ID where a
//! name did not read); GPUs alike share one entry (`devices: all` when every GPU is alike).
//! [`export_host`] reads the cards (under the host lock, several at once); [`export_declared`]
//! writes what the host is declared to be instead, each GPU by its PCI address.

use crate::apply::ApplyError;
use crate::document::{DeviceRef, Devices, Document, Spec};
use crate::select::{HostGpu, host_gpus};
use gpu_host_probe::Host;
use gpu_host_probe::helper::Helper;
use gpu_partition_types::Reply;
use layout_model::{Card, Declaration, ProfileKey};
use std::time::Duration;

/// What `export` wrote, and what it could not say in the format.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Exported {
    /// The document.
    pub document: Document,
    /// What the format cannot carry (a GPU instance without its filling compute instance, a
    /// pending mode change, a card that did not read), for people.
    pub warnings: Vec<String>,
}

/// A GPU's layout: MIG on or off, and its instances counted by profile.
type GpuLayout = (bool, Vec<(ProfileKey, u32)>);

fn spec_of(gpu: &HostGpu, reply: &Reply, warnings: &mut Vec<String>) -> Option<GpuLayout> {
    let card = match Card::of(reply) {
        Ok(card) => card,
        Err(impossible) => {
            warnings.push(format!("{gpu} is left out: {impossible}"));
            return None;
        }
    };
    if let Some(pending) = card.pending {
        warnings.push(format!(
            "{gpu}: MIG is {} now and {} after the next reset; exported as it is now",
            if card.current { "on" } else { "off" },
            if pending { "on" } else { "off" },
        ));
    }
    if !card.current {
        return Some((false, Vec::new()));
    }
    let mut counts: Vec<(ProfileKey, u32)> = Vec::new();
    for instance in &card.instances {
        if !card.complete(instance) {
            warnings.push(format!(
                "{gpu}: GPU instance {} ({}) lacks the compute instance that fills it; \
                 applying this document creates it",
                instance.id,
                card.label(instance.profile_id)
            ));
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

/// The layout of `gpus` (each with its card's read reply) under `label`.
pub fn export(label: &str, gpus: &[(HostGpu, Reply)]) -> Exported {
    let mut warnings = Vec::new();
    let mut groups: Vec<(GpuLayout, Vec<u32>)> = Vec::new();
    for (gpu, reply) in gpus {
        let Some(layout) = spec_of(gpu, reply, &mut warnings) else {
            continue;
        };
        match groups.iter_mut().find(|(known, _)| *known == layout) {
            Some((_, indices)) => indices.push(gpu.index),
            None => groups.push((layout, vec![gpu.index])),
        }
    }
    let every = groups.len() == 1
        && groups
            .first()
            .is_some_and(|(_, indices)| indices.len() == gpus.len());
    let specs = groups
        .into_iter()
        .map(|((enabled, instances), indices)| {
            let devices = if every {
                Devices::All
            } else {
                Devices::Listed(indices.into_iter().map(DeviceRef::Index).collect())
            };
            Spec::new(devices, enabled, instances)
        })
        .collect::<Vec<_>>();
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
    let lock = host.lock(lock_wait).map_err(ApplyError::Lock)?;
    let replies = crate::assert::read_cards(&lock, helper, &gpus);
    drop(lock);
    let mut read = Vec::with_capacity(gpus.len());
    let mut unread = Vec::new();
    for (gpu, reply) in gpus.into_iter().zip(replies) {
        match reply {
            Ok(reply) => read.push((gpu, reply)),
            Err(failure) => unread.push(format!("{gpu} is left out: {failure}")),
        }
    }
    let mut exported = export(label, &read);
    exported.warnings.splice(0..0, unread);
    Ok(exported)
}

/// What the host is declared to be, as a v1 document under its label that `apply` takes back:
/// each GPU by its PCI address (GPUs declared alike share an entry), MIG on or off, its GPU
/// instances by profile as the layout named them. (The placements a declaration keeps are not
/// in the format; `apply` chooses them again, and `partition restore` keeps them.)
pub fn export_declared(declared: &Declaration) -> Exported {
    let mut groups: Vec<(GpuLayout, Vec<DeviceRef>)> = Vec::new();
    for (bdf, gpu) in &declared.gpus {
        let mut counts: Vec<(ProfileKey, u32)> = gpu
            .profiles
            .iter()
            .map(|count| (count.profile.clone(), count.count))
            .collect();
        counts.sort();
        let layout = (gpu.mig_enabled, counts);
        match groups.iter_mut().find(|(known, _)| *known == layout) {
            Some((_, devices)) => devices.push(DeviceRef::Address(*bdf)),
            None => groups.push((layout, vec![DeviceRef::Address(*bdf)])),
        }
    }
    let specs: Vec<Spec> = groups
        .into_iter()
        .map(|((enabled, instances), devices)| {
            Spec::new(Devices::Listed(devices), enabled, instances)
        })
        .collect();
    let configs = if specs.is_empty() {
        Vec::new()
    } else {
        vec![(declared.label.clone(), specs)]
    };
    Exported {
        document: Document::new(configs),
        warnings: Vec::new(),
    }
}
