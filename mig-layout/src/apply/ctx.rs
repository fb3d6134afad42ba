//! What every phase of an apply works with, and why it stops: the one place the phases and the
//! resets share, so neither imports the other.

use super::Progress;
use crate::report::{ApplyOutcome, ApplyReason};
use gpu_host_probe::HostLock;
use gpu_host_probe::helper::Helper;
use gpu_partition_types::{Bdf, FormatVersion, Reply};

/// What every phase works with: the lock held, the helper and its format, and where progress
/// goes.
pub(super) struct Ctx<'a, 'p> {
    pub lock: &'a HostLock,
    pub helper: &'a Helper,
    pub format: FormatVersion,
    pub progress: &'p mut dyn FnMut(Progress),
}

impl Ctx<'_, '_> {
    pub fn say(&mut self, progress: Progress) {
        (self.progress)(progress);
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
