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

    /// A guard that triggers it when dropped: held by an async task whose blocking call holds
    /// a clone, aborting the task (or dropping its future) ends the call, which
    /// `spawn_blocking` alone never does. [`CancelOnDrop::disarm`] lets it go untriggered.
    #[must_use = "the guard cancels when it is dropped: bind it to a name that lives as long as the call"]
    pub fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(Some(self.clone()))
    }
}

/// Triggers its [`Cancel`] when dropped, unless disarmed ([`Cancel::on_drop`]).
#[derive(Debug)]
pub struct CancelOnDrop(Option<Cancel>);

impl CancelOnDrop {
    /// Lets the guard go without cancelling (the call ended on its own).
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.take() {
            cancel.cancel();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_dropped_cancels_and_a_disarmed_one_does_not() {
        let dropped = Cancel::new();
        drop(dropped.on_drop());
        assert!(dropped.is_cancelled());
        let disarmed = Cancel::new();
        disarmed.on_drop().disarm();
        assert!(!disarmed.is_cancelled());
    }
}
