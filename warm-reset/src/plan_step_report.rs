//! What one step of a multi-host plan gave ([`PlanStepReport`], an [`ActionReport`] per action):
//! what `run_plan_step` answers and the journal keeps, so a rerun answers it again.

use crate::plan::ActionKind;
use crate::reasons::ResetOutcome;
use serde::{Deserialize, Serialize};

/// What one action of a step gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ActionReport {
    /// The action.
    pub action: ActionKind,
    /// The node reset, for a reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// How it ended, with its reason (`outcome` and `reason` in JSON).
    #[serde(flatten)]
    pub outcome: ResetOutcome,
    /// What was found, or the manual instruction.
    pub detail: String,
    /// How long it took.
    pub elapsed_ms: u64,
}

/// What a step gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlanStepReport {
    /// The plan's id.
    pub plan: String,
    /// The phase.
    pub phase: usize,
    /// This host.
    pub host: String,
    /// Whether this is the recorded result of an earlier run of the same step.
    pub repeated: bool,
    /// The step's outcome: that of its last action (done when it had none); `outcome` and
    /// `reason` in JSON.
    #[serde(flatten)]
    pub outcome: ResetOutcome,
    /// Its actions, in order, up to the first that did not succeed.
    pub actions: Vec<ActionReport>,
}
