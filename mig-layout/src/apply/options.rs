//! [`ApplyOptions`]: what the caller decides for one apply, leave or restore — one type for
//! all three.

use super::hook_run::Hooks;
use gpu_host_probe::Cancel;
use gpu_partition_types::Bdf;
use host_sync::Pool;
use layout_model::Unnamed;
use std::time::Duration;

/// What the caller decides for one apply, leave or restore.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApplyOptions {
    /// Only these GPUs of the layout (a restore: of the declaration); none: every GPU it names.
    /// A GPU asked for that it does not name is refused before anything is read
    /// ([`crate::ApplyError::NotNamed`]).
    pub devices: Vec<Bdf>,
    /// Plan and show; write nothing (and run no hook).
    pub dry_run: bool,
    /// The pool switch: the sync that ends the apply classifies with it, and a layout that
    /// turns MIG on is refused with it off.
    pub pool: Pool,
    /// How long to wait for the host lock (default zero: held, the apply is blocked).
    pub lock_wait: Duration,
    /// The commands run around the writes.
    pub hooks: Hooks,
    /// Ends the apply early when triggered from another thread (none by default): checked
    /// while it waits for the lock, between GPUs and between batches of steps; a helper run in
    /// progress is ended as its deadline would end it; a warm reset in its window is never cut
    /// short. The apply then ends `blocked (cancelled)` when nothing was written yet, `failed
    /// (cancelled)` once writes began, recorded so, and the cards not read since are
    /// `unknown (cancelled)` until the next sync. A cancel that ended the apply before its
    /// first write leaves the declaration before it as it was.
    pub cancel: Option<Cancel>,
    /// What becomes of the cards' instances the layout does not name; `None` (the default):
    /// an apply makes the card match, a restore does what each declared GPU says (what its
    /// apply chose). An apply declares its choice, so later syncs and restores treat those
    /// instances alike.
    pub unnamed: Option<Unnamed>,
    /// A restore as the boot's: once per boot by itself — one already run in this boot makes
    /// this one do nothing ([`crate::Restore::AlreadyRanThisBoot`]); this one is recorded before
    /// it writes. An apply ignores it.
    pub once_per_boot: bool,
    /// Owners whose partitions this apply may destroy (a partition created for an owner is
    /// otherwise never destroyed by an apply, a leave or a restore: `blocked
    /// (partition_owned)`, naming it and its owner); their ownership ends with them.
    pub release: Vec<layout_model::Owner>,
}

impl ApplyOptions {
    /// An apply (or restore) with this pool switch, of every GPU the layout names, not waiting
    /// for the lock, with no hook.
    pub fn new(pool: Pool) -> Self {
        Self {
            devices: Vec::new(),
            dry_run: false,
            pool,
            lock_wait: Duration::ZERO,
            hooks: Hooks::none(),
            cancel: None,
            unnamed: None,
            once_per_boot: false,
            release: Vec::new(),
        }
    }

    /// Ends the apply early when `cancel` is triggered.
    pub fn cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Only these GPUs of the layout.
    pub fn devices(mut self, devices: Vec<Bdf>) -> Self {
        self.devices = devices;
        self
    }

    /// Plan and show only.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Waits up to `wait` for the host lock.
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Runs `hooks` around the writes.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Treats the cards' instances the layout does not name as `unnamed` says.
    pub fn unnamed(mut self, unnamed: Unnamed) -> Self {
        self.unnamed = Some(unnamed);
        self
    }

    /// Lets this apply destroy `owner`'s partitions.
    pub fn release(mut self, owner: layout_model::Owner) -> Self {
        self.release.push(owner);
        self
    }

    /// Runs a restore as the boot's: once per boot.
    pub fn once_per_boot(mut self, once: bool) -> Self {
        self.once_per_boot = once;
        self
    }
}
