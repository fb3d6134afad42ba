//! The reply of the GPU partition helper: versioned JSON, read leniently and written back.
//!
//! The helper is a program that reports how one NVIDIA card is partitioned (MIG mode, GPU
//! instances, the profile catalogue, vGPUs placed on instances, the vGPU type catalogue). This crate holds its two
//! replies — [`VersionReply`] (`HELPER --version`) and [`Reply`] (`HELPER read`) — with:
//!
//! - readers that are strict where the protocol is strict and lenient elsewhere: a fault in a
//!   [`Lenient`] member costs that member only and is kept as a [`LostMember`] naming it by
//!   [`JsonPointer`]; a fault in a strict member refuses the reply with a [`RefusedReply`];
//! - [`Enumerated`] for values a later helper may add (kept as unknown, written back unchanged)
//!   and [`Nullable`] for members that are always present but may be `null`;
//! - the fold of a stream of pages into one reply;
//! - the strict reading of `mode` and `case` into an [`Outcome`] and its [`PartitionMode`];
//! - the profile [`Signature`] and [`renumbered`] to match two catalogues;
//! - writers whose output reads back equal;
//! - the `apply` command's [`ApplyRequest`] of [`Step`]s (read strictly: a write never
//!   guesses) and its [`ApplyAnswer`] (a [`StepResult`] per step, and the card read after them).
//!
//! ```
//! use gpu_partition_types::{Bdf, PartitionMode, Reply};
//!
//! let text = br#"{"format": "1.0", "device": "0000:3b:00.0",
//!     "mode": {"capable": true, "current": "enabled", "pending": null},
//!     "case": "none_carved", "profiles": [{"id": 9, "name": "3g.71gb"}]}"#;
//! let device: Bdf = "0000:3b:00.0".parse()?;
//! let reply = Reply::from_json(text, Some(&device))?;
//! assert_eq!(reply.outcome().partition_mode(), PartitionMode::Enabled);
//! let lost: Vec<String> = reply.lost().iter().map(|l| l.pointer.to_string()).collect();
//! assert_eq!(lost, ["/card", "/driver", "/gpu_instances", "/processes", "/profiles/0/free_instances",
//!                   "/profiles/0/placements",
//!                   "/profiles/0/signature", "/vgpu_mode", "/vgpu_types", "/vgpus"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod apply;
mod architecture;
mod bdf;
mod catalogue;
mod enumerated;
mod error;
mod exit;
mod fold;
mod lenient;
mod nullable;
mod outcome;
mod page;
mod pointer;
mod read;
mod record;
mod reply;
mod token;
mod unknown;
mod write;

mod card;
mod case;
mod driver;
mod format;
mod instance;
mod mode;
mod partition_mode;
mod process;
mod profile;
mod version;
mod vgpu;
mod vgpu_type;

pub use apply::{
    ApplyAnswer, ApplyRequest, Op, RefusalKind, Refused, Step, StepOutcome, StepResult,
};
pub use architecture::{Architecture, CardArchitecture, UnknownArchitecture};
pub use bdf::{Bdf, BdfError};
pub use card::CardIdentity;
pub use case::{Case, Unreadable};
pub use catalogue::{Renumbered, renumbered};
pub use driver::Driver;
pub use enumerated::{Enumerated, UnknownValue};
pub use error::RefusedReply;
pub use exit::EXIT_BUSY;
pub use format::{FormatError, FormatVersion, SUPPORTED_MAJOR};
pub use instance::{ComputeInstance, GpuInstance, Placement};
pub use lenient::{Lenient, Lost, LostMember, Problem};
pub use mode::{MigState, Mode};
pub use nullable::Nullable;
pub use outcome::{Outcome, UnknownReason, UnreadableReason};
pub use page::PageNumber;
pub use partition_mode::PartitionMode;
pub use pointer::{JsonPointer, PointerToken};
pub use process::Process;
pub use profile::{Capability, Profile, Signature};
pub use reply::Reply;
pub use token::{Token, UnknownToken, expected_list};
pub use unknown::{JsonType, UnknownMember};
pub use version::{Command, Incompatible, VersionReply};
pub use vgpu::Vgpu;
pub use vgpu_type::{VgpuMode, VgpuType, VgpuTypeId};

#[doc(hidden)]
pub use token::__private;
