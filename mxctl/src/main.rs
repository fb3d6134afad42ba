//! `mxctl`: the reference binary that composes the GPU host-management libraries.
//!
//! Every command exits through the one table of codes in `exit.rs` (the man page's exit
//! status). Errors never print a panic or a backtrace; with `--json` a failure also prints
//! `{"error": {"kind": …, "message": …}}` on stdout.

mod cli;
mod commands;
mod config;
mod exit;
mod failure;
mod helper;
mod output;
mod paths;

use clap::Parser;
use cli::{AmdCommand, Cli, Command, PartitionCommand, ReplyCommand, ResetCommand, VgpuCommand};
use config::Config;
use exit::Exit;
use failure::Failure;
use gpu_host_probe::Host;
use output::Output;
use std::io::IsTerminal;
use std::process::ExitCode;
use tracing::level_filters::LevelFilter;

fn main() -> ExitCode {
    // A bug must still end in one line, never a backtrace.
    std::panic::set_hook(Box::new(|info| {
        output::stderr(&format!("mxctl: internal error: {info}\n"));
    }));
    let cli = match Cli::try_parse_from(cli::layout_spelling(std::env::args_os())) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    init_logging(&cli.global);
    let output = Output {
        json: cli.global.json,
    };
    let exit = match run(&cli, output) {
        Ok(exit) => exit,
        Err(failure) => {
            output.fail(&failure);
            failure.exit()
        }
    };
    ExitCode::from(exit.code())
}

fn run(cli: &Cli, output: Output) -> Result<Exit, Failure> {
    let config = Config::load(cli.global.config.as_deref())?;
    config.log();
    let state_dir = cli
        .global
        .state_dir
        .clone()
        .unwrap_or_else(paths::default_state_dir);
    tracing::debug!(
        "state-dir = {}, sysfs-root = {}, proc-root = {}",
        state_dir.display(),
        cli.global.sysfs_root.display(),
        cli.global.proc_root.display()
    );
    // Anything that reads or writes the state checks its directory first: a directory another
    // user can change is refused before anything is written (the commands that write create
    // it, mode 0700).
    let creates = matches!(
        cli.command,
        Command::Sync(_)
            | Command::Probe(_)
            | Command::Reset(_)
            | Command::Vgpu(_)
            | Command::Amd(_)
    ) || matches!(&cli.command, Command::Partition(command) if !matches!(command, PartitionCommand::List(_)));
    let mut host = Host::new(state_dir)
        .with_sysfs_root(&cli.global.sysfs_root)
        .with_proc_root(&cli.global.proc_root);
    if let Some(dir) = &cli.global.lock_dir {
        host = host.with_lock_dir(dir);
        // A second directory of the machine's locks is refused before any command runs, not
        // only by the commands that take the lock: a status judged against another directory's
        // record of writes would be judged against the wrong one.
        host.lock_dir()?;
    }
    if let Some(dir) = &cli.global.machine_lock_dir {
        host = host.with_machine_lock_dir(dir);
    }
    if creates
        || matches!(
            cli.command,
            Command::Status
                | Command::Metrics(_)
                | Command::Labels(_)
                | Command::Partition(PartitionCommand::List(_))
        )
    {
        host.check_state_dir(creates)?;
    }
    match &cli.command {
        Command::Gpus => commands::gpus::run(&host, output),
        Command::Sync(args) => commands::sync::run(args, &config, &host, output),
        Command::Status => commands::state::run(&host, output),
        Command::Probe(args) => commands::probe::run(args, &config, &host, output),
        Command::Reply(ReplyCommand::Check(args)) => commands::reply_check::run(args, output),
        Command::Metrics(args) => commands::metrics::run(args, &host, output),
        Command::Labels(args) => commands::labels::run(args, &host, output),
        Command::Generate(args) => commands::generate::run(args),
        Command::CheckTrust(args) => commands::check_trust::run(args),
        Command::SystemdGenerator(args) => commands::systemd_generator::run(args, &config),
        Command::Partition(command) => match command {
            PartitionCommand::Apply(args) => {
                commands::partition::apply::run(args, &config, &host, output)
            }
            PartitionCommand::Leave(args) => {
                commands::partition::apply::leave(args, &config, &host, output)
            }
            PartitionCommand::Assert(args) => {
                commands::partition::assert::run(args, &config, &host, output)
            }
            PartitionCommand::Export(args) => {
                commands::partition::export::run(args, &config, &host, output)
            }
            PartitionCommand::Restore(args) => {
                commands::partition::apply::restore(args, &config, &host, output)
            }
            PartitionCommand::List(_) => commands::partition::list::run(&host, output),
            PartitionCommand::Own(args) => commands::partition::own::run(args, &host, output),
            PartitionCommand::Create(args) => {
                commands::partition::one::create(args, &config, &host, output)
            }
            PartitionCommand::Destroy(args) => {
                commands::partition::one::destroy(args, &config, &host, output)
            }
        },
        Command::Vgpu(command) => match command {
            VgpuCommand::Apply(args) => commands::vgpu::apply(args, &config, &host, output),
            VgpuCommand::Leave(args) => commands::vgpu::leave(args, &config, &host, output),
            VgpuCommand::Restore(args) => commands::vgpu::restore(args, &config, &host, output),
            VgpuCommand::Assert(args) => commands::vgpu::assert(args, &config, &host, output),
            VgpuCommand::Export(args) => commands::vgpu::export(args, &config, &host, output),
        },
        Command::Amd(command) => match command {
            AmdCommand::Apply(args) => commands::amd::apply(args, &config, &host, output),
            AmdCommand::Assert(args) => commands::amd::assert(args, &config, &host, output),
            AmdCommand::Leave(args) => commands::amd::leave(args, &config, &host, output),
            AmdCommand::Restore(args) => commands::amd::restore(args, &config, &host, output),
        },
        Command::Reset(args) => match &args.command {
            Some(ResetCommand::Plan(plan)) => commands::reset_plan::plan(plan, &config),
            Some(ResetCommand::Step(step)) => {
                commands::reset_plan::step(step, &config, &host, output)
            }
            None => commands::reset::run(args, &config, &host, output),
        },
    }
}

fn init_logging(global: &cli::Global) {
    let level = if global.verbose {
        LevelFilter::DEBUG
    } else if global.quiet {
        LevelFilter::ERROR
    } else {
        LevelFilter::INFO
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .without_time()
        .with_ansi(std::io::stderr().is_terminal())
        // A log line that cannot be written goes nowhere: the subscriber would say so on the
        // same stderr with `eprintln!`, which panics where the write failed (a closed pipe).
        .log_internal_errors(false)
        .init();
}
