//! Why a vGPU plan takes no step ([`VgpuRefusal`], with what a card lacks to host vGPUs per VF,
//! [`Missing`]), as an impossible layout where it is one, and the holders it names.

use crate::vgpu::{DeriveError, VgpuTypeName};
use gpu_host_probe::Holder;
use gpu_partition_types::Bdf;

/// Why a vGPU plan takes no step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VgpuRefusal {
    /// The card cannot hold the spec (its catalogue says so before any write).
    #[error("{device}: {source}")]
    Impossible {
        /// The GPU.
        device: Bdf,
        /// Why.
        source: DeriveError,
    },
    /// More vGPUs than the GPU can have VFs.
    #[error("{device}: {wanted} vGPUs asked for, and the GPU can have {total} virtual functions")]
    TooManyVgpus {
        /// The GPU.
        device: Bdf,
        /// How many the spec asks for.
        wanted: u32,
        /// `sriov_totalvfs`.
        total: u32,
    },
    /// A VF the plan would change is in use: its VFIO group is held open (a running VM).
    #[error(
        "{vf} (virtual function {index} of {device}) is in use: {}",
        describe(holders)
    )]
    InUse {
        /// The GPU.
        device: Bdf,
        /// The VF's number.
        index: u32,
        /// The VF.
        vf: Bdf,
        /// Who holds its VFIO group.
        holders: Vec<Holder>,
    },
    /// Types the card cannot run together: more than one time-sliced type without
    /// heterogeneous mode (NVML's `nvmlDeviceGetCreatableVgpus`: with a time-sliced vGPU running,
    /// only its own type stays creatable).
    #[error(
        "{device}: {} are time-sliced types of which the card runs one at a time unless \
         heterogeneous vGPU mode is on (nvmlDeviceGetCreatableVgpus)",
        names(types)
    )]
    TypesTogether {
        /// The GPU.
        device: Bdf,
        /// The time-sliced types asked for together.
        types: Vec<VgpuTypeName>,
    },
    /// What the spec needs, the card does not have.
    #[error("{device}: {missing}")]
    NotAVgpuHost {
        /// The GPU.
        device: Bdf,
        /// What is missing.
        missing: Missing,
    },
}

/// What a GPU lacks to be a per-VF vGPU host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Missing {
    /// `sriov_totalvfs` is absent or 0.
    #[error("the GPU has no SR-IOV virtual functions")]
    Sriov,
    /// A VF has no `nvidia/` directory: no vGPU manager, or the mdev interface.
    #[error(
        "virtual function {index} has no nvidia/ directory (no vGPU manager, or the mdev interface)"
    )]
    VgpuFiles {
        /// The VF's number.
        index: u32,
    },
    /// Heterogeneous mode was asked for, and the card has no such setting (or it was not read).
    #[error("heterogeneous vGPU mode was asked for, and the card's is not known")]
    Heterogeneous,
    /// Heterogeneous mode was asked for with MIG-backed types: the GPU's mode is a setting of
    /// MIG off, which NVML refuses in MIG mode from R575 (NVML API Reference, change log).
    #[error(
        "heterogeneous vGPU mode was asked for with MIG-backed types; it is a setting of a GPU \
         with MIG off (NVML refuses it in MIG mode)"
    )]
    HeterogeneousWithMig,
}

impl VgpuRefusal {
    /// The refusal as an impossible layout (`impossible` of the report), with its kind and the
    /// type at fault; `None` for a VF in use, which is no layout's fault (`gpu_busy`).
    pub fn impossible(&self) -> Option<crate::Impossible> {
        use crate::ImpossibleKind as Kind;
        let (device, kind, profile) = match self {
            Self::Impossible { device, source } => {
                let (kind, name) = match source {
                    DeriveError::NotInCatalogue { name, .. } => (Kind::VgpuUnsized, name),
                    DeriveError::NotSupported { name, .. } => (Kind::VgpuNotSupported, name),
                    DeriveError::MoreThanTheCardHolds { name, .. } => (Kind::VgpuTooMany, name),
                };
                (*device, kind, Some(name.to_string()))
            }
            Self::TooManyVgpus { device, .. } => (*device, Kind::VgpuTooMany, None),
            Self::TypesTogether { device, types } => {
                (*device, Kind::VgpuTypesTogether, Some(names(types)))
            }
            Self::NotAVgpuHost { device, .. } => (*device, Kind::NotAVgpuHost, None),
            Self::InUse { .. } => return None,
        };
        Some(crate::Impossible::new(
            device,
            profile,
            kind,
            self.to_string(),
        ))
    }
}

/// Type names for people: `A100-10C, A100-20C`.
fn names(types: &[VgpuTypeName]) -> String {
    types
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The holders for a refusal: `pid 4242 (qemu-kvm), …` (`pid 4242` alone where the name did
/// not read).
pub(crate) fn describe(holders: &[Holder]) -> String {
    holders
        .iter()
        .map(|holder| match &holder.name {
            Some(name) => format!("pid {} ({name})", holder.pid),
            None => format!("pid {}", holder.pid),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
