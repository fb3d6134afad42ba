//! `mxctl reset`: a warm reset on this host by a method (metax, nvidia, pci, amd), real or
//! simulated.

use super::reset_backend::{real_backend, window};
use crate::cli::{Reset, Simulate};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::{Clock, SystemClock};
use gpu_host_probe::{Host, HostLock};
use gpu_partition_types::Bdf;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;
use warm_reset::{
    Backend, MachineConfig, Method, ResetOutcome, ResetReport, ResetRun, State, execute,
};

/// Runs `mxctl reset` on this host (its `plan` and `step` are `reset_plan`'s).
pub fn run(args: &Reset, config: &Config, host: &Host, output: Output) -> Result<Exit, Failure> {
    let method = Method::from(args.backend.method);
    // `help` needs no device: it only lists.
    let scenario = match &args.simulate {
        Some(Simulate::List) => return list_scenarios(method, output),
        Some(Simulate::Scenario(scenario)) => Some(scenario),
        None => None,
    };
    let Some(device) = args.device.clone() else {
        return Err(Failure::Usage("reset needs --device ID|all".to_owned()));
    };
    let machine = MachineConfig::new(device.clone())
        .method(method)
        .window(window(&args.backend, config))
        .dry_run(args.dry_run);
    let simulated = scenario.is_some();
    let report = match scenario {
        Some(scenario) => {
            let clock = Arc::new(SystemClock::new());
            let Some(mut sim) = warm_reset::sim::scenario(method, scenario, clock.clone()) else {
                return Err(Failure::Usage(format!(
                    "unknown {method} scenario {scenario:?}; the scenarios are:\n{}",
                    scenario_lines(method)
                )));
            };
            // A simulation touches no GPU: its lock and journal live apart from the real ones.
            run_machine(
                &machine,
                Held::No(&host.simulated()),
                sim.as_mut(),
                clock.as_ref(),
                output,
            )?
        }
        None => {
            let mut backend = real_backend(&args.backend, config, host);
            // The host lock first, as the reset machine takes it first: who owns each GPU is
            // read under it, so no `partition own` lands between that read and the reset. Held
            // by another, the machine says so (lock_busy) when it asks for it.
            let lock = match host.try_lock() {
                Ok(lock) => Some(lock),
                Err(error) if error.is_busy() => None,
                Err(error) => return Err(error.into()),
            };
            // Who owns each GPU not ours, read once: the GPUs named, then what the reset takes.
            let theirs = {
                use host_sync::StateStore;
                host_sync::FileStore::read_only(host.state_dir())
                    .load()?
                    .unwrap_or_default()
                    .not_ours()
            };
            if let Some(why) = not_ours(&theirs, &device) {
                let document = serde_json::json!({
                    "outcome": "blocked", "reason": "gpu_not_ours", "detail": why,
                });
                output.emit(&document, &format!("blocked (gpu_not_ours): {why}\n"))?;
                return Ok(Exit::Blocked);
            }
            // What the reset takes with it (an NVLink peer, the rest of an XGMI hive, the
            // functions of a bus) is warm-reset's to refuse: none may be another's.
            let report = run_machine(
                &machine.clone().sparing(theirs),
                lock.as_ref().map_or(Held::No(host), Held::Yes),
                backend.as_mut(),
                &SystemClock::new(),
                output,
            )?;
            // The sync after the reset takes the lock again.
            drop(lock);
            report
        }
    };
    // A reset is a write to the cards: read them again, as after an apply (a simulation
    // touches no card).
    let after = (!simulated && report.outcome.reset_issued())
        .then(|| super::sync::after_write(config, host))
        .flatten();
    print(&report, after.as_ref(), output)?;
    Ok(Exit::of_reset(report.outcome))
}

/// Why a reset of `target` would reset a GPU that is not ours (its ownership `dynamic` or
/// `external`, as stored): one named by address, every GPU (`all`) while one is not ours, or one
/// named by index while one is not ours (an index is not an address: name it so).
fn not_ours(
    theirs: &BTreeMap<Bdf, gpu_host_probe::Ownership>,
    target: &warm_reset::ResetTarget,
) -> Option<String> {
    use warm_reset::{ResetId, ResetTarget};
    let (first, ownership) = theirs.iter().next()?;
    match target {
        ResetTarget::All => Some(format!(
            "{first} is not ours (ownership {ownership}), and a reset of every GPU resets it: \
             name the GPUs to reset"
        )),
        ResetTarget::Named(ids) => ids.iter().find_map(|id| match id {
            ResetId::Bus(bdf) => theirs.get(bdf).map(|ownership| {
                format!("{bdf} is not ours (ownership {ownership}): it is never reset by mxctl")
            }),
            other => Some(format!(
                "{other} is not an address, and {first} is not ours (ownership {ownership}): \
                 name the GPUs to reset by address"
            )),
        }),
    }
}

/// One simulated scenario of a method, as `--simulate help` lists it.
#[derive(Debug, serde::Serialize)]
struct Scenario {
    name: &'static str,
    shows: &'static str,
}

/// `--simulate help`: the method's scenarios, `{"method", "scenarios": [{"name", "shows"}]}`
/// with `--json`; exit 0.
fn list_scenarios(method: Method, output: Output) -> Result<Exit, Failure> {
    let scenarios: Vec<Scenario> = warm_reset::sim::scenarios(method)
        .into_iter()
        .map(|(name, shows)| Scenario { name, shows })
        .collect();
    output.emit(
        &serde_json::json!({"method": method, "scenarios": scenarios}),
        &format!(
            "the scenarios of --method {method}:\n{}\n",
            scenario_lines(method)
        ),
    )?;
    Ok(Exit::Done)
}

/// The method's scenarios, a line each: `  NAME: what it shows`.
fn scenario_lines(method: Method) -> String {
    let lines: Vec<String> = warm_reset::sim::scenarios(method)
        .iter()
        .map(|(name, shows)| format!("  {name}: {shows}"))
        .collect();
    lines.join("\n")
}

/// The host a reset runs on: with its lock already held by the caller, or taken by the run.
pub enum Held<'a> {
    /// The caller holds the lock, on its host.
    Yes(&'a HostLock),
    /// The run takes the lock of this host.
    No(&'a Host),
}

/// Runs the machine, showing each step (and, on a terminal, a bar over the window).
pub fn run_machine(
    machine: &MachineConfig,
    host: Held<'_>,
    backend: &mut dyn Backend,
    clock: &dyn Clock,
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
                Some(progress) => progress.suspend(|| crate::output::progress(&line)),
                None => crate::output::progress(&line),
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
                    Method::Amd => "amd-smi reset --gpureset",
                    _ => "the reset",
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
    let run = match host {
        Held::Yes(lock) => ResetRun::under(machine, lock, backend),
        Held::No(host) => ResetRun::new(machine, host, backend),
    };
    Ok(execute(run.clock(clock).observe(&mut observe))?)
}

/// Prints the result for people, or the `--json` document, with the host after the sync that
/// followed it, when one ran.
pub fn print(
    report: &ResetReport,
    after: Option<&host_sync::SyncReport>,
    output: Output,
) -> Result<(), Failure> {
    let mut text = String::new();
    let _ = writeln!(text, "outcome: {}", report.outcome);
    if !report.detail.is_empty() {
        let _ = writeln!(text, "detail:  {}", report.detail);
    }
    let gpus: Vec<String> = report.gpus.iter().map(ToString::to_string).collect();
    let _ = writeln!(text, "target:  {} [{}]", report.target, gpus.join(", "));
    if let Some(group) = &report.group {
        let (name, why) = match report.method {
            Method::Nvidia => ("GPU ", "NVLink peers, reset in the same command"),
            _ => ("GPU#", "reset together by the kernel driver"),
        };
        let nodes: Vec<String> = group.iter().map(|node| format!("{name}{node}")).collect();
        let _ = writeln!(text, "group:   {} ({why})", nodes.join(", "));
    }
    if !report.verified.is_empty() {
        let verified: Vec<String> = report.verified.iter().map(ToString::to_string).collect();
        let verb = if report.outcome == ResetOutcome::DryRun {
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
    if let Some(after) = after {
        text.push_str(&super::sync::host_lines(after));
    }
    let _ = writeln!(
        text,
        "{}",
        match report.outcome {
            ResetOutcome::Done => "every GPU is back",
            ResetOutcome::DryRun => "dry run: nothing was reset",
            ResetOutcome::Blocked(_) => "nothing was changed",
            ResetOutcome::ColdRebootRequired(_) =>
                "the warm reset did not work: cold-reboot this host",
        }
    );
    output.emit(
        &super::sync::WithHost {
            report,
            host_after: after,
        },
        &text,
    )
}
