//! Refusals before anything is written: why a layout cannot be planned on a card
//! ([`ImpossibleKind`]), the refusal naming the card and profile ([`Impossible`]), and the
//! refusals the planner's parts share.

use gpu_partition_types::Bdf;
use layout_model::{Card, CardInstance, CardProfile};
use std::fmt;

gpu_partition_types::token_enum! {
    /// Why a layout cannot be planned on a card.
    pub enum ImpossibleKind: "impossible layout" {
        /// The layout names a profile the card's catalogue does not have.
        UnknownProfile = "unknown_profile",
        /// More instances of a profile than the card holds.
        TooMany = "too_many",
        /// The instances fit no placement of the card together.
        NoFit = "no_fit",
        /// The card cannot be partitioned (no MIG), and the layout turns MIG on.
        NotPartitionable = "not_partitionable",
        /// A profile is named twice (by name and by ID).
        NamedTwice = "named_twice",
        /// A profile whose placements or compute slices the card did not give.
        ProfileIncomplete = "profile_incomplete",
        /// A member of the reply the plan depends on did not read.
        Unreadable = "unreadable",
        /// An instance the caller adopts is where the layout needs room (or MIG off would
        /// destroy it).
        AdoptedInTheWay = "adopted_in_the_way",
        /// A vGPU type the card's catalogue does not list.
        VgpuNotSupported = "vgpu_not_supported",
        /// A MIG-backed vGPU type whose vGPUs per GPU instance the catalogue does not give.
        VgpuUnsized = "vgpu_unsized",
        /// More vGPUs of a type than the card holds, or more vGPUs than it can have VFs.
        VgpuTooMany = "vgpu_too_many",
        /// Time-sliced vGPU types the card runs one at a time (heterogeneous mode off).
        VgpuTypesTogether = "vgpu_types_together",
        /// What a per-VF vGPU host needs the card lacks (SR-IOV, the VFs' `nvidia/` files, a
        /// known heterogeneous mode, or that mode asked with MIG-backed types).
        NotAVgpuHost = "not_a_vgpu_host",
        /// An AMD compute and memory partition the kernel does not run together.
        AmdIncompatible = "amd_incompatible",
        /// An AMD partition the GPU does not offer (its part, its VBIOS, its memory partition).
        AmdNotOffered = "amd_not_offered",
        /// An AMD memory partition that would split an XGMI hive (it is the whole hive's).
        AmdHive = "amd_hive",
        /// An AMD GPU that shows no partition files: amdgpu cannot partition it.
        AmdNotPartitionable = "amd_not_partitionable",
    }
}

/// A layout that cannot be planned on a card: refused before anything is written, naming the
/// card and the profile. It serializes to `{"device", "profile", "kind", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Impossible {
    /// The card.
    pub device: Bdf,
    /// The profile at fault, when one is.
    pub profile: Option<String>,
    /// Why.
    pub kind: ImpossibleKind,
    /// What is wrong, for people (the card, the profile, the numbers).
    pub message: String,
}

impl Impossible {
    pub(crate) fn new(
        device: Bdf,
        profile: Option<String>,
        kind: ImpossibleKind,
        message: String,
    ) -> Self {
        Self {
            device,
            profile,
            kind,
            message,
        }
    }
}

impl fmt::Display for Impossible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Impossible {}

/// An adopted instance stands where the layout needs room (or where MIG off would destroy it).
pub(super) fn adopted_in_the_way(card: &Card, instance: &CardInstance, why: &str) -> Impossible {
    Impossible::new(
        card.device,
        Some(card.label(instance.profile_id)),
        ImpossibleKind::AdoptedInTheWay,
        format!(
            "{}: GPU instance {} ({}) at {}+{} is adopted, never destroyed, and {why}",
            card.device,
            instance.id,
            card.label(instance.profile_id),
            instance.placement.start,
            instance.placement.size
        ),
    )
}

/// The card did not say a profile's compute slices: its filling compute instance is unknown.
pub(super) fn slices_unknown(card: &Card, profile: &CardProfile) -> Impossible {
    Impossible::new(
        card.device,
        Some(profile.label()),
        ImpossibleKind::ProfileIncomplete,
        format!(
            "{}: the card did not say how many compute slices {} has, so its compute \
             instance cannot be chosen",
            card.device,
            profile.label()
        ),
    )
}
