//! ROCm Device Config Manager's partition profiles as they are (`config.json`:
//! `gpu-config-profiles`, `gpuClientSystemdServices`), read as DCM reads them, and a profile
//! judged and assigned to a host's AMD GPUs as DCM judges and assigns it. The rules and their
//! sources are in the project's `docs/amd.md`.
//!
//! ```json
//! {
//!   "gpu-config-profiles": {
//!     "cpx-nps4": {
//!       "skippedGPUs": { "ids": [] },
//!       "profiles": [
//!         { "computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8 }
//!       ]
//!     }
//!   },
//!   "gpuClientSystemdServices": { "names": ["amd-metrics-exporter", "gpuagent"] }
//! }
//! ```
//!
//! One file is shared by every node, and DCM (ROCm/device-config-manager,
//! `pkg/config_manager/configmanager.go`) judges only the profile a node selects: the file is
//! unmarshalled with Go's `encoding/json`, which fails the whole file only where a member has
//! the wrong type, and `validateProfile` then judges the selected profile's values. So here:
//! the document is refused whole, naming the line and member, only where DCM's reader would
//! fail (not JSON, a member of the wrong type) or where it is not DCM's shape at all; a
//! profile's values — its modes, its counts, its skipped IDs — are kept as given and judged by
//! [`DcmProfile::assign`], which refuses a profile with every [`ProfileFault`] it has, DCM's
//! first and in DCM's order. A member left out or `null` reads as Go reads it: absent.
//!
//! One difference, this project's choice as for the other formats: a member of a profile that
//! DCM's format does not define (DCM ignores it) and an entry without `numGPUsAssigned` (DCM
//! counts it as 0) are faults of their profile, so a misspelt member cannot silently change
//! what is applied; an unknown member outside the profiles refuses the document.

mod assign;
mod read;

pub use assign::{AssignError, ProfileFault};

use super::error::LayoutError;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_partition_types::JsonPointer;

/// The compute partitions Device Config Manager takes (`globals.ValidComputePartitions`, in its
/// order), compared with the file's text exactly.
const DCM_COMPUTE: [ComputePartition; 4] = [
    ComputePartition::Spx,
    ComputePartition::Cpx,
    ComputePartition::Dpx,
    ComputePartition::Qpx,
];

/// The memory partitions it takes (`globals.ValidMemoryPartitions`): not NPS8, which the kernel
/// has but DCM refuses.
const DCM_MEMORY: [MemoryPartition; 3] = [
    MemoryPartition::Nps1,
    MemoryPartition::Nps2,
    MemoryPartition::Nps4,
];

/// A Device Config Manager config: its named profiles, in the document's order, and the
/// services that hold the GPUs (stopped before a change, started after).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DcmDocument {
    /// The profiles, each read whole and judged only when assigned ([`DcmProfile::assign`]).
    pub profiles: Vec<DcmProfile>,
    /// `gpuClientSystemdServices.names`: the systemd services that use the GPUs.
    pub client_services: Vec<String>,
}

/// One profile as the file gives it: the partitions for the host's GPUs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DcmProfile {
    /// Its name in `gpu-config-profiles` (what DCM's node label
    /// `dcm.amd.com/gpu-config-profile` selects).
    pub name: String,
    /// The GPU IDs left as they are (`skippedGPUs.ids`), as given (a repeat included).
    pub skipped: Vec<u32>,
    /// The entries, each for the next `numGPUsAssigned` GPUs not skipped.
    pub entries: Vec<DcmEntry>,
    /// The members of the profile DCM's format does not define (DCM ignores them).
    pub unknown: Vec<UnknownMember>,
    /// The line of its name.
    pub line: Option<usize>,
    /// Where it is (`/gpu-config-profiles/NAME`).
    pub at: JsonPointer,
}

/// One entry of a profile, as the file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DcmEntry {
    /// `computePartition`.
    pub compute: DcmMode<ComputePartition>,
    /// `memoryPartition`.
    pub memory: DcmMode<MemoryPartition>,
    /// `numGPUsAssigned`; `None` where the entry has none (DCM counts it as 0).
    pub gpus: Option<u32>,
}

/// A partition mode of a DCM entry: one DCM takes, or what the file gives instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DcmMode<T> {
    /// One of DCM's modes, spelt exactly.
    Valid(T),
    /// Text DCM refuses, or no text.
    Invalid(InvalidMode),
}

/// The text of a mode DCM refuses (made only by the reader, so it never spells a mode DCM
/// takes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidMode {
    given: Option<String>,
}

impl InvalidMode {
    /// The text given; `None` where the member is absent or `null` (DCM reads the empty
    /// string).
    pub fn given(&self) -> Option<&str> {
        self.given.as_deref()
    }
}

/// A member of a profile (of it, of its `skippedGPUs` or of an entry) that DCM's format does
/// not define.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnknownMember {
    /// Its name.
    pub name: String,
    /// Where it is.
    pub at: JsonPointer,
    /// Its line.
    pub line: usize,
}

impl DcmDocument {
    /// Reads a config, JSON (or the same in YAML). Refused whole, naming the line and member,
    /// where DCM's reader would fail (a member of the wrong type) or where it is not DCM's
    /// shape (no `gpu-config-profiles`, an unknown member outside the profiles, a service
    /// name that is none); the profiles' values are judged when one is assigned.
    pub fn from_text(text: &str) -> Result<DcmDocument, LayoutError> {
        super::read::read_root(
            text,
            "the document is empty: it needs `gpu-config-profiles`",
            read::top,
        )
    }

    /// The profile `name`, as the file gives it (judged by [`DcmProfile::assign`]).
    pub fn profile(&self, name: &str) -> Option<&DcmProfile> {
        self.profiles.iter().find(|profile| profile.name == name)
    }
}
