//! [`run_plan_step`]: one host's share of one phase of a [`Plan`], run through the same
//! machine, backend, lock and journal as a local reset, and idempotent: the journal keeps each
//! step's result, so a rerun reports the first result and changes nothing. The step holds the
//! host lock from its first action to the record of its result, so no other GPU operation runs
//! between its actions and no record it writes can overwrite another run's.

use crate::execute::{ExecuteError, host_for, try_lock};
use crate::journal::{Journal, JournalError, StepRecord};
use crate::plan::{ActionKind, Plan, PlanAction};
use crate::plan_step_report::{ActionReport, PlanStepReport};
use crate::reasons::{BlockedReason, ColdRebootReason, ResetOutcome};
use crate::reset_target::ResetTarget;
use crate::reset_with::ResetWith;
use gpu_host_probe::run::{CommandLine, RunResult, run};
use gpu_host_probe::{Host, LockError};
use std::time::Duration;

/// How long a link command may run.
pub const LINK_COMMAND_DEADLINE: Duration = Duration::from_secs(120);

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
    /// The journal holds a record of this step that does not read: the step is not run again
    /// on a guess; a person looks at the record.
    #[error("the journal's record of step {key} does not read; look at it, then remove it")]
    UnreadableRecord {
        /// The step's key in the journal (`PLAN/phase-N/HOST`).
        key: String,
        /// What was wrong.
        #[source]
        source: serde_json::Error,
    },
    /// A link command failed.
    #[error("the link command `{command}` {result}")]
    LinkCommand {
        /// The command.
        command: CommandLine,
        /// How it ended.
        result: RunResult,
    },
}

/// The journal key of a step.
fn key(plan: &Plan, phase: usize, host: &str) -> String {
    format!("{}/phase-{phase}/{host}", plan.id)
}

/// Runs `host`'s actions of phase `phase` on `on` (its state directory holds the host lock and
/// the journal; its procfs gives the boot id) with `with`, or reports the recorded result of an
/// earlier run.
pub fn run_plan_step(
    plan: &Plan,
    host: &str,
    phase: usize,
    on: &Host,
    with: &mut ResetWith<'_>,
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
    let mut actions = this_phase
        .actions
        .iter()
        .filter(|a| a.host == host)
        .peekable();
    let mut report = PlanStepReport {
        plan: plan.id.clone(),
        phase,
        host: host.to_owned(),
        repeated: false,
        outcome: ResetOutcome::Done,
        actions: Vec::new(),
    };
    // A simulation touches no card: its step runs on the simulated host (as `execute` does).
    let on = host_for(&*with.backend, on);
    let on = on.as_ref();
    // The lock is held from here to the record: a step never waits for it (a blocked step
    // records nothing and runs again later).
    let lock = match try_lock(on).map_err(PlanStepError::Lock)? {
        Ok(lock) => lock,
        Err(holder) => {
            if let Some(first) = actions.peek() {
                let blocked = blocked_by_lock(first, &holder);
                report.outcome = blocked.outcome;
                report.actions.push(blocked);
            }
            return Ok(report);
        }
    };
    let journal = Journal::new(&lock);
    if let Some(record) = journal.load()?.steps.get(&key) {
        let mut earlier =
            record
                .report
                .report()
                .map_err(|source| PlanStepError::UnreadableRecord {
                    key: key.clone(),
                    source,
                })?;
        earlier.repeated = true;
        tracing::info!("step {key} already ran: {}", earlier.outcome);
        return Ok(earlier);
    }
    for action in actions {
        let started = with.clock_or_real().now();
        let mut done = perform(action, with, &lock)?;
        done.elapsed_ms = u64::try_from(
            with.clock_or_real()
                .now()
                .saturating_sub(started)
                .as_millis(),
        )
        .unwrap_or(u64::MAX);
        report.outcome = done.outcome;
        report.actions.push(done);
        match report.outcome {
            ResetOutcome::Done | ResetOutcome::DryRun => {}
            ResetOutcome::Blocked(_) | ResetOutcome::ColdRebootRequired(_) => break,
        }
    }
    // A blocked step changed nothing: it is not recorded, so it runs again once fixed.
    if !matches!(report.outcome, ResetOutcome::Blocked(_)) {
        journal.record_step(key, StepRecord::new(report.clone()))?;
    }
    drop(lock);
    Ok(report)
}

fn action_report(action: &PlanAction, outcome: ResetOutcome, detail: String) -> ActionReport {
    ActionReport {
        action: action.action,
        node: action.node,
        outcome,
        detail,
        elapsed_ms: 0,
    }
}

fn perform(
    action: &PlanAction,
    with: &mut ResetWith<'_>,
    lock: &gpu_host_probe::HostLock,
) -> Result<ActionReport, PlanStepError> {
    match action.action {
        ActionKind::Preflight | ActionKind::Reset => {
            let target = action.node.map_or(ResetTarget::All, ResetTarget::index);
            let result = with.execute(&target, action.action == ActionKind::Preflight, lock)?;
            Ok(action_report(action, result.outcome, result.detail))
        }
        ActionKind::Verify => Ok(match with.backend.survey() {
            Err(why) => action_report(action, ColdRebootReason::GpuMissing.into(), why.said()),
            Ok(survey) if survey.not_available.is_empty() => action_report(
                action,
                ResetOutcome::Done,
                format!("{} GPU(s) available", survey.listed),
            ),
            Ok(survey) => action_report(
                action,
                ColdRebootReason::GpuUnavailable.into(),
                survey.not_available.join(", "),
            ),
        }),
        ActionKind::DisconnectLinks | ActionKind::ConnectLinks => {
            let Some(command) = &action.command else {
                let manual = action.manual.clone().unwrap_or_default();
                return Ok(action_report(
                    action,
                    ResetOutcome::Done,
                    format!("manual step: {manual}"),
                ));
            };
            // The runner's trust rules decide, as for every program: a command another user
            // could have written (or a relative path) is never run, and the step is blocked.
            let output = run(&command.spec(LINK_COMMAND_DEADLINE));
            match output.result {
                RunResult::Exited(0) => Ok(action_report(
                    action,
                    ResetOutcome::Done,
                    format!("ran `{command}`"),
                )),
                RunResult::CouldNotStart(error) if error.is_unsafe() => Ok(action_report(
                    action,
                    BlockedReason::UnsafeProgram.into(),
                    format!("the {} command was not run: {error}", action.action),
                )),
                result => Err(PlanStepError::LinkCommand {
                    command: command.clone(),
                    result,
                }),
            }
        }
    }
}

fn blocked_by_lock(action: &PlanAction, holder: &str) -> ActionReport {
    action_report(action, BlockedReason::LockBusy.into(), holder.to_owned())
}
