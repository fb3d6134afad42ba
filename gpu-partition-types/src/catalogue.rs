//! Matching two profile catalogues of one card by signature.

use crate::{Profile, Signature};
use std::collections::HashMap;

/// A profile whose number changed between two catalogues of one card.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Renumbered {
    /// Its number in the old catalogue.
    pub old_id: u32,
    /// Its number in the new catalogue.
    pub new_id: u32,
    /// The signature both share (capabilities in canonical order).
    pub signature: Signature,
}

/// The profiles that a driver renumbered between `old` and `new`, sorted by old id.
///
/// Profiles are matched by signature (capability order ignored). Only a signature found exactly
/// once in each catalogue matches: a signature two profiles share cannot say which is which.
/// Profiles whose signature was lost take no part.
pub fn renumbered(old: &[Profile], new: &[Profile]) -> Vec<Renumbered> {
    let old = unique_by_signature(old);
    let new = unique_by_signature(new);
    let mut renumbered: Vec<Renumbered> = old
        .iter()
        .filter_map(|(signature, old_id)| {
            let new_id = new.get(signature).copied().flatten()?;
            let old_id = (*old_id)?;
            (old_id != new_id).then(|| Renumbered {
                old_id,
                new_id,
                signature: signature.clone(),
            })
        })
        .collect();
    renumbered.sort_by_key(|entry| entry.old_id);
    renumbered
}

/// Each signature with its profile's id, or `None` when several profiles share it.
fn unique_by_signature(catalogue: &[Profile]) -> HashMap<Signature, Option<u32>> {
    let mut ids: HashMap<Signature, Option<u32>> = HashMap::new();
    for profile in catalogue {
        if let Some(signature) = profile.signature.read() {
            ids.entry(signature.normalized())
                .and_modify(|id| *id = None)
                .or_insert(Some(profile.id));
        }
    }
    ids
}
