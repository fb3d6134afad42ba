//! [`LayoutRecord`]: what the host keeps of the last MIG layout applied to it, so that its
//! status tells the truth while a layout is applied and after one failed. Only the records:
//! their writers are [`crate::apply_state`]'s.
//!
//! The classifier reads it: while a failure is unhealed — an apply that failed, needed a cold
//! reboot, or was interrupted (a record still `applying` when the lock is taken again) — the
//! host stays `entering` (pool on) or `leaving` (pool off) with reason `layout_failed` and the
//! failure's message, until an apply succeeds.

use crate::status::{HostStatus, StoredReason};
use gpu_partition_types::Token;
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
    /// The token of a layout outcome: `outcome` in the file.
    enum OutcomeToken: "layout outcome" {
        Applying = "applying",
        Done = "done",
        Blocked = "blocked",
        Failed = "failed",
        ColdRebootRequired = "cold_reboot_required",
    }
}

/// How the last apply ended, with its reason (or that it has not: `applying`), as one value (as
/// a reset's outcome is): a reason comes only with the outcomes that have one. Stored as
/// `outcome` and `reason` (absent or `""` for none).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LayoutOutcome {
    /// Started and not finished: under the host lock, an interrupted apply.
    Applying,
    /// The layout holds on every GPU it names, read back.
    Done,
    /// Refused before anything was written, for this reason; the host is as it was.
    Blocked(StoredReason),
    /// A step, the reset or the read-back failed, for this reason: the host is between layouts.
    Failed(StoredReason),
    /// The warm reset that completes a mode change did not work (the reset's reason):
    /// cold-reboot the host.
    ColdRebootRequired(StoredReason),
}

/// An outcome and a reason that do not go together (a store's columns, a file edited by hand).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a layout apply `{outcome}` with the reason {reason:?} does not read")]
pub struct BadLayoutOutcome {
    /// The outcome as stored.
    pub outcome: String,
    /// The reason as stored.
    pub reason: String,
}

impl LayoutOutcome {
    /// The outcome's token (`applying`, `done`, `blocked`, `failed`, `cold_reboot_required`).
    pub fn as_str(&self) -> &'static str {
        self.token().as_str()
    }

    fn token(&self) -> OutcomeToken {
        match self {
            Self::Applying => OutcomeToken::Applying,
            Self::Done => OutcomeToken::Done,
            Self::Blocked(_) => OutcomeToken::Blocked,
            Self::Failed(_) => OutcomeToken::Failed,
            Self::ColdRebootRequired(_) => OutcomeToken::ColdRebootRequired,
        }
    }

    /// The reason, for the outcomes that have one.
    pub fn reason(&self) -> Option<&StoredReason> {
        match self {
            Self::Applying | Self::Done => None,
            Self::Blocked(reason) | Self::Failed(reason) | Self::ColdRebootRequired(reason) => {
                Some(reason)
            }
        }
    }

    /// The outcome of a store's two columns: the outcome's token and the reason's (`""` for
    /// none). A reason without its outcome, or the other way round, does not read.
    pub fn from_columns(outcome: &str, reason: &str) -> Result<Self, BadLayoutOutcome> {
        let bad = || BadLayoutOutcome {
            outcome: outcome.to_owned(),
            reason: reason.to_owned(),
        };
        let token = OutcomeToken::from_token(outcome).ok_or_else(bad)?;
        let why = StoredReason::new(reason).map_err(|_| bad())?;
        let some = !why.as_str().is_empty();
        Ok(match (token, some) {
            (OutcomeToken::Applying, false) => Self::Applying,
            (OutcomeToken::Done, false) => Self::Done,
            (OutcomeToken::Blocked, true) => Self::Blocked(why),
            (OutcomeToken::Failed, true) => Self::Failed(why),
            (OutcomeToken::ColdRebootRequired, true) => Self::ColdRebootRequired(why),
            (OutcomeToken::Applying | OutcomeToken::Done, true)
            | (
                OutcomeToken::Blocked | OutcomeToken::Failed | OutcomeToken::ColdRebootRequired,
                false,
            ) => return Err(bad()),
        })
    }
}

impl std::fmt::Display for LayoutOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.reason() {
            None => f.write_str(self.as_str()),
            Some(reason) => write!(f, "{} ({reason})", self.as_str()),
        }
    }
}

/// The two members a record is stored with.
#[derive(Serialize, Deserialize)]
struct OutcomeWire {
    outcome: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    reason: String,
}

impl Serialize for LayoutOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        OutcomeWire {
            outcome: self.as_str().to_owned(),
            reason: self.reason().map(ToString::to_string).unwrap_or_default(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LayoutOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = OutcomeWire::deserialize(deserializer)?;
        Self::from_columns(&wire.outcome, &wire.reason).map_err(serde::de::Error::custom)
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

impl LayoutFailure {
    /// A failure as a store keeps it, from its stored fields.
    pub fn new(
        label: impl Into<String>,
        direction: Direction,
        reason: StoredReason,
        message: impl Into<String>,
        started_at: u64,
    ) -> Self {
        Self {
            label: label.into(),
            direction,
            reason,
            message: message.into(),
            started_at,
        }
    }
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
    /// How it ended, with its reason (`outcome` and `reason` in the file).
    #[serde(flatten)]
    pub outcome: LayoutOutcome,
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
    /// A record as a store keeps it, from its stored fields (a column store builds it so).
    pub fn stored(
        label: impl Into<String>,
        direction: Direction,
        outcome: LayoutOutcome,
        message: Option<String>,
        started_at: u64,
        finished_at: Option<u64>,
        unhealed: Option<LayoutFailure>,
    ) -> Self {
        Self {
            label: label.into(),
            direction,
            outcome,
            message,
            started_at,
            finished_at,
            unhealed,
        }
    }

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
        message: Option<String>,
        finished_at: u64,
    ) -> Self {
        self.outcome = outcome;
        self.message = message;
        self.finished_at = Some(finished_at);
        match &self.outcome {
            LayoutOutcome::Done => self.unhealed = None,
            LayoutOutcome::Failed(_) | LayoutOutcome::ColdRebootRequired(_) => {
                self.unhealed = Some(self.own_failure());
            }
            LayoutOutcome::Blocked(_) | LayoutOutcome::Applying => {}
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
            LayoutOutcome::Failed(failure.reason),
            Some(failure.message),
            now,
        )
    }

    /// The failure this record leaves unhealed: its own when it failed, needed a cold reboot or
    /// is still `applying` (read under the host lock, that is an interrupted apply), else the
    /// one it kept from before.
    pub fn failure(&self) -> Option<LayoutFailure> {
        match self.outcome {
            LayoutOutcome::Failed(_)
            | LayoutOutcome::ColdRebootRequired(_)
            | LayoutOutcome::Applying => Some(self.own_failure()),
            LayoutOutcome::Done => None,
            LayoutOutcome::Blocked(_) => self.unhealed.clone(),
        }
    }

    fn own_failure(&self) -> LayoutFailure {
        let (reason, message) = match self.outcome.reason() {
            None => (
                StoredReason::of_token("interrupted"),
                format!(
                    "the apply of layout {:?} started at {} (Unix time) was interrupted; \
                     apply it again",
                    self.label, self.started_at
                ),
            ),
            Some(reason) => (
                reason.clone(),
                self.message
                    .clone()
                    .unwrap_or_else(|| format!("the apply of layout {:?} failed", self.label)),
            ),
        };
        LayoutFailure::new(
            &self.label,
            self.direction,
            reason,
            message,
            self.started_at,
        )
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
            LayoutOutcome::Failed(reason("step_refused")),
            Some("GPU 0000:3b:00.0: NVML said no".to_owned()),
            11,
        );
        let failure = failed.failure().unwrap();
        assert_eq!(failure.reason, reason("step_refused"));
        assert_eq!(failure.message, "GPU 0000:3b:00.0: NVML said no");
        let done = LayoutRecord::applying("all-balanced", Direction::Entering, 12, Some(&failed))
            .finish(LayoutOutcome::Done, None, 13);
        assert_eq!(done.failure(), None);
    }

    #[test]
    fn a_blocked_apply_heals_nothing() {
        let failed = LayoutRecord::applying("a", Direction::Entering, 10, None).finish(
            LayoutOutcome::Failed(reason("read_back_differs")),
            Some("differs".to_owned()),
            11,
        );
        let blocked = LayoutRecord::applying("b", Direction::Entering, 12, Some(&failed)).finish(
            LayoutOutcome::Blocked(reason("gpu_busy")),
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
        assert_eq!(
            settled.outcome,
            LayoutOutcome::Failed(reason("interrupted"))
        );
        assert_eq!(settled.finished_at, Some(20));
        assert_eq!(settled.failure().unwrap().reason, reason("interrupted"));
        assert_eq!(settled.clone().settled(30), settled);
    }

    #[test]
    fn a_blocked_apply_with_no_failure_before_leaves_none() {
        let blocked = LayoutRecord::applying("a", Direction::Entering, 1, None).finish(
            LayoutOutcome::Blocked(reason("layout_impossible")),
            None,
            2,
        );
        assert_eq!(blocked.failure(), None);
    }

    #[test]
    fn an_outcome_reads_back_from_its_two_columns_and_a_reason_goes_only_with_its_outcome() {
        for outcome in [
            LayoutOutcome::Applying,
            LayoutOutcome::Done,
            LayoutOutcome::Blocked(reason("gpu_busy")),
            LayoutOutcome::Failed(reason("step_refused")),
            LayoutOutcome::ColdRebootRequired(reason("reset_hung")),
        ] {
            let why = outcome
                .reason()
                .map(ToString::to_string)
                .unwrap_or_default();
            assert_eq!(
                LayoutOutcome::from_columns(outcome.as_str(), &why),
                Ok(outcome)
            );
        }
        for (outcome, why) in [
            ("done", "gpu_busy"),
            ("failed", ""),
            ("finished", ""),
            ("blocked", "Busy"),
        ] {
            assert!(
                LayoutOutcome::from_columns(outcome, why).is_err(),
                "{outcome} {why}"
            );
        }
    }

    #[test]
    fn a_record_of_an_earlier_version_with_an_empty_reason_still_reads() {
        let text = r#"{"label": "l", "direction": "entering", "outcome": "done", "reason": "",
            "started_at": 1, "finished_at": 2}"#;
        let record: LayoutRecord = serde_json::from_str(text).unwrap();
        assert_eq!(record.outcome, LayoutOutcome::Done);
    }
}
