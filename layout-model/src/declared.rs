//! [`Declaration`]: what a host was declared to be by its last layout apply (or leave), kept in
//! its state so that every sync that reads the cards can say whether they still hold it.
//!
//! A declared GPU is one vendor's ([`DeclaredGpu`]): an NVIDIA GPU's MIG layout with the vGPUs
//! on its virtual functions inside it ([`NvidiaDeclared`]), or an AMD GPU's compute and memory
//! partitions ([`AmdDeclared`]); an illegal mix cannot be built, and one comparison dispatches
//! on it ([`DeclaredGpu::compare`]). A MIG layout does not outlive the card's next reset: a
//! reboot, a driver reload, a warm reset or an administrator's `nvidia-smi mig -dgi` destroys
//! GPU instances on every generation, and from Hopper on a reboot loses the MIG mode too; an
//! AMD GPU's compute partition is set anew by every driver load. Whether the cards hold the
//! declaration is decided now, from the last check ([`Declaration::holding`]). A GPU the sync
//! could not read is not drift: its own reason says why.

use crate::amd::{AmdDeclared, AmdRead};
use crate::check::{Holding, Lapse, LayoutCheck};
use crate::compare::Comparison;
use crate::difference::{Difference, Fact};
use crate::nvidia::NvidiaDeclared;
use crate::vendor::Vendor;
use crate::vgpu::VfsRead;
use gpu_host_probe::Now;
use gpu_partition_types::{Bdf, Reply};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One GPU as declared: one vendor's. Not `#[non_exhaustive]`: a new vendor is a new variant
/// (and a new side of the executor), which every match over it must decide on, as a new reset
/// method is a new `warm_reset` backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "vendor", rename_all = "snake_case")]
pub enum DeclaredGpu {
    /// An NVIDIA GPU.
    Nvidia(NvidiaDeclared),
    /// An AMD GPU.
    Amd(AmdDeclared),
}

/// What was read of a GPU for a comparison with its declaration (one variant per vendor, as
/// [`DeclaredGpu`]).
#[derive(Debug, Clone, Copy)]
pub enum Seen<'a> {
    /// An NVIDIA card's reply, and its virtual functions as sysfs shows them (`None`: not
    /// read; a declaration of vGPUs counts them unreadable).
    Nvidia {
        /// The helper's reply.
        reply: &'a Reply,
        /// Its VFs.
        vfs: Option<&'a VfsRead>,
    },
    /// An AMD GPU's partitions.
    Amd(&'a AmdRead),
}

impl DeclaredGpu {
    /// Its vendor.
    pub fn vendor(&self) -> Vendor {
        match self {
            Self::Nvidia(_) => Vendor::Nvidia,
            Self::Amd(_) => Vendor::Amd,
        }
    }

    /// Whether the GPU is declared divided: MIG on, or (an AMD GPU) more than one compute or
    /// memory partition.
    pub fn is_divided(&self) -> bool {
        match self {
            Self::Nvidia(nvidia) => nvidia.mig_enabled,
            Self::Amd(amd) => amd.want.is_divided(),
        }
    }

    /// The NVIDIA GPU's declaration, when it is one.
    pub fn nvidia(&self) -> Option<&NvidiaDeclared> {
        match self {
            Self::Nvidia(nvidia) => Some(nvidia),
            Self::Amd(_) => None,
        }
    }

    /// The AMD GPU's declaration, when it is one.
    pub fn amd(&self) -> Option<&AmdDeclared> {
        match self {
            Self::Amd(amd) => Some(amd),
            Self::Nvidia(_) => None,
        }
    }

    /// How what was `seen` of `device` compares with its declaration: the one comparison of a
    /// sync's check, an assert and an apply's read-back. What was seen of another vendor than
    /// the declared one is that difference alone.
    pub fn compare(&self, device: Bdf, seen: Seen<'_>) -> Comparison {
        match (self, seen) {
            (Self::Nvidia(nvidia), Seen::Nvidia { reply, vfs }) => nvidia.drift(reply, vfs),
            (Self::Amd(amd), Seen::Amd(read)) => Comparison {
                differences: amd.drift(device, read),
                adopted: Vec::new(),
            },
            (Self::Nvidia(_), Seen::Amd(_)) | (Self::Amd(_), Seen::Nvidia { .. }) => Comparison {
                differences: vec![Difference::new(
                    device,
                    Fact::Vendor {
                        found: seen.vendor(),
                        wanted: self.vendor(),
                    },
                )],
                adopted: Vec::new(),
            },
        }
    }
}

impl Seen<'_> {
    /// The vendor of what was seen.
    pub fn vendor(&self) -> Vendor {
        match self {
            Self::Nvidia { .. } => Vendor::Nvidia,
            Self::Amd(_) => Vendor::Amd,
        }
    }
}

impl From<NvidiaDeclared> for DeclaredGpu {
    fn from(nvidia: NvidiaDeclared) -> Self {
        Self::Nvidia(nvidia)
    }
}

impl From<AmdDeclared> for DeclaredGpu {
    fn from(amd: AmdDeclared) -> Self {
        Self::Amd(amd)
    }
}

/// What a host was declared to be: the last apply's label and each GPU it declared (an apply
/// replaces the GPUs it names and keeps the others), how many times it changed, and the last
/// check of the cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Declaration {
    /// The label of the apply that declared it last (`leave` for a leave).
    pub label: String,
    /// When (Unix seconds).
    pub declared_at: u64,
    /// How many times what the host is declared to be changed, counting the first as 1 (declaring
    /// again what is declared — a restore — keeps it): a toolstack that recorded the generation
    /// with a placement knows whether the placement belongs to the layout now declared.
    #[serde(default)]
    pub generation: u64,
    /// Each declared GPU, by address.
    pub gpus: BTreeMap<Bdf, DeclaredGpu>,
    /// What the last sync that read the cards found; `None` since it was declared until one
    /// does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<LayoutCheck>,
    /// A sync since that check that did not read the cards (the pool off): the check then says
    /// nothing. `None` once a sync reads them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lapsed: Option<Lapse>,
}

impl Declaration {
    /// A declaration of `label` at `declared_at`, over `previous` (whose GPUs `gpus` does not
    /// name are kept; its generation is counted on when anything changed), not checked yet.
    pub fn new(
        label: impl Into<String>,
        declared_at: u64,
        previous: Option<&Declaration>,
        gpus: BTreeMap<Bdf, DeclaredGpu>,
    ) -> Self {
        let label = label.into();
        let mut all = previous.map(|p| p.gpus.clone()).unwrap_or_default();
        all.extend(gpus);
        // The generation counts changes: declaring again what is declared (a restore, an apply
        // of the layout that holds) keeps it, so a placement recorded with it stays current.
        let generation = match previous {
            None => 1,
            Some(p) if p.label == label && p.gpus == all => p.generation,
            Some(p) => p.generation.saturating_add(1),
        };
        Self {
            label,
            declared_at,
            generation,
            gpus: all,
            check: None,
            lapsed: None,
        }
    }

    /// A declaration as a store keeps it, from its stored fields.
    pub fn stored(
        label: impl Into<String>,
        declared_at: u64,
        generation: u64,
        gpus: BTreeMap<Bdf, DeclaredGpu>,
        check: Option<LayoutCheck>,
        lapsed: Option<Lapse>,
    ) -> Self {
        Self {
            label: label.into(),
            declared_at,
            generation,
            gpus,
            check,
            lapsed,
        }
    }

    /// Whether no declared GPU is divided (a host declared out of partitioning).
    pub fn is_disabled(&self) -> bool {
        self.gpus.values().all(|gpu| !gpu.is_divided())
    }

    /// The declared GPUs' addresses.
    pub fn devices(&self) -> Vec<Bdf> {
        self.gpus.keys().copied().collect()
    }

    /// A sync read the cards and found `check`: it is the check from now on.
    pub fn checked(&mut self, check: LayoutCheck) {
        self.check = Some(check);
        self.lapsed = None;
    }

    /// A sync did not read the cards: the last check says nothing from now on (the first lapse
    /// since the check is kept).
    pub fn lapse(&mut self, lapse: Lapse) {
        if self.lapsed.is_none() {
            self.lapsed = Some(lapse);
        }
    }

    /// When the cards were last read, when they have been since the declaration.
    pub fn checked_at(&self) -> Option<u64> {
        self.check.as_ref().map(|check| check.checked_at)
    }

    /// Whether the cards hold it, judged now ([`Holding::of`]): against the boot now and the
    /// machine's record of writes now.
    pub fn holding(&self, now: &Now) -> Holding {
        Holding::of(
            self.check.as_ref(),
            self.lapsed.as_ref(),
            &self.devices(),
            now,
        )
    }
}
