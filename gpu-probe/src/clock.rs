//! The clock an operation runs on: the real one, or a virtual one that tests (and the
//! simulators) advance instantly, so a 90 s reset window takes no real time. One clock per run:
//! a reset's window, an apply's waits and the records it stamps read the same clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Time as an operation sees it. `Send + Sync`, so a backend that keeps one (the simulators)
/// moves to a worker thread like the real backends.
pub trait Clock: Send + Sync {
    /// Time since the clock started (monotonic).
    fn now(&self) -> Duration;
    /// Waits `duration`.
    fn sleep(&self, duration: Duration);
    /// Wall-clock milliseconds since the Unix epoch (for the journal, which outlives a run).
    fn unix_ms(&self) -> u64;
    /// Wall-clock seconds since the Unix epoch (the host state's records).
    fn unix_s(&self) -> u64 {
        self.unix_ms() / 1000
    }
}

/// A clock behind `dyn` (the simulator keeps one) shows the time it reads.
impl std::fmt::Debug for dyn Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Clock({:?})", self.now())
    }
}

/// The real clock.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    started: Instant,
}

impl SystemClock {
    /// A clock starting now.
    pub fn new() -> Self {
        Self {
            started: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.started.elapsed()
    }
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
    fn unix_ms(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or_default()
    }
}

/// A virtual clock: `sleep` moves it forward at once. Clones share the same time (across
/// threads too), to the nanosecond.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    now_ns: Arc<AtomicU64>,
    epoch_ms: u64,
}

impl VirtualClock {
    /// A clock at 0, whose wall clock starts at `epoch_ms`.
    pub fn new(epoch_ms: u64) -> Self {
        Self {
            now_ns: Arc::new(AtomicU64::new(0)),
            epoch_ms,
        }
    }

    /// Moves the clock forward (it stops at about 584 years).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .now_ns
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.now_ns.load(Ordering::SeqCst))
    }
    fn sleep(&self, duration: Duration) {
        self.advance(duration);
    }
    fn unix_ms(&self) -> u64 {
        self.epoch_ms
            .saturating_add(u64::try_from(self.now().as_millis()).unwrap_or(u64::MAX))
    }
}
