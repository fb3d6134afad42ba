//! [`Cancel`]: what an embedder hands a long call (a sync, a probe, a layout apply) and
//! triggers from another thread — a tokio task that aborts, a shutdown — to end it early.
//!
//! A call checks it between cards and between steps, the lock's wait checks it as it waits,
//! and the runner checks it while a program runs: a helper run in progress is ended as a
//! deadline ends it (SIGTERM to its group, SIGKILL after the grace), so a cancelled call
//! returns within the runner's check interval (10 ms) and that grace. A warm reset inside its
//! window is never cut short: a GPU is never left half reset.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A cancellation: clones share it; once cancelled, it stays so.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A cancellation not triggered yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Triggers it: every call holding a clone ends as soon as it next looks.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether it was triggered.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Two cancellations are equal when they are the same one (clones of one another).
impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

/// Whether `cancel` (if any) was triggered.
pub(crate) fn cancelled(cancel: Option<&Cancel>) -> bool {
    cancel.is_some_and(Cancel::is_cancelled)
}
