//! `mxctl partition apply`, `leave` and `restore`: a layout applied by diff under the host lock
//! (`mig_layout::apply`, `mig_layout::restore`), its plan per GPU, then what was done.

use super::{layout, layout_failure, pool, reset_backend};
use crate::cli::{PartitionApply, PartitionLeave, PartitionRestore, WriteArgs};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use gpu_host_probe::amdgpu::{Modprobe, PartitionWrites};
use host_sync::FileStore;
use host_sync::fake_amdgpu::FakeAmdgpuFile;
use mig_layout::amd::{AmdWith, DcmProfile};
use mig_layout::vgpu::{SriovManage, VgpuSpec, VgpuWith};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyReport, ApplyRun, GpuWork, Progress, ResetWith, Restore, Spec,
    Unnamed,
};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::Path;
use std::time::Instant;
use warm_reset::Method;

/// `partition apply`.
pub fn run(
    args: &PartitionApply,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let specs = layout(&args.layout)?;
    write(
        What::Layout(&specs, &args.layout.select),
        &args.write,
        Tools::default(),
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
) -> Result<Exit, Failure> {
    write(
        What::Leave(Leaving::Mig),
        &args.write,
        Tools::default(),
        config,
        host,
        output,
        false,
    )
}

/// What to write: a layout, a vGPU config, a vGPU leave, a Device Config Manager profile, or
/// the host's declaration.
pub enum What<'a> {
    /// An AMD Device Config Manager profile and its name.
    Amd(&'a DcmProfile, &'a str),
    /// A MIG layout's specs and label.
    Layout(&'a [Spec], &'a str),
    /// A vGPU config's specs and name.
    Vgpu(&'a [VgpuSpec], &'a str),
    /// Partitioning left, as the layout of which kind leaves it.
    Leave(Leaving),
    /// What the host is declared to be.
    Declared,
    /// One partition created.
    Create(mig_layout::partition::CreatePartition),
    /// One partition destroyed.
    Destroy(mig_layout::partition::DestroyPartition),
}

/// Which partitioning a leave leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaving {
    /// MIG, on every NVIDIA GPU.
    Mig,
    /// vGPU (its VFs, then MIG), on every NVIDIA GPU.
    Vgpu,
    /// AMD partitions, on every AMD GPU.
    Amd,
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
) -> Result<Exit, Failure> {
    restore_with(
        &args.write,
        Tools::default(),
        args.at_boot,
        config,
        host,
        output,
    )
}

/// The programs a write runs beyond the config's, and a simulation: each `None` (or empty)
/// takes the config's (or the real kernel).
#[derive(Debug, Default)]
pub struct Tools<'a> {
    /// NVIDIA's `sriov-manage`.
    pub sriov_manage: Option<&'a Path>,
    /// The `modprobe` that reloads amdgpu.
    pub modprobe: Option<&'a Path>,
    /// A simulated amdgpu kept in this file (`--simulate`), written instead of the kernel.
    pub amdgpu_sim: Option<&'a Path>,
    /// The AMD GPUs' client services a Device Config Manager file names (the config's too).
    pub amd_services: Vec<String>,
}

/// A restore (`partition restore`, `vgpu restore`, `amd restore`), with the tools given.
pub fn restore_with(
    args: &WriteArgs,
    tools: Tools<'_>,
    at_boot: bool,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    if at_boot && !config.restore_at_boot {
        let why = "restore-at-boot is disabled in the config: the declared layout is not restored";
        tracing::info!("{why}");
        return not_restored(why, "restore_disabled", Exit::Done, output);
    }
    write(What::Declared, args, tools, config, host, output, at_boot)
}

/// Writes `what` as `args` say, through the `tools` given (else the config's).
pub fn write(
    what: What<'_>,
    args: &WriteArgs,
    tools: Tools<'_>,
    config: &Config,
    host: &Host,
    output: Output,
    at_boot: bool,
) -> Result<Exit, Failure> {
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
            crate::output::progress(&format!(
                "{:>7.1}s  {}  {}",
                started.elapsed().as_secs_f64(),
                progress.device(),
                progress
            ));
        }
    };
    let vgpu = VgpuWith {
        sriov_manage: SriovManage {
            program: tools.sriov_manage.map_or_else(
                || config.sriov_manage.clone(),
                |path| config.sriov_manage.at(path),
            ),
            ..SriovManage::default()
        },
        ..VgpuWith::default()
    };
    let simulated = match tools.amdgpu_sim {
        Some(_) if host.sysfs_root() == Path::new("/sys") => {
            return Err(Failure::Usage(
                "--simulate shows the simulated amdgpu's GPUs under --sysfs-root: give a tree \
                 of its own, not /sys"
                    .to_owned(),
            ));
        }
        Some(file) => Some(FakeAmdgpuFile::new(file, host.sysfs_root())),
        None => None,
    };
    let mut client_services = config.amd_client_services.clone();
    for service in tools.amd_services {
        if !client_services.contains(&service) {
            client_services.push(service);
        }
    }
    let amd = AmdWith {
        modprobe: Modprobe {
            program: tools
                .modprobe
                .map_or_else(|| config.modprobe.clone(), |path| config.modprobe.at(path)),
            ..Modprobe::default()
        },
        writes: simulated.as_ref().map(|file| file as &dyn PartitionWrites),
        client_services,
        ..AmdWith::default()
    };
    let run = ApplyRun::new(host, &helper, &mut store, reset)
        .observe(&mut show)
        .vgpu(vgpu)
        .amd(amd);
    let options = ApplyOptions::new(pool(args.pool, config))
        .devices(args.devices.clone())
        .dry_run(args.dry_run)
        .lock_wait(args.lock_wait.unwrap_or_default())
        .hooks(config.hooks.clone())
        .once_per_boot(at_boot);
    let options = args
        .release
        .iter()
        .cloned()
        .fold(options, ApplyOptions::release);
    match what {
        What::Layout(specs, label) => {
            let options =
                options.unnamed(args.unnamed_instances.map_or(config.unnamed, Unnamed::from));
            let report = mig_layout::apply(run, label, specs, &options).map_err(layout_failure)?;
            output.emit(&report, &text(&report))?;
            Ok(Exit::of_apply(report.outcome))
        }
        What::Vgpu(specs, label) => {
            let options =
                options.unnamed(args.unnamed_instances.map_or(config.unnamed, Unnamed::from));
            let report = mig_layout::vgpu::apply_vgpu(run, label, specs, &options)
                .map_err(layout_failure)?;
            output.emit(&report, &text(&report))?;
            Ok(Exit::of_apply(report.outcome))
        }
        What::Amd(profile, label) => {
            let report = mig_layout::amd::apply_amd(run, label, profile, &options)
                .map_err(layout_failure)?;
            output.emit(&report, &text(&report))?;
            Ok(Exit::of_apply(report.outcome))
        }
        What::Leave(leaving) => {
            // The instances a layout does not name are treated as for any layout: MIG off
            // destroys them only where the options say so.
            let options =
                options.unnamed(args.unnamed_instances.map_or(config.unnamed, Unnamed::from));
            let report = match leaving {
                Leaving::Mig => mig_layout::leave(run, &options),
                Leaving::Vgpu => mig_layout::vgpu::leave_vgpu(run, &options),
                Leaving::Amd => mig_layout::amd::leave_amd(run, &options),
            }
            .map_err(layout_failure)?;
            output.emit(&report, &text(&report))?;
            Ok(Exit::of_apply(report.outcome))
        }
        What::Create(request) => {
            let done =
                mig_layout::partition::create(run, &request, &options).map_err(layout_failure)?;
            super::one::emit(done, output)
        }
        What::Destroy(request) => {
            let done =
                mig_layout::partition::destroy(run, &request, &options).map_err(layout_failure)?;
            super::one::emit(done, output)
        }
        What::Declared => {
            let options = match args.unnamed_instances {
                Some(unnamed) => options.unnamed(unnamed.into()),
                None => options,
            };
            let restored = mig_layout::restore(run, &options).map_err(layout_failure)?;
            restored_document(restored, at_boot, output)
        }
    }
}

/// A restore's one document: the report's members (as `partition apply` prints them) with
/// `restored` (whether it ran) and `why` (why not; `null` when it ran) — a restore that did not
/// run gives the same members, empty, its `outcome` `nothing_declared` or
/// `already_ran_this_boot` and its `detail` the why.
fn restored_document(restored: Restore, at_boot: bool, output: Output) -> Result<Exit, Failure> {
    let (why, outcome, exit) = match restored {
        Restore::Ran(report) => {
            let mut document = json(&*report)?;
            if let Some(members) = document.as_object_mut() {
                members.insert("restored".to_owned(), serde_json::Value::Bool(true));
                members.insert("why".to_owned(), serde_json::Value::Null);
            }
            output.emit(&document, &text(&report))?;
            return Ok(Exit::of_apply(report.outcome));
        }
        Restore::StateLost(lost) => return Err(Failure::StateLost(lost)),
        Restore::NothingDeclared => (
            "nothing is declared on this host: no partition apply or leave has written, so \
             there is nothing to restore"
                .to_owned(),
            "nothing_declared",
            if at_boot { Exit::Done } else { Exit::Blocked },
        ),
        Restore::AlreadyRanThisBoot(earlier) => (
            format!(
                "a boot restore already ran in this boot (at {} Unix time): nothing was done",
                earlier.at
            ),
            "already_ran_this_boot",
            Exit::Done,
        ),
    };
    not_restored(&why, outcome, exit, output)
}

/// The document of a restore that did not run: the report's members, empty, its `outcome`
/// saying why (`restore_disabled`, `nothing_declared`, `already_ran_this_boot`), its
/// `conclusion` that nothing was changed.
fn not_restored(why: &str, outcome: &str, exit: Exit, output: Output) -> Result<Exit, Failure> {
    let document = serde_json::json!({
        "restored": false, "why": why, "label": null, "outcome": outcome, "reason": null,
        "detail": why, "impossible": null, "gpus": [], "resets": [], "reload_planned": false,
        "driver_reloads": 0, "host": null, "hooks": [],
        "warnings": [], "elapsed_ms": 0,
        "conclusion": mig_layout::Conclusion::NothingChanged.as_str(),
    });
    output.emit(&document, &format!("{why}\n"))?;
    Ok(exit)
}

/// Writes each of `items` on a line of its own under its GPU, after `what`.
fn lines<T: std::fmt::Display>(text: &mut String, what: &str, items: &[T]) {
    for item in items {
        let _ = writeln!(text, "  {what}{item}");
    }
}

/// `value` as JSON; a value that does not serialize fails the output, never prints `null`.
pub fn json(value: &impl serde::Serialize) -> Result<serde_json::Value, Failure> {
    serde_json::to_value(value).map_err(|error| Failure::Output {
        source: std::io::Error::other(error),
    })
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
        if gpu.work.is_empty() {
            // Only a GPU that was planned, or read back, is said to be as the layout wants: a
            // blocked apply may have stopped before its plan.
            let said = match (report.outcome, gpu.outcome) {
                (ApplyOutcome::Blocked(_), _) => Some("not written: the apply was blocked"),
                (ApplyOutcome::DryRun, _) | (_, Some(ApplyOutcome::Done)) => {
                    Some("as the layout wants: no step")
                }
                _ => None,
            };
            if let Some(said) = said {
                let _ = writeln!(text, "  {said}");
            }
        }
        match &gpu.work {
            GpuWork::Nvidia(work) => {
                lines(&mut text, "plan: ", &work.plan);
                lines(&mut text, "vgpu plan: ", &work.vgpu_plan);
                lines(&mut text, "", &work.steps);
                lines(&mut text, "vgpu done: ", &work.vgpu_done);
            }
            GpuWork::Amd(work) => {
                lines(&mut text, "amd plan: ", &work.plan);
                lines(&mut text, "amd done: ", &work.done);
            }
        }
        for difference in &gpu.differences {
            let _ = writeln!(
                text,
                "  differs ({}): {}",
                difference.kind(),
                difference.message()
            );
        }
        if let GpuWork::Nvidia(work) = &gpu.work {
            for adopted in &work.adopted {
                let _ = writeln!(text, "  adopted: {adopted}, not in the layout, kept");
            }
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
    if report.reload_planned {
        let _ = writeln!(
            text,
            "amd plan: reload the amdgpu driver once, for every AMD GPU of the host ({} run)",
            report.reloads
        );
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
        if let Some(declared) = host.declared {
            let _ = writeln!(text, "declared: {declared}");
        }
    }
    let _ = writeln!(text, "writes:  {}", report.writes());
    let _ = writeln!(text, "elapsed: {:.1} s", report.elapsed.as_secs_f64());
    // What the run says last is derived from how it ended and the host after it: never that
    // the layout holds while the host says it does not.
    let _ = writeln!(text, "{}", report.conclusion());
    text
}
