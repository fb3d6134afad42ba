//! Running the sync on a thread of its own, as a toolstack does at start, after its database
//! sync: [`spawn_sync`] gives a [`SyncHandle`]; joined, it hands back the store with the
//! report. The handle cancels the sync ([`SyncHandle::cancel`]), and so does dropping it
//! unjoined; an async task that moves the handle into a blocking join holds
//! [`SyncHandle::cancel_on_drop`] instead, so aborting the task ends the sync.

use crate::store::StateStore;
use crate::sync::{SyncError, SyncOptions, SyncReport, sync};
use gpu_host_probe::helper::Helper;
use gpu_host_probe::{Cancel, CancelOnDrop, Host};
use std::thread::JoinHandle;

/// A sync running on its own thread, with the store it was given. Dropped before it is joined,
/// it cancels the sync (which ends as [`SyncOptions::cancel`] says, letting go of the lock).
#[derive(Debug)]
pub struct SyncHandle<S> {
    thread: Option<JoinHandle<SyncDone<S>>>,
    cancel: Cancel,
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
    pub fn join(mut self) -> Result<SyncDone<S>, SyncPanicked> {
        let thread = self.thread.take().ok_or(SyncPanicked)?;
        thread.join().map_err(|_| SyncPanicked)
    }

    /// Whether the sync has ended (its report waits for [`SyncHandle::join`]).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Cancels the sync: it ends as soon as it next looks (a helper run in progress ended as
    /// its deadline ends it); [`SyncHandle::join`] then gives how it ended.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// A guard that cancels the sync when dropped, for the async task that waits on
    /// [`SyncHandle::join`] from a blocking thread.
    #[must_use = "the guard cancels when it is dropped: bind it to a name that lives as long as the wait"]
    pub fn cancel_on_drop(&self) -> CancelOnDrop {
        self.cancel.on_drop()
    }
}

impl<S> Drop for SyncHandle<S> {
    /// An unjoined sync is cancelled: nothing is left running that nobody waits for.
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.cancel.cancel();
        }
    }
}

/// Starts [`sync`] on a thread of its own with `store`, handed back by [`SyncHandle::join`]. A
/// second sync asked for while one runs waits its turn on the host lock (up to
/// `options.lock_wait`), so two never interleave. The handle's cancel is `options.cancel`
/// when given, else a new one.
pub fn spawn_sync<S: StateStore + Send + 'static>(
    host: Host,
    helper: Helper,
    mut store: S,
    options: SyncOptions,
) -> std::io::Result<SyncHandle<S>> {
    let cancel = options.cancel.clone().unwrap_or_default();
    let options = options.cancel(cancel.clone());
    let thread = std::thread::Builder::new()
        .name("host-sync".to_owned())
        .spawn(move || {
            let result = sync(&host, &helper, &mut store, &options);
            SyncDone { store, result }
        })?;
    Ok(SyncHandle {
        thread: Some(thread),
        cancel,
    })
}
