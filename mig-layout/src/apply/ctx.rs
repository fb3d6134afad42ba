//! What every phase of an apply works with, and why it stops: the one place the phases and the
//! resets share, so neither imports the other.

use super::Progress;
use crate::report::{ApplyOutcome, ApplyReason};
use gpu_host_probe::helper::Helper;
use gpu_host_probe::{Cancel, HostLock};
use gpu_partition_types::{Bdf, FormatVersion, Reply};

/// What every phase works with: the lock held, the helper and its format, and where progress
/// goes.
pub(super) struct Ctx<'a, 'p> {
    pub lock: &'a HostLock,
    pub helper: &'a Helper,
    pub format: FormatVersion,
    pub progress: &'p mut dyn FnMut(Progress),
    pub cancel: Option<&'a Cancel>,
}

impl Ctx<'_, '_> {
    pub fn say(&mut self, progress: Progress) {
        (self.progress)(progress);
    }

    /// Whether the caller cancelled the apply.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }

    /// Stops the apply (writes began: `failed (cancelled)`) when the caller cancelled it,
    /// before `next`.
    pub fn go_on(&self, next: &str) -> Result<(), Stop> {
        if self.cancelled() {
            return Err(Stop::failed(
                ApplyReason::Cancelled,
                format!("the apply was cancelled before {next}"),
            ));
        }
        Ok(())
    }

    /// Reads one card again.
    pub fn reread(&self, device: Bdf, when: &str) -> Result<Reply, Stop> {
        self.helper
            .read_reply(self.lock, device, self.format)
            .map_err(|failure| {
                Stop::failed(
                    ApplyReason::GpuUnreadable,
                    format!("{device}: reading it {when}: {failure}"),
                )
            })
    }
}

/// Why the apply stopped once writes began.
pub(super) struct Stop {
    pub outcome: ApplyOutcome,
    pub detail: String,
}

impl Stop {
    pub fn failed(reason: ApplyReason, detail: impl Into<String>) -> Self {
        Self {
            outcome: ApplyOutcome::Failed(reason),
            detail: detail.into(),
        }
    }
}
