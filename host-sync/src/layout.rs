//! [`LayoutRecord`]: what the host keeps of the last MIG layout applied to it, so that its
//! status tells the truth while a layout is applied and after one failed.
//!
//! The layout executor (crate `mig-layout`) writes it under the host lock: `applying` when it
//! starts (with the host `entering` or `leaving`, reason `layout_applying`), then how it
//! ended. The classifier reads it: while a failure is unhealed — an apply that failed, needed a
//! cold reboot, or was interrupted (a record still `applying` when the lock is taken again) —
//! the host stays `entering` (pool on) or `leaving` (pool off) with reason `layout_failed` and
//! the failure's message, until an apply succeeds.

use crate::status::{HostStatus, StoredReason};
use serde::{Deserialize, Serialize};

gpu_partition_types::token_enum! {
    /// Which way a layout goes.
    pub enum Direction: "layout direction" {
        /// Into partitioning: some GPU of the layout has MIG on.
        Entering = "entering",
        /// Out of it: every GPU of the layout has MIG off.
        Leaving = "leaving",
    }
}

impl Direction {
    /// The host status while a layout of this direction is applied, and while its failure is
    /// unhealed.
    pub fn status(self) -> HostStatus {
        match self {
            Self::Entering => HostStatus::Entering,
            Self::Leaving => HostStatus::Leaving,
        }
    }
}

gpu_partition_types::token_enum! {
    /// How the last apply ended (or that it has not: `applying`).
    pub enum LayoutOutcome: "layout outcome" {
        /// Started and not finished: under the host lock, an interrupted apply.
        Applying = "applying",
        /// The layout holds on every GPU it names, read back.
        Done = "done",
        /// Refused before anything was written; the host is as it was.
        Blocked = "blocked",
        /// A step, the reset or the read-back failed: the host is between layouts.
        Failed = "failed",
        /// The warm reset that completes a mode change did not work: cold-reboot the host.
        ColdRebootRequired = "cold_reboot_required",
    }
}

/// A failure that no apply has healed yet: what the host's status names while it lasts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LayoutFailure {
    /// The layout's label.
    pub label: String,
    /// Which way it went.
    pub direction: Direction,
    /// Why, as a token (`step_refused`, `read_back_differs`, `interrupted`, a reset's reason…).
    pub reason: StoredReason,
    /// What happened, for people: the GPU, the step, NVML's words.
    pub message: String,
    /// When the failed apply started (Unix seconds).
    pub started_at: u64,
}

/// The last layout apply, as the state keeps it ([`HostState::layout`](crate::HostState)).
/// Every field is part of the store's contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LayoutRecord {
    /// The layout's label (`--select`).
    pub label: String,
    /// Which way it went.
    pub direction: Direction,
    /// How it ended.
    pub outcome: LayoutOutcome,
    /// Why (`""` when done or still applying).
    #[serde(default)]
    pub reason: StoredReason,
    /// What happened, for people; `None` when there is nothing to explain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it started (Unix seconds).
    pub started_at: u64,
    /// When it ended (Unix seconds); `None` while applying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<u64>,
    /// The failure of an earlier apply that this one did not heal (a blocked apply changes
    /// nothing, so it heals nothing); `None` once an apply is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealed: Option<LayoutFailure>,
}

impl LayoutRecord {
    /// An apply of `label` going `direction`, started at `started_at`, still applying; it keeps
    /// the unhealed failure of `previous`, if any (an interrupted one included).
    pub fn applying(
        label: impl Into<String>,
        direction: Direction,
        started_at: u64,
        previous: Option<&LayoutRecord>,
    ) -> Self {
        Self {
            label: label.into(),
            direction,
            outcome: LayoutOutcome::Applying,
            reason: StoredReason::none(),
            message: None,
            started_at,
            finished_at: None,
            unhealed: previous.and_then(LayoutRecord::failure),
        }
    }

    /// The record of the apply once it ended with `outcome` at `finished_at`: done heals every
    /// failure, blocked keeps the one before, failed and cold reboot become the failure.
    pub fn finish(
        mut self,
        outcome: LayoutOutcome,
        reason: StoredReason,
        message: Option<String>,
        finished_at: u64,
    ) -> Self {
        self.outcome = outcome;
        self.reason = reason;
        self.message = message;
        self.finished_at = Some(finished_at);
        match outcome {
            LayoutOutcome::Done => self.unhealed = None,
            LayoutOutcome::Failed | LayoutOutcome::ColdRebootRequired => {
                self.unhealed = Some(self.own_failure());
            }
            LayoutOutcome::Blocked | LayoutOutcome::Applying => {}
        }
        self
    }

    /// What a record still `applying` means to whoever holds the host lock now: the apply was
    /// interrupted (a crash, a kill), and that is its failure; a record that ended is kept.
    pub fn settled(self, now: u64) -> Self {
        if self.outcome != LayoutOutcome::Applying {
            return self;
        }
        let failure = self.own_failure();
        self.finish(
            LayoutOutcome::Failed,
            failure.reason,
            Some(failure.message),
            now,
        )
    }

    /// The failure this record leaves unhealed: its own when it failed, needed a cold reboot or
    /// is still `applying` (read under the host lock, that is an interrupted apply), else the
    /// one it kept from before.
    pub fn failure(&self) -> Option<LayoutFailure> {
        match self.outcome {
            LayoutOutcome::Failed | LayoutOutcome::ColdRebootRequired | LayoutOutcome::Applying => {
                Some(self.own_failure())
            }
            LayoutOutcome::Done => None,
            LayoutOutcome::Blocked => self.unhealed.clone(),
        }
    }

    fn own_failure(&self) -> LayoutFailure {
        let (reason, message) = match self.outcome {
            LayoutOutcome::Applying => (
                StoredReason::new("interrupted").unwrap_or_default(),
                format!(
                    "the apply of layout {:?} started at {} (Unix time) was interrupted; \
                     apply it again",
                    self.label, self.started_at
                ),
            ),
            _ => (
                self.reason.clone(),
                self.message
                    .clone()
                    .unwrap_or_else(|| format!("the apply of layout {:?} failed", self.label)),
            ),
        };
        LayoutFailure {
            label: self.label.clone(),
            direction: self.direction,
            reason,
            message,
            started_at: self.started_at,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn reason(token: &str) -> StoredReason {
        StoredReason::new(token).unwrap()
    }

    #[test]
    fn a_failed_apply_is_the_failure_until_one_is_done() {
        let failed = LayoutRecord::applying("all-balanced", Direction::Entering, 10, None).finish(
            LayoutOutcome::Failed,
            reason("step_refused"),
            Some("GPU 0000:3b:00.0: NVML said no".to_owned()),
            11,
        );
        let failure = failed.failure().unwrap();
        assert_eq!(failure.reason, reason("step_refused"));
        assert_eq!(failure.message, "GPU 0000:3b:00.0: NVML said no");
        let done = LayoutRecord::applying("all-balanced", Direction::Entering, 12, Some(&failed))
            .finish(LayoutOutcome::Done, StoredReason::none(), None, 13);
        assert_eq!(done.failure(), None);
    }

    #[test]
    fn a_blocked_apply_heals_nothing() {
        let failed = LayoutRecord::applying("a", Direction::Entering, 10, None).finish(
            LayoutOutcome::Failed,
            reason("read_back_differs"),
            Some("differs".to_owned()),
            11,
        );
        let blocked = LayoutRecord::applying("b", Direction::Entering, 12, Some(&failed)).finish(
            LayoutOutcome::Blocked,
            reason("gpu_busy"),
            Some("pid 4242".to_owned()),
            13,
        );
        assert_eq!(blocked.failure(), failed.failure());
    }

    #[test]
    fn a_record_still_applying_is_an_interrupted_apply() {
        let record = LayoutRecord::applying("all-1g.5gb", Direction::Leaving, 10, None);
        let failure = record.failure().unwrap();
        assert_eq!(failure.reason, reason("interrupted"));
        assert!(
            failure.message.contains("interrupted"),
            "{}",
            failure.message
        );
        assert_eq!(failure.direction, Direction::Leaving);
    }

    #[test]
    fn an_interrupted_apply_settles_as_failed_with_its_reason_and_ended_records_stay() {
        let settled =
            LayoutRecord::applying("all-1g.5gb", Direction::Entering, 10, None).settled(20);
        assert_eq!(settled.outcome, LayoutOutcome::Failed);
        assert_eq!(settled.reason, reason("interrupted"));
        assert_eq!(settled.finished_at, Some(20));
        assert_eq!(settled.failure().unwrap().reason, reason("interrupted"));
        assert_eq!(settled.clone().settled(30), settled);
    }

    #[test]
    fn a_blocked_apply_with_no_failure_before_leaves_none() {
        let blocked = LayoutRecord::applying("a", Direction::Entering, 1, None).finish(
            LayoutOutcome::Blocked,
            reason("layout_impossible"),
            None,
            2,
        );
        assert_eq!(blocked.failure(), None);
    }
}
