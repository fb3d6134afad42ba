//! The warm reset's command line: `reset`, its backends and methods, and a multi-host plan's
//! `reset plan|step`.

use super::{parse_window, program_path};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use warm_reset::ResetTarget;

/// `mxctl reset --device ID|all …`
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Reset {
    #[command(subcommand)]
    pub command: Option<ResetCommand>,
    /// What to reset: for metax a node ID (GPU#N of mx-smi -L), a PCI address, a UUID or
    /// `all`; for nvidia an index, a bus ID, a UUID, several separated by commas, or `all`;
    /// for pci a PCI address; for amd a PCI address, an amd-smi GPU ID or UUID (of amd-smi
    /// list), several separated by commas, or `all` (the kernel resets each GPU's XGMI hive
    /// with it).
    #[arg(long, value_name = "ID|all")]
    pub device: Option<ResetTarget>,
    /// Run the preflight and say what would be reset; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Run against a simulated host of the method instead of the real one (--simulate help
    /// lists the method's scenarios).
    #[arg(long, value_name = "SCENARIO", value_parser = parse_simulate)]
    pub simulate: Option<Simulate>,
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// `--simulate`: the word `help`, or a scenario of the method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Simulate {
    /// `help`: list the method's scenarios, reset nothing.
    List,
    /// Run this scenario (a name the method does not know is refused with the list).
    Scenario(String),
}

fn parse_simulate(text: &str) -> Result<Simulate, String> {
    Ok(match text {
        "help" => Simulate::List,
        scenario => Simulate::Scenario(scenario.to_owned()),
    })
}

/// How a device is reset, where its tools and the kernel log are, and how long a reset may
/// take.
#[derive(Debug, Args)]
pub struct BackendArgs {
    /// The reset method: metax (mx-smi), nvidia (nvidia-smi --gpu-reset), pci (the kernel's
    /// sysfs reset of one PCI function), amd (amd-smi reset --gpureset, the XGMI hive
    /// together).
    #[arg(long, value_enum, default_value = "metax")]
    pub method: MethodArg,
    /// The mx-smi program [default: from the config, else the usual places].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub mx_smi: Option<PathBuf>,
    /// The nvidia-smi program [default: from the config, else /usr/bin/nvidia-smi, else PATH].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub nvidia_smi: Option<PathBuf>,
    /// The amd-smi program [default: from the config, else /opt/rocm/bin/amd-smi, else
    /// /usr/bin/amd-smi, else PATH].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub amd_smi: Option<PathBuf>,
    /// The kernel log [default: from the config, /dev/kmsg].
    #[arg(long, value_name = "PATH")]
    pub kmsg: Option<PathBuf>,
    /// Seconds the reset and its verification may take [default: from the config, 90].
    #[arg(long, value_name = "SECS", value_parser = parse_window)]
    pub window: Option<std::time::Duration>,
}

/// `--method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// MetaX GPUs through mx-smi.
    Metax,
    /// NVIDIA GPUs through nvidia-smi, with their NVLink peers.
    Nvidia,
    /// One PCI function through the kernel's sysfs reset.
    Pci,
    /// AMD Instinct GPUs through amd-smi, with every GPU of their XGMI hive.
    Amd,
}

impl From<MethodArg> for warm_reset::Method {
    fn from(method: MethodArg) -> Self {
        match method {
            MethodArg::Metax => Self::Metax,
            MethodArg::Nvidia => Self::Nvidia,
            MethodArg::Pci => Self::Pci,
            MethodArg::Amd => Self::Amd,
        }
    }
}

/// `mxctl reset plan|step`
#[derive(Debug, Subcommand)]
pub enum ResetCommand {
    /// Print the plan of a reset across the hosts of an interconnect group (JSON).
    Plan(PlanArgs),
    /// Run this host's share of one phase of a plan (idempotent).
    Step(StepArgs),
}

/// `mxctl reset plan --group FILE --faulty HOST [--strategy all-hosts|faulty-only]`
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The group file (JSON: hosts with their node IDs, links between hosts).
    #[arg(long, value_name = "FILE")]
    pub group: PathBuf,
    /// The host with the faulty GPU.
    #[arg(long, value_name = "HOST")]
    pub faulty: String,
    /// Reset every host of the group, or only the faulty one.
    #[arg(long, value_enum, default_value = "all-hosts")]
    pub strategy: StrategyArg,
}

/// `--strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StrategyArg {
    /// Every host of the group resets (more reliable).
    AllHosts,
    /// Only the faulty host resets; the others drop their cross-host links.
    FaultyOnly,
}

/// `mxctl reset step --plan FILE --host NAME --phase N`
#[derive(Debug, Args)]
pub struct StepArgs {
    /// The plan file `reset plan` printed.
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
    /// This host's name in the plan.
    #[arg(long, value_name = "NAME")]
    pub host: String,
    /// The phase's 0-based index.
    #[arg(long, value_name = "N")]
    pub phase: usize,
    #[command(flatten)]
    pub backend: BackendArgs,
}
