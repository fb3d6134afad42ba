//! The partitioning commands' command line: `partition`, `vgpu` and `amd`, and what every
//! write takes (`WriteArgs`).

use super::{HelperArgs, LockWaitArgs, Switch, parse_lock_wait, parse_window, program_path};
use clap::{Args, Subcommand};
use gpu_partition_types::Bdf;
use std::path::PathBuf;

/// `mxctl partition …`
#[derive(Debug, Subcommand)]
pub enum PartitionCommand {
    /// Apply a layout: the plan per GPU, then what was done (exit 0 done or dry run, 1 failed,
    /// 3 blocked, 4 cold reboot).
    Apply(Box<PartitionApply>),
    /// Say whether a layout is applied: exit 0, or 1 with every difference.
    Assert(PartitionAssert),
    /// Print the host's layout as a mig-parted v1 document that apply takes back.
    Export(PartitionExport),
    /// Leave partitioning: every GPU's instances destroyed, MIG off, reset where pending.
    Leave(Box<PartitionLeave>),
    /// Bring the cards back to what the host is declared to be (the last apply or leave), by
    /// diff: zero steps when they hold it.
    Restore(Box<PartitionRestore>),
    /// Create one GPU instance (with the compute instance that fills it; with --vgpu, then the
    /// type on a VF) on the one --device, for an owner, at --placement or the lowest that fits,
    /// through the same executor as an apply, writing only that partition; the GPU's
    /// declaration gains it with its owner. A create that fails after it made its GPU instance
    /// takes the instance back (`undone` in --json) (exit 0 done or dry run, 1 failed, 3
    /// refused or blocked).
    Create(Box<PartitionCreate>),
    /// Destroy one GPU instance on the one --device, by --slot or as the one --owner has,
    /// writing only that partition; one created for an owner is destroyed only when --owner
    /// names that owner (exit 0 done or dry run, 1 failed, 3 refused or blocked).
    Destroy(Box<PartitionDestroy>),
    /// Declare who owns a GPU: host (ours: kept, restored, repaired), dynamic (an allocator
    /// such as the Kubernetes DRA driver's dynamic MIG divides it: read and reported, never
    /// written, restored or reset), external (another tool's: read only). Stored with the
    /// host's state; every write, restore and reset of mxctl leaves a GPU not ours alone, and
    /// one that names it is blocked (gpu_not_ours).
    Own(PartitionOwn),
    /// List every partition of the host's GPUs as the last sync read them (NVIDIA GPU
    /// instances, the vGPUs on their virtual functions, AMD compute partitions): slot,
    /// profile, placement, ordinal, recorded or inferred, each GPU's layout generation, and
    /// whether it waits for a reset. Rows a GPU may no longer hold are shown, marked stale
    /// with why and their age (writes nothing; exit 0).
    #[command(
        after_long_help = "A row's slot is the ID the vendor's tools name the partition by: an \
NVIDIA GPU instance's ID (GI), the virtual function of an NVIDIA vGPU (VF), an AMD compute \
partition's index. Its ordinal counts it among its profile's partitions on the GPU, from 0 in \
slot order. Its origin is recorded when the host's declaration names it, inferred when it was \
found and nothing names it.\n\n\
A GPU's generation starts at 1 with its first read and goes up by one at a read that finds its \
division changed: other partitions, or any after a write of mxctl's to the GPU, another boot, \
or a record of writes that cannot rule one out. A binding recorded at a generation holds only \
while the GPU still says it.\n\n\
Why rows are stale (because, in --json): never_read, not_read (a sync since did not read them; \
the first such read is kept, with why), earlier_boot, boot_untold, written_since (a write of \
mxctl's since: the next sync gives the next generation), writes_untold. requires-reset: a MIG \
mode change waiting for the GPU's reset, or an AMD memory partition waiting for a driver \
reload; unknown where the mode did not read."
    )]
    List(PartitionList),
}

/// `mxctl partition list`
#[derive(Debug, Args)]
pub struct PartitionList {}

/// `mxctl partition own --device BDF --as host|dynamic|external`
#[derive(Debug, Args)]
pub struct PartitionOwn {
    /// The GPU.
    #[arg(long, value_name = "BDF")]
    pub device: Bdf,
    /// Who owns it.
    #[arg(long = "as", value_name = "OWNERSHIP", value_parser = parse_ownership)]
    pub ownership: gpu_host_probe::Ownership,
    #[command(flatten)]
    pub lock: LockWaitArgs,
}

/// An ownership by its token.
fn parse_ownership(text: &str) -> Result<gpu_host_probe::Ownership, String> {
    use gpu_partition_types::Token;
    gpu_host_probe::Ownership::ALL
        .iter()
        .copied()
        .find(|ownership| ownership.as_str() == text)
        .ok_or_else(|| format!("{text:?} is not an ownership: host, dynamic or external"))
}

/// `mxctl partition create --device BDF (--profile PROFILE | --vgpu TYPE) --owner TOKEN`
#[derive(Debug, Args)]
#[command(after_long_help = PARTITION_REFUSALS)]
pub struct PartitionCreate {
    /// A GPU instance of this profile, by name (`1g.10gb`) or ID.
    #[arg(long, value_name = "PROFILE", value_parser = parse_profile,
          required_unless_present = "vgpu", conflicts_with = "vgpu")]
    pub profile: Option<layout_model::ProfileKey>,
    /// A MIG-backed vGPU of this type (`H100XM-1-10C`): a GPU instance of its profile made for
    /// it, then the type on the lowest free virtual function (the VFs enabled first where the
    /// card holds no GPU instance).
    #[arg(long, value_name = "TYPE")]
    pub vgpu: Option<mig_layout::vgpu::VgpuTypeName>,
    /// Where, as START+SIZE in memory slices (as `partition list` prints it) [default: the
    /// lowest placement of the profile that fits now].
    #[arg(long, value_name = "START+SIZE", value_parser = parse_placement)]
    pub placement: Option<gpu_partition_types::Placement>,
    /// Who it is for: a token of printable ASCII without spaces (a VM's UUID, a claim's name).
    #[arg(long, value_name = "TOKEN")]
    pub owner: layout_model::Owner,
    #[command(flatten)]
    pub write: WriteArgs,
    /// NVIDIA's sriov-manage, for a vGPU whose VFs are enabled for it [default: from the
    /// config, /usr/lib/nvidia/sriov-manage].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub sriov_manage: Option<PathBuf>,
}

/// `mxctl partition destroy --device BDF (--slot ID | --owner TOKEN)`
#[derive(Debug, Args)]
#[command(after_long_help = PARTITION_REFUSALS)]
pub struct PartitionDestroy {
    /// The GPU instance, by its ID (the slot `partition list` prints) [default: the one
    /// partition --owner has on the GPU].
    #[arg(long, value_name = "ID", required_unless_present = "owner")]
    pub slot: Option<u32>,
    /// Who asks: a partition created for an owner is destroyed only by that owner.
    #[arg(long, value_name = "TOKEN")]
    pub owner: Option<layout_model::Owner>,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// The refusals of `partition create` and `partition destroy`, for their man pages.
const PARTITION_REFUSALS: &str = "Refused before anything is written (exit 3; the reason token \
in --json): not_nvidia, mig_off (turn MIG on with a layout first), not_placed (the GPU is \
declared by counts only: restore it first), gpu_unreadable, no_sriov (a vGPU asked for on a GPU \
that offers no SR-IOV virtual functions), vfs_disabled (a vGPU \
asked for, the GPU's VFs disabled and GPU instances on the card: enabling the VFs would wipe them), no_vgpu_type, time_sliced \
(the type sits on no GPU instance), no_free_vf, vgpu_lands_elsewhere (a GPU instance of the \
type's profile is on the card already, so the driver could place the vGPU there, now or after a \
restore), profile_holds_vgpu (a vGPU partition's instance is of this profile: a second would let a \
restore place that vGPU on either), no_profile, does_not_fit (with the placement rule's refusal: not a placement of \
the profile, the placement taken, the profile's count or the card's media engines used up, the \
bounds unknown), no_room, no_instance, none_owned, several_owned (name the slot), \
partition_in_use (created for another owner: only its owner destroys it; the owner is named), \
inferred (found, not created through mxctl: never destroyed one at a time), card_differs (the \
card differs from its declaration, so more than the one partition would be written: restore \
it first); then the \
executor's, as an apply's (lock_busy, gpu_busy, partition_owned, hook_failed, …).";

/// A profile by name, or by ID when it is a number.
fn parse_profile(text: &str) -> Result<layout_model::ProfileKey, String> {
    if text.is_empty() {
        return Err("a profile is a name such as 1g.10gb, or an ID".to_owned());
    }
    Ok(match text.parse::<u32>() {
        Ok(id) => layout_model::ProfileKey::Id(id),
        Err(_) => layout_model::ProfileKey::Name(text.to_owned()),
    })
}

/// A placement as START+SIZE.
fn parse_placement(text: &str) -> Result<gpu_partition_types::Placement, String> {
    let parsed = text
        .split_once('+')
        .and_then(|(start, size)| Some((start.parse::<u32>().ok()?, size.parse::<u32>().ok()?)));
    match parsed {
        Some((start, size)) if size > 0 => Ok(gpu_partition_types::Placement::new(start, size)),
        _ => Err(format!(
            "{text:?} is not a placement: START+SIZE in memory slices, such as 4+2"
        )),
    }
}

/// `mxctl vgpu …`
#[derive(Debug, Subcommand)]
pub enum VgpuCommand {
    /// Apply a vgpu-device-manager config: the plan per GPU, then what was done (exit 0 done or
    /// dry run, 1 failed, 3 blocked, 4 cold reboot).
    Apply(Box<VgpuApply>),
    /// Leave vGPU: sriov-manage -d on every GPU first (its GPU instances go with the VFs),
    /// then what instances remain, then MIG off.
    Leave(Box<VgpuWrite>),
    /// Bring the cards back to what the host is declared to be, VFs and types included: the
    /// same as `partition restore` (one declaration per host).
    Restore(Box<VgpuRestore>),
    /// Say whether a config is applied: exit 0, or 1 with every difference.
    Assert(VgpuAssert),
    /// Print the host's vGPUs as a vgpu-device-manager config that `vgpu apply` takes back as
    /// zero writes (or, with --declared, what the host is declared to hold).
    Export(VgpuExport),
}

/// `mxctl vgpu export [--name NAME] [--declared]`
#[derive(Debug, Args)]
pub struct VgpuExport {
    /// The name of the exported config [default: current].
    #[arg(long, value_name = "NAME", conflicts_with = "declared")]
    pub name: Option<String>,
    /// Print what the host is declared to hold (each GPU by PCI address, under the declared
    /// label), read from the state, instead of what the cards and their VFs hold.
    #[arg(long)]
    pub declared: bool,
    #[command(flatten)]
    pub lock: LockWaitArgs,
    #[command(flatten)]
    pub helper: HelperArgs,
}

/// The vgpu-device-manager config file and the config in it.
#[derive(Debug, Args)]
pub struct VgpuConfigArgs {
    /// The config file: vgpu-device-manager's v1 (`version: v1`, `vgpu-configs`), YAML or
    /// JSON (`-` reads standard input).
    #[arg(short = 'f', long = "vgpu-config", value_name = "FILE")]
    pub file: PathBuf,
    /// The config's name in the file (vgpu-device-manager's `-c`).
    #[arg(short = 'c', long = "select", value_name = "NAME")]
    pub select: String,
}

/// How a vGPU config is written: as a layout is, and through which `sriov-manage`.
#[derive(Debug, Args)]
pub struct VgpuWrite {
    #[command(flatten)]
    pub write: WriteArgs,
    /// NVIDIA's sriov-manage [default: from the config, /usr/lib/nvidia/sriov-manage].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub sriov_manage: Option<PathBuf>,
}

/// `mxctl vgpu apply --vgpu-config FILE --select NAME [--device BDF]… [--dry-run]`
#[derive(Debug, Args)]
#[command(override_usage = "mxctl vgpu apply [OPTIONS] --vgpu-config <FILE> --select <NAME>")]
pub struct VgpuApply {
    #[command(flatten)]
    pub config: VgpuConfigArgs,
    /// Turn heterogeneous vGPU mode on (time-sliced vGPUs of several types on one GPU, as
    /// `nvidia-smi vgpu -shm 1` does) after the VFs are enabled and before any type is written;
    /// declared, so a restore sets it again. Refused with MIG-backed types.
    #[arg(long)]
    pub heterogeneous: bool,
    #[command(flatten)]
    pub write: VgpuWrite,
}

/// `mxctl vgpu restore [--device BDF]… [--dry-run] [--at-boot]`
#[derive(Debug, Args)]
pub struct VgpuRestore {
    #[command(flatten)]
    pub write: VgpuWrite,
    /// As the boot unit runs it (see `partition restore --at-boot`).
    #[arg(long)]
    pub at_boot: bool,
}

/// `mxctl vgpu assert --vgpu-config FILE --select NAME`
#[derive(Debug, Args)]
#[command(override_usage = "mxctl vgpu assert [OPTIONS] --vgpu-config <FILE> --select <NAME>")]
pub struct VgpuAssert {
    #[command(flatten)]
    pub config: VgpuConfigArgs,
    /// Only this GPU of the config; repeat for several.
    #[arg(long = "device", value_name = "BDF")]
    pub devices: Vec<Bdf>,
    #[command(flatten)]
    pub lock: LockWaitArgs,
    #[command(flatten)]
    pub helper: HelperArgs,
}

/// The layout file and the label in it.
#[derive(Debug, Args)]
pub struct LayoutArgs {
    /// The layout file: mig-parted's v1 config, YAML or JSON (`-` reads standard input);
    /// `--config FILE` here says the same (mxctl's own config file then goes before `partition`).
    #[arg(short = 'f', long = "layout", value_name = "FILE")]
    pub layout: PathBuf,
    /// The layout's label in the file (mig-parted's `-c`).
    #[arg(short = 'c', long = "select", value_name = "LABEL")]
    pub select: String,
}

/// How a layout is written: the GPUs, the pool switch, the helper and the reset.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// Only this GPU of the layout (dddd:bb:dd.f); repeat for several.
    #[arg(long = "device", value_name = "BDF")]
    pub devices: Vec<Bdf>,
    /// Plan and print; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The pool switch for this run only [default: from the config, disabled].
    #[arg(long, value_enum, value_name = "SWITCH")]
    pub pool: Option<Switch>,
    #[command(flatten)]
    pub helper: HelperArgs,
    /// The nvidia-smi program that resets a GPU whose mode change is pending [default: from
    /// the config, else /usr/bin/nvidia-smi, else PATH].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub nvidia_smi: Option<PathBuf>,
    /// The kernel log [default: from the config, /dev/kmsg].
    #[arg(long, value_name = "PATH")]
    pub kmsg: Option<PathBuf>,
    /// Seconds a reset and its verification may take [default: from the config, 90].
    #[arg(long, value_name = "SECS", value_parser = parse_window)]
    pub window: Option<std::time::Duration>,
    /// Seconds to wait for the host lock while a sync, a reset or another apply holds it
    /// [default: 0: held, the apply is blocked lock_busy].
    #[arg(long, value_name = "SECS", value_parser = parse_lock_wait)]
    pub lock_wait: Option<std::time::Duration>,
    /// What becomes of GPU instances the layout does not name: match (destroyed) or adopt
    /// (kept, reported as adopted, never destroyed) [default: from the config, match; a
    /// restore: what the declaration says].
    #[arg(long, value_enum, value_name = "WHAT")]
    pub unnamed_instances: Option<UnnamedArg>,
    /// Let this write destroy the partitions created for this owner (repeat for several);
    /// without it a write that would destroy, change or drop one is blocked
    /// (partition_owned), naming it and its owner.
    #[arg(long = "release", value_name = "TOKEN")]
    pub release: Vec<layout_model::Owner>,
}

/// `--unnamed-instances`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UnnamedArg {
    /// Destroy them: the card is made to match the layout (mig-parted's way).
    Match,
    /// Keep them, report them as adopted, never destroy them.
    Adopt,
}

impl From<UnnamedArg> for mig_layout::Unnamed {
    fn from(arg: UnnamedArg) -> Self {
        match arg {
            UnnamedArg::Match => Self::Match,
            UnnamedArg::Adopt => Self::Adopt,
        }
    }
}

/// `mxctl partition apply --config FILE --select LABEL [--device BDF]… [--dry-run]`
#[derive(Debug, Args)]
#[command(override_usage = "mxctl partition apply [OPTIONS] --config <FILE> --select <LABEL>")]
pub struct PartitionApply {
    #[command(flatten)]
    pub layout: LayoutArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `mxctl partition leave [--device BDF]… [--dry-run]`
#[derive(Debug, Args)]
pub struct PartitionLeave {
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `mxctl partition restore [--device BDF]… [--dry-run] [--at-boot]`
#[derive(Debug, Args)]
pub struct PartitionRestore {
    #[command(flatten)]
    pub write: WriteArgs,
    /// As the boot unit runs it: once per boot (a second in the same boot does nothing),
    /// nothing when the config says `restore-at-boot = disabled`, and a host with nothing
    /// declared is not a failure (one whose state was lost is).
    #[arg(long)]
    pub at_boot: bool,
}

/// `mxctl partition assert --config FILE --select LABEL`
#[derive(Debug, Args)]
#[command(override_usage = "mxctl partition assert [OPTIONS] --config <FILE> --select <LABEL>")]
pub struct PartitionAssert {
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Only this GPU of the layout; repeat for several.
    #[arg(long = "device", value_name = "BDF")]
    pub devices: Vec<Bdf>,
    #[command(flatten)]
    pub lock: LockWaitArgs,
    #[command(flatten)]
    pub helper: HelperArgs,
}

/// `mxctl partition export [--label NAME] [--declared]`
#[derive(Debug, Args)]
pub struct PartitionExport {
    /// The label of the exported layout [default: current].
    #[arg(long, value_name = "NAME", conflicts_with = "declared")]
    pub label: Option<String>,
    /// Print what the host is declared to be (each GPU by PCI address, under the declared
    /// label), read from the state, instead of what the cards hold.
    #[arg(long)]
    pub declared: bool,
    #[command(flatten)]
    pub lock: LockWaitArgs,
    #[command(flatten)]
    pub helper: HelperArgs,
}

/// `mxctl amd …`
#[derive(Debug, Subcommand)]
pub enum AmdCommand {
    /// Apply a Device Config Manager profile: the plan per GPU, then what was done (exit 0
    /// done or dry run, 1 failed, 3 blocked).
    Apply(Box<AmdApply>),
    /// Say whether a profile is applied: exit 0, or 1 with every difference.
    Assert(AmdAssert),
    /// Leave partitioning: every AMD GPU that partitions made one undivided GPU (SPX with NPS1;
    /// a memory change reloads the driver once), declared so (exit 0 done, 1 failed, 3
    /// blocked).
    Leave(Box<AmdWrite>),
    /// Bring the cards back to what the host is declared to be, AMD partitions included: the
    /// same as `partition restore` (one declaration per host).
    Restore(Box<AmdRestore>),
}

/// The Device Config Manager file and the profile in it.
#[derive(Debug, Args)]
pub struct DcmArgs {
    /// The Device Config Manager file (its `config.json`: `gpu-config-profiles`,
    /// `gpuClientSystemdServices`), JSON or the same in YAML (`-` reads standard input).
    #[arg(short = 'f', long = "dcm-config", value_name = "FILE")]
    pub file: PathBuf,
    /// The profile's name in the file (what DCM's node label `dcm.amd.com/gpu-config-profile`
    /// names).
    #[arg(short = 'p', long = "profile", value_name = "NAME")]
    pub profile: String,
}

/// How AMD GPUs are written: as a layout is, the driver reloaded by which `modprobe`, or a
/// simulated amdgpu.
#[derive(Debug, Args)]
pub struct AmdWrite {
    #[command(flatten)]
    pub write: WriteArgs,
    /// The modprobe program that reloads amdgpu [default: from the config, /sbin/modprobe].
    #[arg(long, value_name = "PATH", value_parser = program_path)]
    pub modprobe: Option<PathBuf>,
    /// Write a simulated amdgpu kept in FILE (its GPUs shown under --sysfs-root, which must not
    /// be /sys) instead of the kernel: for tests and demonstrations; reads, the lock, the state
    /// and the hooks are the real ones.
    #[arg(long, value_name = "FILE")]
    pub simulate: Option<PathBuf>,
}

/// `mxctl amd apply --dcm-config FILE --profile NAME [--device BDF]… [--dry-run]`
#[derive(Debug, Args)]
#[command(override_usage = "mxctl amd apply [OPTIONS] --dcm-config <FILE> --profile <NAME>")]
pub struct AmdApply {
    #[command(flatten)]
    pub dcm: DcmArgs,
    #[command(flatten)]
    pub write: AmdWrite,
}

/// `mxctl amd restore [--device BDF]… [--dry-run] [--at-boot]`
#[derive(Debug, Args)]
pub struct AmdRestore {
    #[command(flatten)]
    pub write: AmdWrite,
    /// As the boot unit runs it (see `partition restore --at-boot`).
    #[arg(long)]
    pub at_boot: bool,
}

/// `mxctl amd assert --dcm-config FILE --profile NAME`
#[derive(Debug, Args)]
#[command(override_usage = "mxctl amd assert [OPTIONS] --dcm-config <FILE> --profile <NAME>")]
pub struct AmdAssert {
    #[command(flatten)]
    pub dcm: DcmArgs,
    /// Only this GPU of the profile; repeat for several.
    #[arg(long = "device", value_name = "BDF")]
    pub devices: Vec<Bdf>,
    #[command(flatten)]
    pub lock: LockWaitArgs,
}
