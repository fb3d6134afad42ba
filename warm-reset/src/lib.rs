//! The GPU warm-reset procedure as a vendor-neutral state machine, with a backend per method.
//!
//! - [`machine::step`] is a pure `step(config, state, event, now)` with an exhaustive
//!   transition function: root, the host lock, the journal, the host's own checks, the target
//!   and the group it touches, nothing using the group, a readable kernel log, the reset inside
//!   its window (90 s), the group back as it was, the kernel log; and the ends
//!   `Blocked(reason)` (nothing changed) and `ColdRebootRequired(reason)`. An event that does not
//!   belong to the state is an [`InvalidTransition`], never a silent no-op. The machine knows no
//!   vendor: a [`Backend`] answers its questions.
//! - [`metax`]: MetaX through `mx-smi` ([`MxSmiBackend`], the [`metax::mx_smi`] parsers; these
//!   were `real`, `host_files` and `mx_smi` at the crate root). [`nvidia`]: NVIDIA through
//!   `nvidia-smi` ([`NvidiaSmiBackend`], NVLink peers reset together). [`pci`]: any PCI function
//!   through the kernel's sysfs `reset` ([`SysfsBackend`]). Every parser is written against
//!   published outputs (kept with their sources under `tests/data/`) and fails closed. [`kmsg`]
//!   reads the kernel log and [`holders`] finds who holds a device file, for every method.
//! - [`execute()`] drives the machine through a [`Backend`] — a real one or a simulated host of
//!   [`sim`] — on a [`Clock`] ([`SystemClock`] or [`VirtualClock`]), holding the host GPU lock of
//!   `gpu-host-probe` without waiting, with a [`Journal`] so a restart never resets twice. What the
//!   host does not answer is a typed [`BackendError`]; why a reset ends as it does is a typed
//!   [`Reason`], a token only where it is written out.
//! - [`plan()`] turns an interconnect group spanning hosts into phases of per-host actions, and
//!   [`run_plan_step`] (was `run_step`) runs one host's share of one phase, idempotently, for an
//!   orchestrator.
//!
//! The rules of each method are in the project's `docs/warm-reset.md`.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod backend;
pub mod clock;
pub mod execute;
pub mod holders;
pub mod journal;
pub mod kmsg;
pub mod machine;
pub mod metax;
pub mod method;
pub mod nvidia;
pub mod os_error;
pub mod parse_error;
pub mod pci;
pub mod plan;
pub mod plan_step;
pub mod reasons;
pub mod sim;
pub mod target;
pub mod tool;

pub use backend::{Back, Backend, BackendError, NotBack, Refusal, ResetEnd, Survey};
pub use clock::{Clock, SystemClock, VirtualClock};
pub use execute::{ExecuteError, ResetReport, execute};
pub use journal::{JOURNAL_FILE, Journal, JournalError, LastReset};
pub use kmsg::{DEFAULT_KMSG, KernelLog, KernelLogError};
pub use machine::{
    Action, DEFAULT_WINDOW, Event, InvalidTransition, JournalView, MachineConfig, State, step,
};
pub use metax::{MetaxBackend, MxSmiBackend, MxSmiError};
pub use method::Method;
pub use nvidia::{NvidiaBackend, NvidiaSmiBackend, NvidiaSmiError};
pub use pci::{PciBackend, SysfsBackend, SysfsError};
pub use plan::{Group, LinkCommands, Plan, PlanError, Strategy, plan};
pub use plan_step::{ActionReport, PlanStepError, PlanStepHost, PlanStepReport, run_plan_step};
pub use reasons::{BlockedReason, ColdRebootReason, OutcomeKind, Reason};
pub use sim::{Fault, SCENARIOS, SimHost, SimNvidia, SimPci};
pub use target::{Target, TargetFacts};
