//! The GPU warm-reset procedure as a vendor-neutral state machine, with a backend per method.
//!
//! What an embedder uses is at the root:
//!
//! - [`execute()`] runs one reset ([`ResetRun`]: a [`MachineConfig`], the [`Host`], a
//!   [`Backend`], a clock, `gpu_host_probe::Clock`) to its [`ResetReport`], whose [`ResetOutcome`] is one of four
//!   ends matched without a catch-all: done, dry run, blocked with a [`BlockedReason`] (nothing
//!   changed), or a cold reboot with a [`ColdRebootReason`]. It holds the host lock of the
//!   host's state directory without waiting (the same lock a sync takes), and journals the
//!   reset in flight there, so a restart never resets twice inside the window.
//! - The backends: [`MxSmiBackend`] (MetaX through `mx-smi`), [`NvidiaSmiBackend`] (NVIDIA
//!   through `nvidia-smi`, NVLink peers reset together), [`SysfsBackend`] (any PCI function
//!   through the kernel's sysfs `reset`), [`AmdSmiBackend`] (AMD Instinct through `amd-smi`, the
//!   XGMI hive together). What a host does not answer is a typed
//!   [`BackendError`]; warnings are [`ResetWarning`]s.
//! - [`plan()`] turns an interconnect group spanning hosts into phases of per-host actions;
//!   [`run_plan_step`] runs one host's share of one phase, idempotently, for an orchestrator.
//! - [`read_journal`] and [`last_reset`] read the journal (for monitoring); only a run writes
//!   it, under the lock.
//!
//! Every item has one path. At the root: the pure machine ([`step()`], for an embedder driving
//! it from its own runtime), each method's backend ([`MxSmiBackend`], [`NvidiaSmiBackend`],
//! [`SysfsBackend`], [`AmdSmiBackend`], one [`HostBackend`] over each method's host) and the
//! multi-host plan. The modules [`metax`], [`nvidia`], [`pci`] and [`amd`] hold each method's host, target, the error of its
//! tool and the parsers of its tools' output (written against published outputs and failing
//! closed); [`io`] what every method's host is written with (a tool's end, the kernel log, the
//! holders of a device file, and their errors), for a host written outside the crate; and
//! `sim` (feature `sim`) a simulated host per method, for tests and `--simulate`.
//!
//! The rules of each method are in the project's `docs/warm-reset.md`.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

// First: its macros serve every method's module below.
#[macro_use]
mod host_backend;

pub mod amd;
mod backend;
mod execute;
pub mod io;
mod journal;
mod kmsg;
mod machine;
pub mod metax;
mod method;
pub mod nvidia;
mod parse_error;
pub mod pci;
mod plan;
mod plan_step;
mod plan_step_report;
mod reasons;
mod reset_target;
mod reset_with;
#[cfg(feature = "sim")]
pub mod sim;
mod target;
mod tool;
mod warning;

pub use amd::backend::{AmdBackend, AmdSmiBackend};
pub use backend::{Back, Backend, BackendError, NotBack, Refusal, ResetEnd, Survey};
pub use execute::{ExecuteError, Observer, ResetReport, ResetRun, execute};
pub use gpu_host_probe::Host;
pub use host_backend::HostBackend;
pub use journal::{
    InFlight, JOURNAL_FILE, JournalError, JournalFile, LastReset, RecordedStep, StepRecord,
    last_reset, read_journal, window_left,
};
pub use machine::{
    Action, DEFAULT_WINDOW, Event, FIRST_POLL, InvalidTransition, JournalView, LockAnswer,
    MachineConfig, PendingColdReboot, State, Transition, step,
};
pub use metax::backend::{MetaxBackend, MxSmiBackend};
pub use method::Method;
pub use nvidia::backend::{NvidiaBackend, NvidiaSmiBackend};
pub use pci::backend::{PciBackend, SysfsBackend};
pub use plan::{
    ActionKind, CONNECT_LINKS_MANUAL, Group, GroupHost, LinkCommands, Phase, Plan, PlanAction,
    PlanError, Strategy, check_group, plan,
};
pub use plan_step::{PlanStepError, run_plan_step};
pub use plan_step_report::{ActionReport, PlanStepReport};
pub use reasons::{BadOutcome, BlockedReason, ColdRebootReason, ResetOutcome, ResetReason};
pub use reset_target::{ResetId, ResetTarget, ResetTargetError};
pub use reset_with::ResetWith;
pub use target::{Target, TargetFacts};
pub use warning::ResetWarning;
