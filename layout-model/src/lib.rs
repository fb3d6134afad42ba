//! The vocabulary of GPU partition layouts, and its rules: what a card holds ([`Card`], read
//! from the helper's reply), what a layout wants of it ([`Want`]), how the two differ
//! ([`Difference`], typed facts with the message derived from them), what a host is declared
//! to be ([`Declaration`]) and whether its cards hold it now ([`Holding`]).
//!
//! No I/O: the planner and executor (`mig-layout`) and the sync (`host-sync`) read the cards and
//! keep the state; they judge through this crate, so an assert, an apply's read-back and the
//! drift a sync finds are one set of rules.
//!
//! - [`Card::of`] reads a reply whole or refuses it ([`CardUnreadable`], naming the member).
//! - [`compare()`] gives every [`Difference`] between a card and a [`Want`] (and the instances
//!   adopted, with [`Unnamed::Adopt`]); [`differences`] does it from a reply.
//! - [`DifferenceKind`] lists every kind ([`gpu_partition_types::Token::ALL`]); each
//!   [`Fact`] carries its numbers, and [`Difference::remedy`] says what brings it back.
//! - [`Declaration`]: the declared GPUs ([`DeclaredGpu`]: one vendor's each, an NVIDIA GPU's
//!   MIG layout with the vGPUs on its VFs ([`NvidiaDeclared`], [`VgpuDeclared`], per VF), or an
//!   AMD GPU's partitions ([`amd::AmdDeclared`]); each compared with what was [`Seen`] of it by
//!   [`DeclaredGpu::compare`], the one dispatch), its generation, the last [`LayoutCheck`] and
//!   the [`Lapse`] since. [`Declaration::holding`] judges the check now: a check of another boot
//!   or of a boot that cannot be told apart, one followed by a write of ours
//!   ([`gpu_host_probe::CardWrites`]) or by a sync that did not read the cards, says nothing.
//!
//! - [`partition`]: a GPU's partitions as rows (slot, profile, placement, ordinal, recorded or
//!   found), and the [`partition::Division`] last read with its layout generation.
//! - [`room::remaining`]: what still fits on a card in MIG mode (every placement of each
//!   profile, how many more), now or after given creates and destroys.
//!
//! The rules are in the project's `docs/partition.md`.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod amd;
mod board;
mod card;
mod check;
mod compare;
mod declared;
mod difference;
mod nvidia;
mod owner;
pub mod partition;
mod restart;
pub mod room;
mod vendor;
mod vf;
mod vgpu;
mod want;

pub use board::{Board, BoardChange, BoardId};
pub use card::{
    Card, CardInstance, CardProfile, CardUnreadable, MediaEngines, ProfileRef, ReplyMember,
    filling_compute_profile,
};
pub use check::{
    Ended, Holding, HoldingState, Lapse, LapseReason, LayoutCheck, Unchecked, UncheckedKind,
    still_current,
};
pub use compare::{Adopted, Comparison, compare, differences};
pub use declared::{Declaration, DeclaredGpu, Seen};
pub use difference::{ComputeFound, Difference, DifferenceKind, Fact, Filling, Remedy};
pub use nvidia::{DeclaredCount, NvidiaDeclared};
pub use owner::{OWNER_MAX, Owned, Owner, OwnerError};
pub use restart::{
    AfterRestart, DivisionAfterRestart, MigEnableReset, MigModeAfterRestart, Restore,
};
pub use vendor::Vendor;
pub use vf::DeclaredVf;
pub use vgpu::{DeclaredVgpu, VfFound, VfsRead, VgpuDeclared};
pub use want::{Placed, ProfileKey, Unnamed, Want};
