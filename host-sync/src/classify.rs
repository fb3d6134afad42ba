//! The host classifier: a pure function over facts and an ordered table of checks, most
//! specific first, so a later check slots in without touching the others.

use crate::gpu::GpuRecord;
use crate::pci::PciFunction;
use crate::record::{Direction, LayoutRecord};
use crate::status::{HostReason, HostStatus, Pool};
use gpu_partition_types::{Bdf, PartitionMode};
use layout_model::Difference;
use std::collections::BTreeMap;

/// Whether the helper can be used, as far as this sync found out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HelperState {
    /// Not looked at (the pool switch is off, or there is no NVIDIA GPU to read).
    NotChecked,
    /// Present and executable, and not found incompatible.
    Available,
    /// Absent, not executable, or incompatible: a host-wide failure.
    Unavailable,
}

/// What the classifier decides over.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The host's display-class PCI functions.
    pub gpus: &'a [PciFunction],
    /// The pool switch.
    pub pool: Pool,
    /// Each GPU's record, as it now stands.
    pub modes: &'a BTreeMap<Bdf, GpuRecord>,
    /// The helper.
    pub helper: HelperState,
    /// The last MIG layout apply, as stored (`None` when none ever ran).
    pub layout: Option<&'a LayoutRecord>,
    /// How the declared GPUs this sync read differ from the declaration (empty: none differs,
    /// or none was read).
    pub drift: &'a [Difference],
    /// The stored state did not read and was kept aside ([`crate::HostState::lost`]): what the
    /// host was declared to be is not known.
    pub lost: bool,
}

/// One row of the table: when it applies, and what it says.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    /// What the check looks at, for people.
    pub name: &'static str,
    /// Whether it applies.
    pub applies: fn(&Facts<'_>) -> bool,
    /// The status it gives.
    pub status: HostStatus,
    /// The reason it gives.
    pub reason: HostReason,
}

fn mode(facts: &Facts<'_>, bdf: &Bdf) -> Option<PartitionMode> {
    facts.modes.get(bdf).map(|record| record.partition_mode)
}

fn last_known_divided(facts: &Facts<'_>, bdf: &Bdf) -> bool {
    facts
        .modes
        .get(bdf)
        .is_some_and(GpuRecord::last_known_divided)
}

/// Whether the last layout apply going `direction` left a failure no apply has healed.
fn layout_failed(facts: &Facts<'_>, direction: Direction) -> bool {
    facts
        .layout
        .and_then(LayoutRecord::failure)
        .is_some_and(|failure| failure.direction == direction)
}

/// The GPUs of a vendor whose partitions the host reads (NVIDIA, AMD), bound or not.
fn partitionable<'a>(facts: &'a Facts<'_>) -> impl Iterator<Item = &'a PciFunction> {
    facts
        .gpus
        .iter()
        .filter(|gpu| gpu.is_partitionable_vendor())
}

/// The checks, most specific first; the last always applies.
pub const CHECKS: [Check; 11] = [
    // What the host was declared to be is not known: it is never ready, whatever the cards say,
    // and says so on every sync until it is put right.
    Check {
        name: "the stored state was lost, pool switch on, an NVIDIA or AMD GPU on the host",
        applies: |facts| {
            facts.lost && facts.pool.is_enabled() && partitionable(facts).next().is_some()
        },
        status: HostStatus::Entering,
        reason: HostReason::StateLost,
    },
    Check {
        name: "the stored state was lost",
        applies: |facts| facts.lost,
        status: HostStatus::Inactive,
        reason: HostReason::StateLost,
    },
    Check {
        name: "no NVIDIA or AMD GPU physical function",
        applies: |facts| partitionable(facts).next().is_none(),
        status: HostStatus::Inactive,
        reason: HostReason::NoPartitionableGpu,
    },
    Check {
        name: "pool switch off, the last layout leaving partitioning failed",
        applies: |facts| !facts.pool.is_enabled() && layout_failed(facts, Direction::Leaving),
        status: HostStatus::Leaving,
        reason: HostReason::LayoutFailed,
    },
    // Last known divided: its mode, or the last mode read from it (a GPU left `unknown` by an
    // interrupted read over a division may still be divided).
    Check {
        name: "pool switch off, some NVIDIA or AMD GPU last known divided",
        applies: |facts| {
            !facts.pool.is_enabled()
                && partitionable(facts).any(|gpu| last_known_divided(facts, &gpu.bdf))
        },
        status: HostStatus::Leaving,
        reason: HostReason::GpusStillDivided,
    },
    Check {
        name: "pool switch off",
        applies: |facts| !facts.pool.is_enabled(),
        status: HostStatus::Inactive,
        reason: HostReason::PoolDisabled,
    },
    Check {
        name: "helper absent, not executable, or incompatible",
        applies: |facts| facts.helper == HelperState::Unavailable,
        status: HostStatus::Inactive,
        reason: HostReason::HelperUnavailable,
    },
    Check {
        name: "pool switch on, the last layout entering partitioning failed",
        applies: |facts| facts.pool.is_enabled() && layout_failed(facts, Direction::Entering),
        status: HostStatus::Entering,
        reason: HostReason::LayoutFailed,
    },
    Check {
        name: "pool switch on, a declared GPU differs from its declared layout",
        applies: |facts| facts.pool.is_enabled() && !facts.drift.is_empty(),
        status: HostStatus::Entering,
        reason: HostReason::LayoutDrifted,
    },
    Check {
        name: "some GPU to be read (NVIDIA or AMD) is not settled",
        applies: |facts| {
            facts
                .gpus
                .iter()
                .filter(|gpu| gpu.is_to_be_read())
                .any(|gpu| !mode(facts, &gpu.bdf).is_some_and(PartitionMode::is_settled))
        },
        status: HostStatus::Entering,
        reason: HostReason::GpusPending,
    },
    Check {
        name: "otherwise",
        applies: |_| true,
        status: HostStatus::Active,
        reason: HostReason::Ready,
    },
];

/// The host's status and reason: the first check of [`CHECKS`] that applies (the last always
/// does).
pub fn classify(facts: &Facts<'_>) -> (HostStatus, HostReason) {
    CHECKS
        .iter()
        .find(|check| (check.applies)(facts))
        .map_or((HostStatus::Active, HostReason::Ready), |check| {
            (check.status, check.reason)
        })
}
