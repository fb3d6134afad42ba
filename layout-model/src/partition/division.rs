//! [`Division`]: what a GPU was last read to hold, kept between reads — its partitions, when
//! and in which boot they were read, where the machine's record of writes stood then — with the
//! layout's generation, which tells a toolstack whether a binding it recorded belongs to the
//! layout now.
//!
//! The generation's rule ([`Division::after_read`]): it stays while the division it counts is
//! still the one read — the last read is still current ([`still_current`]: the same boot, no
//! write of ours to the GPU since, or none that cannot be ruled out) and the new read finds the
//! same partitions —, and goes up by one otherwise: with every write of ours to the GPU (an
//! apply's batch, a vGPU type, a reset, a reboot), and with every change a read finds that
//! nobody recorded (drift). It starts at 1 with a GPU's first read.

use super::Partition;
use crate::check::{Ended, still_current};
use gpu_host_probe::{Boot, Now, WriteMark};
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A read since the division that did not read the GPU's partitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Unread {
    /// When (Unix seconds).
    pub at: u64,
    /// Why, for people (the read's failure, the pool off).
    pub why: String,
}

impl Unread {
    /// A read at `at` that did not read the partitions, for `why`.
    pub fn new(at: u64, why: impl Into<String>) -> Self {
        Self {
            at,
            why: why.into(),
        }
    }
}

/// What a GPU was last read to hold, and its layout generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Division {
    /// The layout's generation: one more with every change of the division.
    pub generation: u64,
    /// Its partitions, in slot order.
    #[serde(default)]
    pub partitions: Vec<Partition>,
    /// When they were read (Unix seconds).
    pub read_at: u64,
    /// The boot they were read in (`boot_id`, `boot_time` in the file).
    #[serde(flatten)]
    pub boot: Boot,
    /// Where the machine's record of writes stood when they were read (before the read, under
    /// the host lock); `None` when it did not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<WriteMark>,
    /// The first read since that did not read them; `None` while the last read did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unread: Option<Unread>,
    /// The GPU instances its declaration places that the card, as read, no longer admits at
    /// their placements ([`super::unadmitted`]): re-making the division needs a reset. Empty
    /// where it admits them all (and for a GPU whose division is not placed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unadmitted: Vec<crate::want::Placed>,
}

/// Why a GPU's division as last read may no longer be what the GPU holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stale {
    /// A read since did not read it.
    NotRead(Unread),
    /// The read says nothing now: another boot, a write of ours since, or one that cannot be
    /// ruled out.
    Ended(Ended),
}

gpu_partition_types::token_enum! {
    /// Why a GPU's rows are stale, as a token (`because` in `--json`).
    #[non_exhaustive]
    pub enum StaleKind: "stale reason" {
        /// Never read: no rows are known.
        NeverRead = "never_read",
        /// [`Stale::NotRead`].
        NotRead = "not_read",
        /// [`Ended::EarlierBoot`].
        EarlierBoot = "earlier_boot",
        /// [`Ended::BootUntold`].
        BootUntold = "boot_untold",
        /// [`Ended::WrittenSince`].
        WrittenSince = "written_since",
        /// [`Ended::WritesUntold`].
        WritesUntold = "writes_untold",
    }
}

impl Stale {
    /// Its token.
    pub fn kind(&self) -> StaleKind {
        match self {
            Self::NotRead(_) => StaleKind::NotRead,
            Self::Ended(Ended::EarlierBoot) => StaleKind::EarlierBoot,
            Self::Ended(Ended::BootUntold) => StaleKind::BootUntold,
            Self::Ended(Ended::WrittenSince(_)) => StaleKind::WrittenSince,
            Self::Ended(Ended::WritesUntold(_)) => StaleKind::WritesUntold,
        }
    }
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotRead(Unread { at, why }) => {
                write!(f, "a read at {at} (Unix time) did not read it: {why}")
            }
            Self::Ended(why) => write!(f, "{why}"),
        }
    }
}

/// Whether two reads found the same division: each partition where it was and made of what it
/// was, by IDs (not whether a declaration records it or who owns it, which change with the
/// declaration, not the card; not a profile's name, which a read may lose).
fn same_division(one: &[Partition], two: &[Partition]) -> bool {
    one.len() == two.len()
        && one.iter().zip(two).all(|(a, b)| {
            (a.slot, a.profile.id(), a.placement, a.on, &a.compute)
                == (b.slot, b.profile.id(), b.placement, b.on, &b.compute)
        })
}

impl Division {
    /// `device` read at `read_at` to hold `partitions`, with the boot and the record of writes
    /// as they stood before the read (`now`, under the host lock): the division from then on,
    /// its generation by the module's rule against `previous` (the one kept before).
    pub fn after_read(
        previous: Option<&Division>,
        device: Bdf,
        partitions: Vec<Partition>,
        read_at: u64,
        now: &Now,
    ) -> Division {
        let generation = match previous {
            None => 1,
            Some(previous) => {
                let current =
                    still_current(&previous.boot, previous.writes.as_ref(), &[device], now).is_ok();
                if current && same_division(&previous.partitions, &partitions) {
                    previous.generation
                } else {
                    previous.generation.saturating_add(1)
                }
            }
        };
        Division {
            generation,
            partitions,
            read_at,
            boot: now.boot.clone(),
            writes: now.writes.mark(),
            unread: None,
            unadmitted: Vec::new(),
        }
    }

    /// A read that did not read the partitions (the first since the division is kept).
    pub fn not_read(&mut self, unread: Unread) {
        if self.unread.is_none() {
            self.unread = Some(unread);
        }
    }

    /// Why the division of `device` may no longer be what it holds, judged `now`; `None`
    /// while the last read is current.
    pub fn stale(&self, device: Bdf, now: &Now) -> Option<Stale> {
        if let Some(unread) = &self.unread {
            return Some(Stale::NotRead(unread.clone()));
        }
        still_current(&self.boot, self.writes.as_ref(), &[device], now)
            .err()
            .map(Stale::Ended)
    }
}
