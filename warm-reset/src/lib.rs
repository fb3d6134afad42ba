//! The MetaX GPU warm-reset procedure as a state machine.
//!
//! - [`machine::step`] is a pure `step(config, state, event, now) -> (state, actions)` with an
//!   exhaustive transition function: preflight (root, `mx-smi`, the `metax` driver unused,
//!   versions, no process, the ID, the MetaXLink topology, a readable kernel log), the reset
//!   inside its window (90 s), verification by polling `mx-smi -L` and reading `mx-smi topo -m`
//!   again, the kernel log; and the ends `Blocked(reason)` (nothing changed) and
//!   `ColdRebootRequired(reason)`.
//! - [`mx_smi`] reads what `mx-smi` prints, written against its published outputs (kept with
//!   their sources in `tests/data/mx-smi/`), failing closed on what it does not know.
//! - [`execute()`] drives it through a [`Backend`] — [`MxSmiBackend`] (real `mx-smi` through the
//!   `gpu-probe` runner, `/proc/modules`, `/dev/kmsg`) or [`SimHost`] (a simulated host with
//!   faults) — on a [`Clock`] ([`SystemClock`] or [`VirtualClock`]), holding the host GPU lock
//!   of `gpu-probe` without waiting, with a [`Journal`] so a restart never resets twice.
//! - [`plan()`] turns an interconnect group spanning hosts into phases of per-host actions, and
//!   [`run_step`] runs one host's share of one phase, idempotently, for an orchestrator.
#![deny(missing_docs)]

pub mod backend;
pub mod clock;
pub mod execute;
pub mod host_files;
pub mod journal;
pub mod machine;
pub mod mx_smi;
pub mod plan;
pub mod real;
pub mod reasons;
pub mod sim;
pub mod step;
pub mod target;

pub use backend::{Backend, ResetEnd};
pub use clock::{Clock, SystemClock, VirtualClock};
pub use execute::{ExecuteError, ResetReport, execute};
pub use journal::{JOURNAL_FILE, Journal, JournalError};
pub use machine::{Action, Event, JournalView, MachineConfig, State, step};
pub use plan::{Group, LinkCommands, Plan, PlanError, Strategy, plan};
pub use real::MxSmiBackend;
pub use reasons::{BlockedReason, ColdRebootReason, OutcomeKind};
pub use sim::{Fault, SCENARIOS, SimHost};
pub use step::{StepError, StepHost, StepReport, run_step};
pub use target::Target;
