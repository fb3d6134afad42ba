//! `mxctl reset`: a warm reset on this host by a method (metax, nvidia, pci), real or
//! simulated.

use super::reset_backend::{exit_code, real_backend, window};
use crate::cli::Reset;
use crate::config::Config;
use crate::failure::Failure;
use crate::host::Host;
use crate::output::Output;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::Duration;
use warm_reset::{
    Backend, Clock, Journal, MachineConfig, Method, OutcomeKind, ResetReport, State, SystemClock,
    execute,
};

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct ResetJson {
    outcome: OutcomeKind,
    reason: String,
    target: String,
    gpus: Vec<String>,
    elapsed_ms: u128,
    detail: String,
    group: Option<Vec<u32>>,
    verified: Vec<String>,
    warnings: Vec<String>,
}

impl ResetJson {
    /// The document of a report.
    pub fn new(report: &ResetReport) -> Self {
        Self {
            outcome: report.outcome,
            reason: report
                .reason
                .map(|reason| reason.to_string())
                .unwrap_or_default(),
            target: report.target.clone(),
            gpus: report.gpus.iter().map(ToString::to_string).collect(),
            elapsed_ms: report.elapsed.as_millis(),
            detail: report.detail.clone(),
            group: report.group.clone(),
            verified: report.verified.iter().map(ToString::to_string).collect(),
            warnings: report.warnings.clone(),
        }
    }
}

/// Runs `mxctl reset` on this host (its `plan` and `step` are `reset_plan`'s).
pub fn run(args: &Reset, config: &Config, host: &Host, output: Output) -> Result<u8, Failure> {
    let Some(device) = args.device.as_deref() else {
        return Err(Failure::Usage("reset needs --device ID|all".to_owned()));
    };
    let method = Method::from(args.backend.method);
    let mut machine = MachineConfig::new(device).method(method);
    machine.window = window(&args.backend, config);
    machine.dry_run = args.dry_run;
    let report = match &args.simulate {
        Some(scenario) => {
            let clock = Rc::new(SystemClock::new());
            let Some(mut sim) = warm_reset::sim::scenario(method, scenario, clock.clone()) else {
                let names: Vec<String> = warm_reset::sim::scenarios(method)
                    .iter()
                    .map(|(name, what)| format!("  {name}: {what}"))
                    .collect();
                return Err(Failure::Usage(format!(
                    "unknown {method} scenario {scenario:?}; the scenarios are:\n{}",
                    names.join("\n")
                )));
            };
            // A simulation touches no GPU: its lock and journal live apart from the real ones.
            let journal = Journal::new(host.state_dir.join("simulated"));
            run_machine(
                &machine,
                sim.as_mut(),
                clock.as_ref(),
                &journal,
                None,
                output,
            )?
        }
        None => {
            let mut backend = real_backend(&args.backend, config, host);
            let boot_id = host_sync::boot::read_boot_id(&host.proc_root);
            let journal = Journal::new(&host.state_dir);
            run_machine(
                &machine,
                backend.as_mut(),
                &SystemClock::new(),
                &journal,
                boot_id.as_deref(),
                output,
            )?
        }
    };
    print(&report, output)?;
    Ok(exit_code(report.outcome))
}

/// Runs the machine, showing each step (and, on a terminal, a bar over the window).
pub fn run_machine(
    machine: &MachineConfig,
    backend: &mut dyn Backend,
    clock: &dyn Clock,
    journal: &Journal,
    boot_id: Option<&str>,
    output: Output,
) -> Result<ResetReport, Failure> {
    let mut bar: Option<ProgressBar> = None;
    let mut shown = "";
    let window = machine.window;
    let mut observe = |state: &State, now: Duration| {
        if !output.json && state.name() != shown {
            let line = format!("{:>7.1}s  {}", now.as_secs_f64(), state.name());
            // With the bar on the terminal, the line goes above it instead of through it.
            match &bar {
                Some(progress) => progress.suspend(|| println!("{line}")),
                None => println!("{line}"),
            }
        }
        shown = state.name();
        match state {
            State::Resetting { .. } if std::io::stderr().is_terminal() => {
                let progress = ProgressBar::new(window.as_secs().max(1));
                progress.set_style(
                    ProgressStyle::with_template("  window [{bar:40}] {elapsed} of {len}s  {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                progress.set_message(match machine.method {
                    Method::Metax => "mx-smi -r",
                    Method::Nvidia => "nvidia-smi --gpu-reset",
                    Method::Pci => "echo 1 > reset",
                });
                progress.enable_steady_tick(Duration::from_millis(200));
                // The reset blocks this thread; the bar follows the clock on its own.
                let follower = progress.clone();
                std::thread::spawn(move || {
                    while !follower.is_finished() {
                        follower.set_position(follower.elapsed().as_secs());
                        std::thread::sleep(Duration::from_millis(200));
                    }
                });
                bar = Some(progress);
            }
            State::Verifying { .. } => {
                if let Some(progress) = &bar {
                    progress.set_message("verifying");
                    progress.set_position(progress.elapsed().as_secs());
                }
            }
            _ if state.is_end() => {
                if let Some(progress) = bar.take() {
                    progress.finish_and_clear();
                }
            }
            _ => {}
        }
    };
    Ok(execute(
        machine,
        backend,
        clock,
        journal,
        boot_id,
        &mut observe,
    )?)
}

/// Prints the result for people, or the `--json` document.
pub fn print(report: &ResetReport, output: Output) -> Result<(), Failure> {
    let mut text = String::new();
    let reason = report
        .reason
        .map(|reason| format!(" ({reason})"))
        .unwrap_or_default();
    let _ = writeln!(text, "outcome: {}{reason}", report.outcome);
    if !report.detail.is_empty() {
        let _ = writeln!(text, "detail:  {}", report.detail);
    }
    let gpus: Vec<String> = report.gpus.iter().map(ToString::to_string).collect();
    let _ = writeln!(text, "target:  {} [{}]", report.target, gpus.join(", "));
    if let Some(group) = &report.group {
        let (name, why) = match report.method {
            Method::Nvidia => ("GPU ", "NVLink peers, reset in the same command"),
            Method::Metax | Method::Pci => ("GPU#", "reset together by the kernel driver"),
        };
        let nodes: Vec<String> = group.iter().map(|node| format!("{name}{node}")).collect();
        let _ = writeln!(text, "group:   {} ({why})", nodes.join(", "));
    }
    if !report.verified.is_empty() {
        let verified: Vec<String> = report.verified.iter().map(ToString::to_string).collect();
        let verb = if report.outcome == OutcomeKind::DryRun {
            "would verify"
        } else {
            "verified"
        };
        let _ = writeln!(text, "{verb}: {}", verified.join(", "));
    }
    for warning in &report.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    let _ = writeln!(text, "elapsed: {:.1} s", report.elapsed.as_secs_f64());
    let _ = writeln!(
        text,
        "{}",
        match report.outcome {
            OutcomeKind::Done => "every GPU is back",
            OutcomeKind::DryRun => "dry run: nothing was reset",
            OutcomeKind::Blocked => "nothing was changed",
            OutcomeKind::ColdRebootRequired => "the warm reset did not work: cold-reboot this host",
        }
    );
    output.emit(&ResetJson::new(report), &text)
}
