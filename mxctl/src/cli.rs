//! The command line: global options and commands.

use clap::{ArgAction, Args, Parser, Subcommand};
use gpu_partition_types::Bdf;
use std::path::PathBuf;

mod reset;
mod spelling;
mod write;

pub use crate::config::Switch;
pub use reset::*;
pub use spelling::layout_spelling;
pub use write::*;

/// Manage GPU hosts: their GPU partitioning and its status, and warm resets of their GPUs.
///
/// Partitioning: `partition` applies NVIDIA MIG layouts (mig-parted's files), `vgpu` NVIDIA
/// vGPU configs (vgpu-device-manager's), `amd` AMD Instinct compute and memory partitions (ROCm
/// Device Config Manager profiles); each is kept as the host's declaration, compared by every
/// sync and restored at boot. `gpus` lists the GPUs; `sync` reads NVIDIA GPUs through the
/// partition helper (`reply check` decodes its replies) and AMD GPUs from amdgpu's sysfs files.
///
/// Warm resets (`reset --method`): MetaX GPUs through mx-smi, NVIDIA GPUs through nvidia-smi
/// with their NVLink peers, AMD Instinct GPUs through amd-smi with their XGMI hive, and any PCI
/// function (of any vendor, bound to a stub driver such as vfio-pci, or to none) through the
/// kernel's sysfs reset.
// The one-line `about` is the package's description (Cargo.toml); this comment is the long one.
#[derive(Debug, Parser)]
#[command(name = "mxctl", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options that every command takes, before or after the command's name.
#[derive(Debug, Args)]
pub struct Global {
    /// Config file [default: /etc/mxctl.conf when it exists]. After `partition apply` or
    /// `partition assert`, `--config` names the layout: give this one before `partition` there.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// State directory [default: /var/lib/mxctl as root, else the user's state directory].
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Root of sysfs.
    #[arg(long, global = true, value_name = "DIR", default_value = "/sys")]
    pub sysfs_root: PathBuf,
    /// Root of procfs.
    #[arg(long, global = true, value_name = "DIR", default_value = "/proc")]
    pub proc_root: PathBuf,
    /// The directory of the machine's GPU locks and its record of writes to the cards
    /// [default: /run/gpu-host-probe as root; beside a --sysfs-root tree]. On the machine's own
    /// sysfs it must be the machine's (the default, by any path): another is refused.
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        conflicts_with = "machine_lock_dir"
    )]
    pub lock_dir: Option<PathBuf>,
    /// The machine's own directory of GPU locks seen at another path, taken as it is named:
    /// the host's /run/gpu-host-probe mounted into a container whose /run is not the host's.
    /// Every process in there that uses the GPUs must name it so.
    #[arg(long, global = true, value_name = "DIR")]
    pub machine_lock_dir: Option<PathBuf>,
    /// Print exactly one JSON document on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Log debug messages.
    #[arg(short, long, global = true, action = ArgAction::SetTrue, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Log errors only.
    #[arg(short, long, global = true, action = ArgAction::SetTrue)]
    pub quiet: bool,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the GPU PCI functions of this host (display class, and AMD's processing
    /// accelerators), with an AMD Instinct GPU's partitions and partition mode.
    Gpus,
    /// Run the host sync: classify the host and keep each GPU's partition mode (NVIDIA GPUs
    /// read through the helper, AMD GPUs from amdgpu's sysfs files).
    #[command(
        after_long_help = "A GPU's partition mode: not_supported, disabled, enable_on_reboot, \
enabled, disable_on_reboot (on an AMD GPU: a memory partition requested by mxctl and waiting \
for a driver reload, which divides it or leaves it undivided), unknown, not_checked, not_in_use, \
possibly_enabled. Its reason, when it has one: why a read failed (the helper's: helper_absent, \
helper_not_executable, helper_unsafe, timeout, crash, undecodable, busy, incompatible, \
helper:<kind>, cancelled; an AMD GPU's: amdgpu_in_reset, amdgpu_no_mode, amdgpu_unreadable), \
read_interrupted, or why it is not read (not_nvidia: a vendor whose GPUs are not read, no_driver, \
driver_<name>)."
    )]
    Sync(Sync),
    /// Print the stored state (`not_reported` when no sync ever ran).
    Status,
    /// Read NVIDIA GPUs through the partition helper, several at once (writes nothing).
    Probe(Probe),
    /// Work with GPU partition helper replies.
    #[command(subcommand)]
    Reply(ReplyCommand),
    /// Warm-reset GPUs on this host by the method given (MetaX, NVIDIA, AMD Instinct, or any
    /// PCI function), or plan and step a reset across hosts.
    Reset(Box<Reset>),
    /// Enter and leave GPU partitioning: apply a MIG layout (mig-parted's v1 files) by diff,
    /// assert it, export the host's, leave.
    #[command(
        subcommand,
        after_long_help = "Reasons an apply, a leave or a restore is blocked or failed with \
(the report's reason): lock_busy, pool_disabled, helper_unavailable, gpu_unreadable, gpu_busy, \
layout_impossible, hook_failed (a pre-apply hook failed: nothing was written), card_changed \
(another model is in a declared slot: nothing was written), step_refused, reset_blocked, \
mode_pending, did_not_converge, read_back_differs, cancelled. An apply whose layout names no \
GPU of the host ends nothing_named (exit 0).\n\n\
An apply or a leave that wrote, or whose layout holds, declares what the host is to be. While \
the cards differ from it, every sync with the pool on says entering (layout_drifted), naming \
each difference; `partition restore` brings the cards back, and mxctl-restore.service does so \
once per boot (--at-boot: a second in the same boot does nothing), before \
mxctl-layout.target, which a GPU client's unit orders itself after. Any write of mxctl's to a \
card (an apply, a reset) ends what the last sync found, until one reads the cards again; \
mxctl-sync.timer reads them every sync-interval. A host whose stored state did not read says \
state_lost, and its boot restore fails. The labels layout-state and layout-checked and the \
metrics mxctl_layout_declared{label,state}, mxctl_layout_checked_timestamp_seconds and \
mxctl_layout_drift{kind} say whether the cards hold it, and since when."
    )]
    Partition(PartitionCommand),
    /// vGPU hosts: NVIDIA vgpu-device-manager configs applied in the order the driver forces
    /// (MIG mode, sriov-manage -e, the GPU instances, a vGPU type on each virtual function),
    /// kept as the host's declaration and restored at boot; the options, exit codes and --json
    /// of `partition`.
    #[command(subcommand)]
    Vgpu(VgpuCommand),
    /// AMD Instinct partitions: ROCm Device Config Manager profiles (compute SPX, DPX, QPX or
    /// CPX, memory NPS1, NPS2 or NPS4, as DCM takes them) applied by diff — the memory
    /// partitions requested, one amdgpu reload for the host, then the compute partitions —,
    /// kept as the host's declaration, compared by every sync and restored at boot; the
    /// options, exit codes and --json of `partition`.
    #[command(
        subcommand,
        after_long_help = "Refused before any write: a mode a GPU does not offer (its \
available_compute_partition and available_memory_partition) or a pair the kernel refuses, as \
SPX with NPS4 (layout_impossible); a hive asked for two memory partitions or with a member the \
profile leaves out (layout_impossible); a process holding a GPU's render node or /dev/kfd, or \
a client service running (gpu_busy, naming it); a GPU whose files do not read \
(gpu_unreadable). A memory partition requested waits for the driver reload: until it lands, \
the GPU's partition mode says enable_on_reboot or disable_on_reboot (mxctl's own record: the \
kernel shows no pending request). The compute partition never survives a driver reload or a \
reboot (the driver sets it anew), so the boot restore sets it again. The client services are \
the config's amd-client-services and the file's gpuClientSystemdServices; the driver is \
reloaded by the config's modprobe."
    )]
    Amd(AmdCommand),
    /// Print the stored state and the last warm reset as Prometheus metrics (text format
    /// 0.0.4, as node_exporter's textfile collector reads it); writes nothing else.
    Metrics(Metrics),
    /// Print the stored state as node labels: a node-feature-discovery local feature file
    /// (`--output` writes it whole, for nfd-worker's `features.d`).
    #[command(
        after_long_help = "Labels, each under mxctl.feature.node.kubernetes.io/: status, \
reason, gpu-<address>.mode (an NVIDIA or AMD GPU's partition mode; the address with dashes for colons, as gpu-0000-3b-00.0.mode), layout (the declared layout's \
label), layout-state (holds, drifted or unknown: whether the cards hold it, judged now — never \
holds unless a sync of this boot read every declared card, found it so, and nothing of mxctl's \
wrote to them since), layout-checked (when the cards were last read, in Unix seconds), \
layout-generation (how many times the declaration changed), layout-outcome (how the last \
apply ended)."
    )]
    Labels(Labels),
    /// Write the man pages and the shell completions into a directory (for packaging).
    #[command(hide = true)]
    Generate(Generate),
    /// Say whether root may trust these files and programs (for packaging and support).
    #[command(hide = true)]
    CheckTrust(CheckTrust),
    /// The systemd generator (installed as /usr/lib/systemd/system-generators/mxctl-generator):
    /// writes the sync timer's interval from the config's `sync-interval` into DIR.
    #[command(hide = true)]
    SystemdGenerator(SystemdGenerator),
}

/// `mxctl systemd-generator NORMAL_DIR [EARLY_DIR LATE_DIR]`
#[derive(Debug, Args)]
pub struct SystemdGenerator {
    /// The generator's output directory for units (systemd gives three; the first is used).
    #[arg(value_name = "DIR", required = true, num_args = 1..=3)]
    pub dirs: Vec<PathBuf>,
}

/// `mxctl check-trust PATH…`
#[derive(Debug, Args)]
pub struct CheckTrust {
    /// The files or programs.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
}

/// `mxctl metrics [--output FILE]`
#[derive(Debug, Args)]
pub struct Metrics {
    /// Write the metrics to FILE atomically (a temporary file beside it, then a rename), so a
    /// collector never reads half a file; readable by everyone (mode 0644).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `mxctl labels [--output FILE] [--expiry SECS]`
#[derive(Debug, Args)]
pub struct Labels {
    /// Write the feature file to FILE whole (a dot-file beside it, which nfd-worker skips, then
    /// a rename), readable by everyone (mode 0644), e.g.
    /// /etc/kubernetes/node-feature-discovery/features.d/mxctl.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Seconds until nfd-worker drops the labels if no later sync rewrites them (an
    /// `# +expiry-time=` line).
    #[arg(long, value_name = "SECS", default_value = "3600", value_parser = parse_expiry)]
    pub expiry: std::time::Duration,
}

fn parse_expiry(text: &str) -> Result<std::time::Duration, String> {
    crate::config::seconds("--expiry", text)
}

/// `mxctl generate --out-dir DIR`
#[derive(Debug, Args)]
pub struct Generate {
    /// Where to write `man/` and `completions/`.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
}

/// Where the helper is and how long it may take.
#[derive(Debug, Args)]
pub struct HelperArgs {
    /// The helper program [default: from the config, /opt/xensource/libexec/gpu-partition-helper].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub helper: Option<PathBuf>,
    /// Seconds one helper run may take [default: from the config, 5].
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub deadline: Option<std::time::Duration>,
}

/// `mxctl sync [--pool enabled|disabled] [--after-boot auto|yes|no] [--helper] [--deadline]`
#[derive(Debug, Args)]
pub struct Sync {
    /// The pool switch for this run only [default: from the config, disabled].
    #[arg(long, value_enum, value_name = "SWITCH")]
    pub pool: Option<Switch>,
    /// Whether this is the first start after a boot; `auto` compares the kernel's boot id with
    /// the stored one.
    #[arg(long, value_enum, default_value = "auto")]
    pub after_boot: AfterBootArg,
    #[command(flatten)]
    pub lock: LockWaitArgs,
    #[command(flatten)]
    pub helper: HelperArgs,
}

fn parse_window(text: &str) -> Result<std::time::Duration, String> {
    crate::config::seconds("--window", text)
}

/// `--lock-wait`: how long a command that reads or declares waits for the host lock.
#[derive(Debug, Args)]
pub struct LockWaitArgs {
    /// Seconds to wait for the host lock while another GPU operation (a reset, an apply, a
    /// sync) holds it, then say lock_busy [default: 10].
    #[arg(long, value_name = "SECS", value_parser = parse_lock_wait)]
    pub lock_wait: Option<std::time::Duration>,
}

impl LockWaitArgs {
    /// The wait asked for, else [`gpu_host_probe::DEFAULT_LOCK_WAIT`].
    pub fn wait(&self) -> std::time::Duration {
        self.lock_wait.unwrap_or(gpu_host_probe::DEFAULT_LOCK_WAIT)
    }
}

fn parse_lock_wait(text: &str) -> Result<std::time::Duration, String> {
    crate::config::seconds("--lock-wait", text)
}

/// A program given on the command line: a relative path is the operator's, from the directory
/// mxctl was started in, made absolute here (the runner never runs a relative path); a bare
/// name stays a name, looked up in the runner's `PATH`.
fn program_path(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    if !gpu_host_probe::run::is_relative_path(&path) {
        return Ok(path);
    }
    std::path::absolute(&path).map_err(|error| format!("cannot make {text:?} absolute: {error}"))
}

/// `--after-boot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AfterBootArg {
    /// Compare the kernel's boot id with the stored one.
    Auto,
    /// The first start after a boot.
    Yes,
    /// A later start in the same boot.
    No,
}

/// `mxctl probe [--device BDF]… [--helper PATH] [--deadline SECS]`
#[derive(Debug, Args)]
pub struct Probe {
    /// A card to read (dddd:bb:dd.f), not looked up in sysfs; repeat for several [default:
    /// every NVIDIA GPU bound to `nvidia`].
    #[arg(long = "device", value_name = "BDF")]
    pub devices: Vec<Bdf>,
    #[command(flatten)]
    pub lock: LockWaitArgs,
    #[command(flatten)]
    pub helper: HelperArgs,
}

fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    crate::config::seconds("--deadline", text)
}

/// `mxctl reply …`
#[derive(Debug, Subcommand)]
pub enum ReplyCommand {
    /// Decode a helper reply exactly as the probe would, and say what it gives and loses.
    Check(ReplyCheck),
}

/// `mxctl reply check [FILE|-] [--device BDF]`
#[derive(Debug, Args)]
pub struct ReplyCheck {
    /// The reply (one or more pages); `-` or nothing reads standard input.
    #[arg(value_name = "FILE|-")]
    pub file: Option<PathBuf>,
    /// The device the reply must be for (dddd:bb:dd.f).
    #[arg(long, value_name = "BDF")]
    pub device: Option<Bdf>,
}
