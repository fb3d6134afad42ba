//! `mxctl reset plan` and `mxctl reset step`: a reset across the hosts of an interconnect
//! group, as a plan that an orchestrator runs one idempotent host step at a time.

use super::reset_backend::{real_backend, window};
use crate::cli::{PlanArgs, StepArgs, StrategyArg};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;
use std::fmt::Write as _;
use std::path::Path;
use warm_reset::{Group, Plan, ResetWith, Strategy, run_plan_step};

fn read(path: &Path) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(std::fs::read(path)?)
}

/// Prints the plan as JSON (with or without `--json`).
pub fn plan(args: &PlanArgs, config: &Config) -> Result<Exit, Failure> {
    let bad = |source: Box<dyn std::error::Error + Send + Sync>| Failure::Group {
        path: args.group.clone(),
        source,
    };
    let bytes = read(&args.group).map_err(bad)?;
    let group: Group = serde_json::from_slice(&bytes).map_err(|error| bad(Box::new(error)))?;
    let strategy = match args.strategy {
        StrategyArg::AllHosts => Strategy::AllHosts,
        StrategyArg::FaultyOnly => Strategy::FaultyOnly,
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_millis())
        .unwrap_or_default();
    let id = format!("{}-{stamp}", args.faulty);
    let plan = warm_reset::plan(&group, &args.faulty, strategy, &config.links, &id)
        .map_err(|error| bad(Box::new(error)))?;
    let text = serde_json::to_string_pretty(&plan).map_err(|error| Failure::Output {
        source: std::io::Error::other(error),
    })?;
    crate::output::stdout(format!("{text}\n").as_bytes())?;
    Ok(Exit::Done)
}

/// Runs this host's share of one phase.
pub fn step(
    args: &StepArgs,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let bad = |source: Box<dyn std::error::Error + Send + Sync>| Failure::Plan {
        path: args.plan.clone(),
        source,
    };
    let bytes = read(&args.plan).map_err(bad)?;
    let plan: Plan = serde_json::from_slice(&bytes).map_err(|error| bad(Box::new(error)))?;
    let mut backend = real_backend(&args.backend, config, host);
    let mut with = ResetWith::new(args.backend.method.into(), backend.as_mut())
        .window(window(&args.backend, config));
    let report = run_plan_step(&plan, &args.host, args.phase, host, &mut with)?;
    let mut text = String::new();
    let again = if report.repeated {
        " (already run: the first result)"
    } else {
        ""
    };
    let _ = writeln!(
        text,
        "plan {} phase {} on {}: {}{again}",
        report.plan, report.phase, report.host, report.outcome
    );
    if report.actions.is_empty() {
        let _ = writeln!(text, "  nothing to do on this host in this phase");
    }
    for action in &report.actions {
        let node = action
            .node
            .map(|node| format!(" node {node}"))
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "  {}{node}: {} {}",
            action.action, action.outcome, action.detail
        );
    }
    // A step that reset wrote to the cards: read them again, as after an apply.
    let after = (!report.repeated && report.outcome.reset_issued())
        .then(|| super::sync::after_write(config, host))
        .flatten();
    if let Some(after) = &after {
        text.push_str(&super::sync::host_lines(after));
    }
    output.emit(
        &super::sync::WithHost {
            report: &report,
            host_after: after.as_ref(),
        },
        &text,
    )?;
    Ok(Exit::of_reset(report.outcome))
}
