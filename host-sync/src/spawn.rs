//! Running the sync on a thread of its own, as a toolstack does at start, after its database
//! sync: [`spawn_sync`] gives a [`SyncHandle`] to be told the report when it is done.

use crate::store::StateStore;
use crate::sync::{HostPaths, SyncError, SyncOptions, SyncReport, sync};
use gpu_host_probe::helper::Helper;
use std::thread::JoinHandle;

/// A sync running on its own thread.
#[derive(Debug)]
pub struct SyncHandle {
    thread: JoinHandle<Result<SyncReport, SyncError>>,
}

/// A sync thread that ended without a report: it panicked.
#[derive(Debug, thiserror::Error)]
#[error("the sync thread panicked")]
#[non_exhaustive]
pub struct SyncPanicked;

impl SyncHandle {
    /// Waits for the sync and answers its report (or why it failed).
    pub fn join(self) -> Result<Result<SyncReport, SyncError>, SyncPanicked> {
        self.thread.join().map_err(|_| SyncPanicked)
    }

    /// Whether the sync has ended (its report waits for [`SyncHandle::join`]).
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }
}

/// Starts [`sync`] on a thread of its own. A second sync asked for while one runs waits its
/// turn on the host lock (up to `options.lock_wait`), so two never interleave.
pub fn spawn_sync(
    host: HostPaths,
    helper: Helper,
    mut store: Box<dyn StateStore + Send>,
    options: SyncOptions,
) -> std::io::Result<SyncHandle> {
    let thread = std::thread::Builder::new()
        .name("host-sync".to_owned())
        .spawn(move || sync(&host, &helper, store.as_mut(), &options))?;
    Ok(SyncHandle { thread })
}
