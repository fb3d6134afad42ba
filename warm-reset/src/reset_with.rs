//! [`ResetWith`]: what a caller that runs resets on a host gives them — the method and its
//! backend, the window, the clock. One shape for every such caller: a plan's step here,
//! mig-layout's apply.

use crate::backend::Backend;
use crate::execute::{ExecuteError, ResetReport, ResetRun, execute};
use crate::machine::{DEFAULT_WINDOW, MachineConfig};
use crate::method::Method;
use crate::reset_target::ResetTarget;
use gpu_host_probe::HostLock;
use gpu_host_probe::Ownership;
use gpu_host_probe::{Clock, SystemClock};
use gpu_partition_types::Bdf;
use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

/// The real clock, for a caller that gives none.
static REAL: LazyLock<SystemClock> = LazyLock::new(SystemClock::new);

/// How resets are run: by `method` through its `backend`, within `window`, on `clock`.
#[non_exhaustive]
pub struct ResetWith<'a> {
    /// The method, whose backend `backend` is.
    pub method: Method,
    /// The backend.
    pub backend: &'a mut dyn Backend,
    /// The window from a reset to the end of its verification.
    pub window: Duration,
    /// The clock resets (and a caller's waits for an earlier reset's window) run on; `None`:
    /// the real one.
    pub clock: Option<&'a dyn Clock>,
    /// The GPUs that are not ours, with who owns them: a reset whose group takes one is
    /// blocked ([`MachineConfig::not_ours`]).
    pub not_ours: BTreeMap<Bdf, Ownership>,
}

impl<'a> ResetWith<'a> {
    /// Resets by `method` through `backend`, with the default window ([`DEFAULT_WINDOW`]) on
    /// the real clock.
    pub fn new(method: Method, backend: &'a mut dyn Backend) -> Self {
        Self {
            method,
            backend,
            window: DEFAULT_WINDOW,
            clock: None,
            not_ours: BTreeMap::new(),
        }
    }

    /// The same, sparing the GPUs `not_ours`: a reset whose group takes one is blocked.
    pub fn sparing(mut self, not_ours: BTreeMap<Bdf, Ownership>) -> Self {
        self.not_ours = not_ours;
        self
    }

    /// The same with another window.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The same on `clock` (a virtual clock in tests and simulations).
    pub fn clock(mut self, clock: &'a dyn Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The same method, backend, window, clock and GPUs spared, borrowed for a shorter run (a
    /// second run under the same hold of the host lock).
    pub fn reborrow(&mut self) -> ResetWith<'_> {
        ResetWith {
            method: self.method,
            backend: &mut *self.backend,
            window: self.window,
            clock: self.clock,
            not_ours: self.not_ours.clone(),
        }
    }

    /// The clock the resets run on: the one given, else the real one.
    pub fn clock_or_real(&self) -> &'a dyn Clock {
        self.clock.unwrap_or(&*REAL)
    }

    /// Runs the machine on `target` under `lock`, the caller's hold of the host lock: a dry
    /// run when `dry_run`.
    pub fn execute(
        &mut self,
        target: &ResetTarget,
        dry_run: bool,
        lock: &HostLock,
    ) -> Result<ResetReport, ExecuteError> {
        let config = MachineConfig::new(target.clone())
            .method(self.method)
            .window(self.window)
            .dry_run(dry_run)
            .sparing(self.not_ours.clone());
        let clock = self.clock_or_real();
        execute(ResetRun::under(&config, lock, &mut *self.backend).clock(clock))
    }
}

impl std::fmt::Debug for ResetWith<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResetWith")
            .field("method", &self.method)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}
