//! Running the sync on a thread of its own, as a toolstack does at start, after its database
//! sync: [`spawn_sync`] gives a [`SyncHandle`]; joined, it hands back the store with the
//! report.

use crate::store::StateStore;
use crate::sync::{SyncError, SyncOptions, SyncReport, sync};
use gpu_host_probe::Host;
use gpu_host_probe::helper::Helper;
use std::thread::JoinHandle;

/// A sync running on its own thread, with the store it was given.
#[derive(Debug)]
pub struct SyncHandle<S> {
    thread: JoinHandle<SyncDone<S>>,
}

/// A finished sync: the store, handed back, and how the sync ended.
#[derive(Debug)]
#[non_exhaustive]
pub struct SyncDone<S> {
    /// The store the sync was given.
    pub store: S,
    /// The report, or why the sync failed.
    pub result: Result<SyncReport, SyncError>,
}

/// A sync thread that ended without a report: it panicked (the store is lost with it).
#[derive(Debug, thiserror::Error)]
#[error("the sync thread panicked")]
#[non_exhaustive]
pub struct SyncPanicked;

impl<S> SyncHandle<S> {
    /// Waits for the sync: the store back, and the report (or why it failed).
    pub fn join(self) -> Result<SyncDone<S>, SyncPanicked> {
        self.thread.join().map_err(|_| SyncPanicked)
    }

    /// Whether the sync has ended (its report waits for [`SyncHandle::join`]).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
}

/// Starts [`sync`] on a thread of its own with `store`, handed back by [`SyncHandle::join`]. A
/// second sync asked for while one runs waits its turn on the host lock (up to
/// `options.lock_wait`), so two never interleave.
pub fn spawn_sync<S: StateStore + Send + 'static>(
    host: Host,
    helper: Helper,
    mut store: S,
    options: SyncOptions,
) -> std::io::Result<SyncHandle<S>> {
    let thread = std::thread::Builder::new()
        .name("host-sync".to_owned())
        .spawn(move || {
            let result = sync(&host, &helper, &mut store, &options);
            SyncDone { store, result }
        })?;
    Ok(SyncHandle { thread })
}
