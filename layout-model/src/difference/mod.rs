//! [`Difference`]: one way a card differs from what it should be, as data — its kind
//! ([`DifferenceKind`], a listable set) and its facts ([`Fact`]: the mode found and wanted, a
//! profile's count found and wanted, the placement of an instance missing, the ID and placement
//! of an extra one, where one moved from and to, …) — with the message for people derived from
//! them. It serializes (and is stored) flat: `device`, `kind`, the facts, and `message`.

mod fact;
mod fact_text;
mod kind;

pub use fact::{ComputeFound, Fact, Filling};
pub use kind::DifferenceKind;

use crate::board::BoardChange;
use gpu_partition_types::{Bdf, Token};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What brings a difference back, where something of the declaration can (a typed hint: the
/// library names no command of a program).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Remedy {
    /// Applying the declaration again (a restore) brings it back.
    Restore,
    /// The declaration cannot be applied to what is there (another model, a profile the card
    /// lacks): a new layout for it is needed.
    NewLayout,
    /// Nothing of ours: the GPU is gone, or the card must be read first.
    None,
}

/// One way a card differs from what it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Difference {
    /// The card.
    pub device: Bdf,
    /// What differs.
    pub fact: Fact,
}

impl Difference {
    /// `fact` on `device`.
    pub fn new(device: Bdf, fact: Fact) -> Self {
        Self { device, fact }
    }

    /// Its kind.
    pub fn kind(&self) -> DifferenceKind {
        self.fact.kind()
    }

    /// What differs, for people (derived from the facts).
    pub fn message(&self) -> String {
        self.fact.to_string()
    }

    /// What brings it back.
    pub fn remedy(&self) -> Remedy {
        match &self.fact {
            Fact::Mode { capable: false, .. } | Fact::Profile { .. } => Remedy::NewLayout,
            Fact::Board(BoardChange::OtherModel { .. })
            | Fact::VgpuType { .. }
            | Fact::Vendor { .. } => Remedy::NewLayout,
            Fact::Mode { .. }
            | Fact::InstanceCount { .. }
            | Fact::InstanceMissing { .. }
            | Fact::InstanceExtra { .. }
            | Fact::InstanceMoved { .. }
            | Fact::InstanceMisplaced { .. }
            | Fact::ComputeInstances { .. }
            | Fact::Board(BoardChange::OtherBoard { .. })
            | Fact::VfsGone { .. }
            | Fact::VgpuCount { .. }
            | Fact::VgpuExtra { .. }
            | Fact::VfType { .. }
            | Fact::ComputePartition { .. }
            | Fact::MemoryPartition { .. } => Remedy::Restore,
            Fact::GpuGone
            | Fact::Unread { .. }
            | Fact::Unreadable { .. }
            | Fact::VfsUnreadable { .. }
            | Fact::PartitionsUnread { .. } => Remedy::None,
        }
    }
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.device,
            self.kind().as_str(),
            self.fact
        )
    }
}

/// The stored and printed form: `device`, the facts with their `kind`, and `message`.
#[derive(Serialize)]
struct Written<'a> {
    device: &'a Bdf,
    #[serde(flatten)]
    fact: &'a Fact,
    message: String,
}

#[derive(Deserialize)]
struct Read {
    device: Bdf,
    #[serde(flatten)]
    fact: Fact,
}

impl Serialize for Difference {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Written {
            device: &self.device,
            fact: &self.fact,
            message: self.message(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Difference {
    /// The facts are read; `message` is derived again from them, not read.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = Read::deserialize(deserializer)?;
        Ok(Self {
            device: read.device,
            fact: read.fact,
        })
    }
}
