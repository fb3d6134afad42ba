//! Who owns a GPU ([`Ownership`]): declared per GPU and stored with the host's state
//! ([`HostState::ownership`](crate::HostState)), so that two agents can share a host — the
//! crates divide the `host` GPUs, and leave the others to whoever owns them.

use crate::state::HostState;
use crate::store::{StateStore, StoreError, save_checked};
use gpu_host_probe::HostLock;
use gpu_host_probe::Ownership;
use gpu_partition_types::Bdf;
use std::collections::BTreeMap;

impl HostState {
    /// Who owns `device` (`host` unless declared otherwise).
    pub fn ownership_of(&self, device: Bdf) -> Ownership {
        self.ownership.get(&device).copied().unwrap_or_default()
    }

    /// Each GPU that is not ours, with who owns it: the one reading of the stored map every
    /// writer and every surface takes (an entry `host`, which `set_ownership` never stores but
    /// an embedder's store might hold, is ours).
    pub fn not_ours(&self) -> BTreeMap<Bdf, Ownership> {
        self.ownership
            .iter()
            .filter(|(_, ownership)| !ownership.is_ours())
            .map(|(device, ownership)| (*device, *ownership))
            .collect()
    }
}

/// Declares, under `lock`, who owns `device`: stored (and read back) with the host's state; a
/// GPU declared `host` has no entry. Every writing path reads it under the lock before it
/// writes.
pub fn set_ownership(
    lock: &HostLock,
    store: &mut dyn StateStore,
    device: Bdf,
    ownership: Ownership,
) -> Result<(), StoreError> {
    // The lock is the proof the caller holds it: no writer reads the ownership half-changed.
    let _held = lock;
    let mut state = store.load()?.unwrap_or_default();
    if ownership.is_ours() {
        state.ownership.remove(&device);
    } else {
        state.ownership.insert(device, ownership);
    }
    save_checked(store, &state)
}
