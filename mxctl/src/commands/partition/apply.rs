//! `mxctl partition apply`, `leave` and `restore`: a layout applied by diff under the host lock
//! (`mig_layout::apply`, `mig_layout::restore`), its plan per GPU, then what was done.

use super::{layout, layout_failure, pool, reset_backend};
use crate::cli::{PartitionApply, PartitionLeave, PartitionRestore, WriteArgs};
use crate::config::Config;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use host_sync::FileStore;
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyReport, ApplyRun, Progress, ResetWith, Restore,
    RestoreOptions, Spec, Unnamed,
};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::time::Instant;
use warm_reset::Method;

/// The exit code of an outcome: 0 done or dry run, 1 failed, 3 blocked, 4 cold reboot (as
/// `reset`'s).
pub fn exit_code(outcome: ApplyOutcome) -> u8 {
    match outcome {
        ApplyOutcome::Done | ApplyOutcome::DryRun => 0,
        ApplyOutcome::Failed(_) => 1,
        ApplyOutcome::Blocked(_) => 3,
        ApplyOutcome::ColdRebootRequired(_) => 4,
    }
}

/// `partition apply`.
pub fn run(
    args: &PartitionApply,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<u8, Failure> {
    let specs = layout(&args.layout)?;
    write(
        What::Layout(&specs, &args.layout.select),
        &args.write,
        config,
        host,
        output,
        false,
    )
}

/// `partition leave`: the layout with MIG off on every GPU.
pub fn leave(
    args: &PartitionLeave,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<u8, Failure> {
    write(
        What::Layout(&mig_layout::leave(), "leave"),
        &args.write,
        config,
        host,
        output,
        false,
    )
}

/// What to write: a layout, or the host's declaration.
enum What<'a> {
    Layout(&'a [Spec], &'a str),
    Declared,
}

/// `partition restore`: the declaration applied by diff. `--at-boot` (the boot unit): once per
/// boot, nothing when `restore-at-boot` is disabled, and nothing declared is not a failure; a
/// state that was lost is, at boot as anywhere (its clients must not start on a host that lost
/// its layout as if none had been declared).
pub fn restore(
    args: &PartitionRestore,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<u8, Failure> {
    if args.at_boot && !config.restore_at_boot {
        let said = "restore-at-boot is disabled in the config: the declared layout is not restored";
        tracing::info!("{said}");
        output.emit(&serde_json::json!({"restored": false, "why": said}), said)?;
        return Ok(0);
    }
    write(
        What::Declared,
        &args.write,
        config,
        host,
        output,
        args.at_boot,
    )
}

fn write(
    what: What<'_>,
    args: &WriteArgs,
    config: &Config,
    host: &Host,
    output: Output,
    at_boot: bool,
) -> Result<u8, Failure> {
    let helper = helper(&args.helper, config);
    let mut store = FileStore::new(host.state_dir());
    let mut backend = reset_backend(args, config, host);
    let reset = ResetWith::new(Method::Nvidia, &mut backend)
        .window(args.window.unwrap_or(config.reset_window));
    let started = Instant::now();
    // A line per step as it runs, on a terminal (the report names every step anyway).
    let live = !output.json && std::io::stdout().is_terminal();
    let mut show = |progress: &Progress| {
        if live {
            println!(
                "{:>7.1}s  {}  {}",
                started.elapsed().as_secs_f64(),
                progress.device(),
                progress
            );
        }
    };
    let run = ApplyRun::new(host, &helper, &mut store, reset).observe(&mut show);
    let report = match what {
        What::Layout(specs, label) => {
            let options = ApplyOptions::new(label, pool(args.pool, config))
                .devices(args.devices.clone())
                .dry_run(args.dry_run)
                .lock_wait(args.lock_wait.unwrap_or_default())
                .hooks(config.hooks.clone())
                .unnamed(args.unnamed_instances.map_or(config.unnamed, Unnamed::from));
            mig_layout::apply(run, specs, &options).map_err(layout_failure)?
        }
        What::Declared => {
            let mut options = RestoreOptions::new(pool(args.pool, config))
                .devices(args.devices.clone())
                .dry_run(args.dry_run)
                .lock_wait(args.lock_wait.unwrap_or_default())
                .hooks(config.hooks.clone())
                .once_per_boot(at_boot);
            if let Some(unnamed) = args.unnamed_instances {
                options = options.unnamed(unnamed.into());
            }
            match mig_layout::restore(run, &options).map_err(layout_failure)? {
                Restore::Ran(report) => *report,
                Restore::NothingDeclared => {
                    let said = "nothing is declared on this host: no partition apply or leave \
                                has written, so there is nothing to restore";
                    output.emit(&serde_json::json!({"restored": false, "why": said}), said)?;
                    return Ok(if at_boot { 0 } else { 3 });
                }
                Restore::AlreadyRanThisBoot(earlier) => {
                    let said = format!(
                        "a boot restore already ran in this boot (at {} Unix time): nothing was \
                         done",
                        earlier.at
                    );
                    output.emit(&serde_json::json!({"restored": false, "why": said}), &said)?;
                    return Ok(0);
                }
                Restore::StateLost(lost) => return Err(Failure::StateLost(lost)),
            }
        }
    };
    output.emit(&report, &text(&report))?;
    Ok(exit_code(report.outcome))
}

/// The report for people: each GPU's plan and steps, the resets, how it ended, the host after.
pub fn text(report: &ApplyReport) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "layout: {}", report.label);
    for gpu in &report.gpus {
        let line = gpu
            .line
            .map(|line| format!("  (line {line})"))
            .unwrap_or_default();
        let _ = writeln!(text, "GPU {}  {}{line}", gpu.index, gpu.device);
        if gpu.plan.is_empty() && gpu.steps.is_empty() {
            let _ = writeln!(text, "  as the layout wants: no step");
        }
        for line in &gpu.plan {
            let _ = writeln!(text, "  plan: {line}");
        }
        for step in &gpu.steps {
            let _ = writeln!(text, "  {step}");
        }
        for difference in &gpu.differences {
            let _ = writeln!(
                text,
                "  differs ({}): {}",
                difference.kind(),
                difference.message()
            );
        }
        for adopted in &gpu.adopted {
            let _ = writeln!(
                text,
                "  adopted: GPU instance {} ({}) at {}+{}, not in the layout, kept",
                adopted.gpu_instance_id,
                adopted.profile,
                adopted.placement.start,
                adopted.placement.size
            );
        }
    }
    for reset in &report.resets {
        let group = reset
            .group
            .as_ref()
            .map(|group| {
                let named: Vec<String> = group.iter().map(|index| format!("GPU {index}")).collect();
                format!(" (group {})", named.join(", "))
            })
            .unwrap_or_default();
        let _ = writeln!(text, "reset: {} {}{group}", reset.target, reset.outcome);
    }
    for hook in &report.hooks {
        let _ = writeln!(text, "hook: {hook}");
    }
    for warning in &report.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    let _ = writeln!(text, "outcome: {}", report.outcome);
    if let Some(detail) = &report.detail {
        let _ = writeln!(text, "detail:  {detail}");
    }
    if let Some(host) = &report.host {
        let _ = writeln!(text, "host:    {} ({})", host.status, host.reason);
        if let Some(message) = &host.message {
            let _ = writeln!(text, "why:     {message}");
        }
    }
    let _ = writeln!(text, "writes:  {}", report.writes());
    let _ = writeln!(text, "elapsed: {:.1} s", report.elapsed.as_secs_f64());
    // What the run says last is derived from how it ended and the host after it: never that
    // the layout holds while the host says it does not.
    let _ = writeln!(text, "{}", report.conclusion());
    text
}
