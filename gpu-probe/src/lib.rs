//! Runs programs with real deadlines, holds the host GPU lock, and reads each GPU through the
//! GPU partition helper.
//!
//! - [`run`]: the process runner (own process group, SIGTERM then SIGKILL, bounded output,
//!   bounded wait for pipe EOF, one pure [`run::classify`]).
//! - [`Host`]: one host's state directory (the lock, the state, the journal, the simulated
//!   sub-state) and its sysfs and procfs roots, which every GPU operation takes; [`Boot`]:
//!   which boot it runs.
//! - [`HostLock`]: the host GPU lock, an exclusive `flock` on the machine's lock file and one
//!   in the state directory, that every GPU operation of the host holds; [`Cancel`] ends a
//!   wait for it.
//! - [`CardWrites`]: the machine's record of writes to its cards, kept beside its lock: every
//!   write to a card records itself under the lock ([`HostLock::record_write`]), so an
//!   observation of the cards made before it is known to be over ([`Host::now`],
//!   [`Ledger::since`]).
//! - [`read_pci_identity`]: a PCI function's IDs ([`PciIdentity`]) from sysfs, the one reader
//!   of those files; [`read_xgmi_hive_id`]: the XGMI hive an AMD GPU is in, the one reader of
//!   `xgmi_hive_info/xgmi_hive_id`.
//! - [`amdgpu`]: amdgpu's sysfs interface for AMD Instinct partitions: the modes, a GPU's
//!   partitions read strictly, and what carries a layout's writes (the kernel's files and
//!   `modprobe`, [`amdgpu::SysfsAmdgpu`]).
//! - [`Program`]: a program root runs that acts on the machine itself (the helper,
//!   `sriov-manage`, `modprobe`): the machine's own, which only a host whose roots are the
//!   machine's runs ([`Host::is_machine`]), or one the caller names for the host it built.
//! - [`chain`]: an error and its causes on one line, for people.
//! - [`Clock`]: the time every operation runs on ([`SystemClock`], or a [`VirtualClock`] that
//!   tests and simulations advance at once); one clock per run.
//! - [`holders`]: who holds a device file open (every process whose `fd/*` links to it), the
//!   idle test of every vendor's side; [`describe_holders`] says them for people.
//! - [`fs`]: writing a file whole or not at all (the state file, the reset journal).
//! - [`trust`]: what root may trust (a program or file nobody else can change, a private state
//!   directory), checked before every program is run.
//! - [`helper`]: the helper client: `--version` once, `read` per card, many cards at once.
//! - [`vf`]: a virtual function's vGPU type written (the kernel's file, or a test's fake).
//! - `test_util` (feature `test-util`): a fake helper for tests, examples and benchmarks.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod amdgpu;
mod boot;
mod cancel;
pub mod chain;
mod clock;
pub mod fs;
pub mod helper;
mod holders;
mod host;
mod lock;
mod os_error;
mod ownership;
mod pci;
mod program;
mod rendezvous;
pub mod run;
mod setters;
#[cfg(feature = "test-util")]
pub mod test_util;
pub mod trust;
pub mod vf;
mod writes;
mod xgmi;

pub use boot::{BOOT_TIME_SLACK_SECS, Boot, BootMatch, read_boot_id, read_boot_time};
pub use cancel::{Cancel, CancelOnDrop};
pub use clock::{Clock, SystemClock, VirtualClock};
pub use holders::{Holder, ProcError, describe_holders, holders};
pub use host::{Host, SIMULATED_DIR};
pub use lock::{DEFAULT_LOCK_WAIT, HostLock, LOCK_FILE, LockError, machine_lock_path};
pub use os_error::OsError;
pub use ownership::Ownership;
pub use pci::{
    AMD_VENDOR, NVIDIA_VENDOR, PciIdError, PciIdentity, PciSubsystem, is_accelerator_class,
    is_display_class, read_pci_class, read_pci_identity,
};
pub use program::{Origin, Program, ProgramRefused};
pub use rendezvous::{MACHINE_LOCK_DIR, machine_lock_dir};
pub use writes::{
    CardWrite, CardWrites, Ledger, Now, RecordError, Since, WRITES_EXTENSION, WriteMark, Writer,
    WrittenSince,
};
pub use xgmi::{XGMI_HIVE_ID, parse_xgmi_hive_id, read_xgmi_hive_id};
