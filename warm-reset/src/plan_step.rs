//! [`run_plan_step`]: one host's share of one phase of a [`Plan`], run through the same
//! machine, backend, lock and journal as a local reset, and idempotent: the journal keeps each
//! step's result, so a rerun reports the first result and changes nothing. (This was
//! `step.rs`/`run_step`, renamed apart from [`machine::step`](crate::machine::step), the
//! transition function.)

use crate::backend::Backend;
use crate::clock::Clock;
use crate::execute::{ExecuteError, execute, try_lock};
use crate::journal::{Journal, JournalError, StepRecord};
use crate::machine::{LOCK_HELD, MachineConfig, said};
use crate::method::Method;
use crate::plan::{ActionKind, Plan, PlanAction};
use crate::reasons::{BlockedReason, ColdRebootReason, OutcomeKind, Reason};
use gpu_host_probe::lock::{HostLock, LockError};
use gpu_host_probe::run::{RunResult, RunSpec, StartError, check_program, run};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// How long a link command may run.
pub const LINK_COMMAND_DEADLINE: Duration = Duration::from_secs(120);

/// What one action of a step gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ActionReport {
    /// The action.
    pub action: ActionKind,
    /// The node reset, for a reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// How it ended.
    pub outcome: OutcomeKind,
    /// Why it was blocked or needs a cold reboot (`""` in JSON when neither).
    #[serde(with = "crate::reasons::token_or_empty")]
    pub reason: Option<Reason>,
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
    /// The step's outcome: that of its last action (done when it had none).
    pub outcome: OutcomeKind,
    /// Its actions, in order, up to the first that did not succeed.
    pub actions: Vec<ActionReport>,
}

/// A step that could not run or finish; nothing is recorded, so a rerun tries again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanStepError {
    /// The plan has no such phase.
    #[error("the plan has no phase {phase} (its phases are 0 to {last})")]
    NoSuchPhase {
        /// The phase asked for.
        phase: usize,
        /// The last phase.
        last: usize,
    },
    /// The host is not in the plan at all.
    #[error("host {0} is not in the plan")]
    UnknownHost(String),
    /// The journal failed.
    #[error("the reset journal failed")]
    Journal(#[from] JournalError),
    /// A reset could not go on.
    #[error("the reset could not go on")]
    Execute(#[from] ExecuteError),
    /// The host lock's file could not be opened.
    #[error("the host lock failed")]
    Lock(#[source] LockError),
    /// A link command is empty.
    #[error("the {0} action has an empty command")]
    EmptyCommand(ActionKind),
    /// A link command failed.
    #[error("the link command `{command}` {result}")]
    LinkCommand {
        /// The command.
        command: String,
        /// How it ended.
        result: RunResult,
    },
}

/// What a step runs against.
pub struct PlanStepHost<'a> {
    /// The host's backend.
    pub backend: &'a mut dyn Backend,
    /// The clock.
    pub clock: &'a dyn Clock,
    /// The journal (and the host lock) in the host's state directory.
    pub journal: &'a Journal,
    /// The kernel's boot id now.
    pub boot_id: Option<&'a str>,
    /// The reset window.
    pub window: Duration,
    /// The method of the host's resets.
    pub method: Method,
}

impl std::fmt::Debug for PlanStepHost<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanStepHost")
            .field("journal", self.journal)
            .field("window", &self.window)
            .finish()
    }
}

/// The journal key of a step.
fn key(plan: &Plan, phase: usize, host: &str) -> String {
    format!("{}/phase-{phase}/{host}", plan.id)
}

/// Runs `host`'s actions of phase `phase`, or reports the recorded result of an earlier run.
pub fn run_plan_step(
    plan: &Plan,
    host: &str,
    phase: usize,
    env: &mut PlanStepHost<'_>,
) -> Result<PlanStepReport, PlanStepError> {
    let Some(this_phase) = plan.phases.iter().find(|p| p.index == phase) else {
        return Err(PlanStepError::NoSuchPhase {
            phase,
            last: plan.phases.len().saturating_sub(1),
        });
    };
    if !plan
        .phases
        .iter()
        .flat_map(|p| &p.actions)
        .any(|a| a.host == host)
    {
        return Err(PlanStepError::UnknownHost(host.to_owned()));
    }
    let key = key(plan, phase, host);
    if let Some(record) = env.journal.load()?.steps.get(&key) {
        if let Ok(mut report) = serde_json::from_value::<PlanStepReport>(record.report.clone()) {
            report.repeated = true;
            tracing::info!("step {key} already ran: {}", report.outcome);
            return Ok(report);
        }
    }
    let mut report = PlanStepReport {
        plan: plan.id.clone(),
        phase,
        host: host.to_owned(),
        repeated: false,
        outcome: OutcomeKind::Done,
        actions: Vec::new(),
    };
    for action in this_phase.actions.iter().filter(|a| a.host == host) {
        let started = env.clock.now();
        let mut done = perform(action, env)?;
        done.elapsed_ms =
            u64::try_from(env.clock.now().saturating_sub(started).as_millis()).unwrap_or(u64::MAX);
        report.outcome = done.outcome;
        report.actions.push(done);
        match report.outcome {
            OutcomeKind::Done | OutcomeKind::DryRun => {}
            OutcomeKind::Blocked | OutcomeKind::ColdRebootRequired => break,
        }
    }
    // A blocked step changed nothing: it is not recorded, so it runs again once fixed.
    if report.outcome != OutcomeKind::Blocked {
        let mut file = env.journal.load()?;
        let value = serde_json::to_value(&report).map_err(JournalError::Encode)?;
        file.steps
            .insert(key, StepRecord::new(value, report.outcome));
        env.journal.store(&file)?;
    }
    Ok(report)
}

fn action_report(
    action: &PlanAction,
    outcome: OutcomeKind,
    reason: Option<Reason>,
    detail: String,
) -> ActionReport {
    ActionReport {
        action: action.action,
        node: action.node,
        outcome,
        reason,
        detail,
        elapsed_ms: 0,
    }
}

fn perform(action: &PlanAction, env: &mut PlanStepHost<'_>) -> Result<ActionReport, PlanStepError> {
    match action.action {
        ActionKind::Preflight | ActionKind::Reset => {
            let id = action
                .node
                .map_or_else(|| "all".to_owned(), |node| node.to_string());
            let mut config = MachineConfig::new(&id).method(env.method);
            config.window = env.window;
            config.dry_run = action.action == ActionKind::Preflight;
            let result = execute(
                &config,
                env.backend,
                env.clock,
                env.journal,
                env.boot_id,
                &mut |_, _| {},
            )?;
            Ok(action_report(
                action,
                result.outcome,
                result.reason,
                result.detail,
            ))
        }
        ActionKind::Verify => {
            let Some(_lock) = lock(env)? else {
                return Ok(blocked_by_lock(action));
            };
            Ok(match env.backend.survey() {
                Err(why) => action_report(
                    action,
                    OutcomeKind::ColdRebootRequired,
                    Some(ColdRebootReason::GpuMissing.into()),
                    said(&why),
                ),
                Ok(survey) if survey.not_available.is_empty() => action_report(
                    action,
                    OutcomeKind::Done,
                    None,
                    format!("{} GPU(s) available", survey.listed),
                ),
                Ok(survey) => action_report(
                    action,
                    OutcomeKind::ColdRebootRequired,
                    Some(ColdRebootReason::GpuUnavailable.into()),
                    survey.not_available.join(", "),
                ),
            })
        }
        ActionKind::DisconnectLinks | ActionKind::ConnectLinks => {
            let Some(command) = &action.command else {
                let manual = action.manual.clone().unwrap_or_default();
                return Ok(action_report(
                    action,
                    OutcomeKind::Done,
                    None,
                    format!("manual step: {manual}"),
                ));
            };
            let Some(_lock) = lock(env)? else {
                return Ok(blocked_by_lock(action));
            };
            let mut words = command.split_whitespace();
            let program = words
                .next()
                .ok_or(PlanStepError::EmptyCommand(action.action))?;
            // A command another user could have written is never run: the step is blocked.
            if let Err(error @ StartError::Untrusted { .. }) = check_program(Path::new(program)) {
                return Ok(action_report(
                    action,
                    OutcomeKind::Blocked,
                    Some(BlockedReason::UnsafeProgram.into()),
                    format!("the {} command was not run: {error}", action.action),
                ));
            }
            let output = run(&RunSpec::new(program, LINK_COMMAND_DEADLINE).args(words));
            match output.result {
                RunResult::Exited(0) => Ok(action_report(
                    action,
                    OutcomeKind::Done,
                    None,
                    format!("ran `{command}`"),
                )),
                result => Err(PlanStepError::LinkCommand {
                    command: command.clone(),
                    result,
                }),
            }
        }
    }
}

/// The host lock, taken as the executor takes it (never waiting).
fn lock(env: &PlanStepHost<'_>) -> Result<Option<HostLock>, PlanStepError> {
    try_lock(env.journal.dir()).map_err(PlanStepError::Lock)
}

fn blocked_by_lock(action: &PlanAction) -> ActionReport {
    action_report(
        action,
        OutcomeKind::Blocked,
        Some(BlockedReason::LockBusy.into()),
        LOCK_HELD.to_owned(),
    )
}
