//! [`Declaration`]: what a host was declared to be by its last layout apply (or leave), kept in
//! its state so that every sync that reads the cards can say whether they still hold it.
//!
//! A MIG layout does not outlive the card's next reset: a reboot, a driver reload, a warm reset
//! or an administrator's `nvidia-smi mig -dgi` destroys GPU instances on every generation, and
//! from Hopper on a reboot loses the MIG mode too. So the host keeps, per GPU (by PCI address),
//! the MIG mode and the layout as applied — the GPU instance profiles with their counts and,
//! once the apply chose them, the placements —, what becomes of instances it does not name, and
//! the board it was applied to. A sync compares each declared GPU it read with its declaration
//! ([`DeclaredGpu::drift`]); whether the cards hold it is decided now, from that check
//! ([`Declaration::holding`]). A GPU the sync could not read is not drift: its own reason says
//! why.

use crate::amd::{AmdRead, AmdWant};
use crate::board::Board;
use crate::card::Card;
use crate::check::{Holding, Lapse, LayoutCheck};
use crate::compare::{Comparison, compare};
use crate::difference::{Difference, Fact};
use crate::want::{Placed, ProfileKey, Unnamed, Want};
use gpu_host_probe::Now;
use gpu_partition_types::{Bdf, Reply};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A profile of a declared layout with its count, as the layout named it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredCount {
    /// The profile, by name or ID.
    pub profile: ProfileKey,
    /// How many GPU instances of it.
    pub count: u32,
}

impl DeclaredCount {
    /// `count` GPU instances of `profile`.
    pub fn new(profile: ProfileKey, count: u32) -> Self {
        Self { profile, count }
    }
}

/// A vGPU type a GPU is declared to hold on its virtual functions, with how many.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredVgpu {
    /// The type's ID, from the card's catalogue when it was applied.
    pub type_id: u32,
    /// Its name, as the config gave it (`A100-1-5C`).
    pub name: String,
    /// How many VFs hold it.
    pub count: u32,
}

impl DeclaredVgpu {
    /// `count` VFs of type `type_id` (named `name`).
    pub fn new(type_id: u32, name: impl Into<String>, count: u32) -> Self {
        Self {
            type_id,
            name: name.into(),
            count,
        }
    }
}

/// What a GPU's virtual functions hold, as sysfs says, for [`DeclaredGpu::vf_drift`]: the
/// vGPU type on each VF (`None`: none), or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VfsRead {
    /// The type of each enabled VF, in index order (empty: no VF enabled, or no SR-IOV).
    Read(Vec<Option<u32>>),
    /// The SR-IOV state did not read: why.
    Unreadable(String),
}

/// One GPU as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredGpu {
    /// MIG on or off.
    pub mig_enabled: bool,
    /// The GPU instance profiles with their counts (empty with MIG off).
    #[serde(default)]
    pub profiles: Vec<DeclaredCount>,
    /// Where the apply placed them (each filled by the one compute instance of its slice count,
    /// which the card's catalogue gives, so it is not stored); `None` when the apply stopped
    /// before it chose (a card with MIG off lists its catalogue only once MIG is on): then only
    /// the counts are declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<Vec<Placed>>,
    /// What becomes of instances the declaration does not name.
    #[serde(default)]
    pub unnamed: Unnamed,
    /// The board the layout was applied to.
    #[serde(default)]
    pub board: Board,
    /// The vGPUs declared on its virtual functions, by type (`None`: a MIG layout alone; an
    /// empty list: no vGPU, as a vGPU leave declares).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vgpus: Option<Vec<DeclaredVgpu>>,
    /// Heterogeneous vGPU mode declared on (time-sliced vGPUs of several types on the GPU):
    /// `sriov-manage -e` clears it, so a restore sets it again. `false`: not asked for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vgpu_heterogeneous: bool,
    /// An AMD GPU's compute and memory partitions (`None`: an NVIDIA GPU, whose layout is the
    /// members above; an AMD GPU declares no MIG mode and no board).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amd: Option<AmdWant>,
}

impl DeclaredGpu {
    /// A declared GPU as a store keeps it, from its stored fields.
    pub fn stored(
        mig_enabled: bool,
        profiles: Vec<DeclaredCount>,
        instances: Option<Vec<Placed>>,
        unnamed: Unnamed,
        board: Board,
    ) -> Self {
        Self {
            mig_enabled,
            profiles,
            instances,
            unnamed,
            board,
            vgpus: None,
            vgpu_heterogeneous: false,
            amd: None,
        }
    }

    /// An AMD GPU declared in these partitions.
    pub fn amd(want: AmdWant) -> Self {
        Self {
            amd: Some(want),
            ..Self::disabled(Board::default())
        }
    }

    /// Whether the GPU is declared divided: MIG on, or (an AMD GPU) more than one compute or
    /// memory partition.
    pub fn is_divided(&self) -> bool {
        match self.amd {
            Some(want) => want.is_divided(),
            None => self.mig_enabled,
        }
    }

    /// How an AMD GPU compares with the partitions it is declared in: nothing where none are
    /// declared; else the compute partition, then the memory partition (a requested one waiting
    /// for a driver reload named with it; one requested for another mode differs even where the
    /// GPU is in the declared mode now: the next reload changes it), or why they did not read.
    pub fn amd_drift(&self, device: Bdf, found: &AmdRead) -> Vec<Difference> {
        let Some(want) = self.amd else {
            return Vec::new();
        };
        let at = |fact| Difference::new(device, fact);
        let held = match found {
            AmdRead::Held(held) => held,
            AmdRead::Unreadable(why) => {
                return vec![at(Fact::PartitionsUnread { why: why.clone() })];
            }
            AmdRead::NotPartitionable => {
                return vec![at(Fact::PartitionsUnread {
                    why: "the GPU shows no partition files: amdgpu cannot partition it".to_owned(),
                })];
            }
        };
        let mut differences = Vec::new();
        if held.compute != want.compute {
            differences.push(at(Fact::ComputePartition {
                found: held.compute,
                wanted: want.compute,
            }));
        }
        // A request waiting for a reload differs too where it is for another mode: the next
        // reload carries it out, whatever the GPU is in now.
        let request_differs = held.requested.is_some_and(|mode| mode != want.memory);
        if held.memory != Some(want.memory) || request_differs {
            differences.push(at(Fact::MemoryPartition {
                found: held.memory,
                requested: held.requested,
                wanted: want.memory,
            }));
        }
        differences
    }

    /// The same GPU, declared to hold these vGPUs on its VFs.
    pub fn with_vgpus(mut self, vgpus: Vec<DeclaredVgpu>) -> Self {
        self.vgpus = Some(vgpus);
        self
    }

    /// The same GPU, with heterogeneous vGPU mode declared on (or not asked for).
    pub fn with_vgpu_heterogeneous(mut self, on: bool) -> Self {
        self.vgpu_heterogeneous = on;
        self
    }

    /// How the GPU's virtual functions compare with the vGPUs it is declared to hold: nothing
    /// where none are declared; else the VFs gone (and then each declared type, none found),
    /// each declared type's count found and declared, and each type found that is not declared.
    pub fn vf_drift(&self, device: Bdf, found: &VfsRead) -> Vec<Difference> {
        let Some(declared) = &self.vgpus else {
            return Vec::new();
        };
        let at = |fact| Difference::new(device, fact);
        let types = match found {
            VfsRead::Unreadable(why) => return vec![at(Fact::VfsUnreadable { why: why.clone() })],
            VfsRead::Read(types) => types,
        };
        let total: u32 = declared.iter().map(|vgpu| vgpu.count).sum();
        let mut differences = Vec::new();
        if types.is_empty() && total > 0 {
            differences.push(at(Fact::VfsGone { declared: total }));
        }
        let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
        for id in types.iter().flatten() {
            *counts.entry(*id).or_default() += 1;
        }
        for vgpu in declared {
            let found = counts.remove(&vgpu.type_id).unwrap_or(0);
            if found != vgpu.count {
                differences.push(at(Fact::VgpuCount {
                    type_id: vgpu.type_id,
                    name: vgpu.name.clone(),
                    found,
                    wanted: vgpu.count,
                }));
            }
        }
        differences.extend(
            counts
                .into_iter()
                .map(|(type_id, found)| at(Fact::VgpuExtra { type_id, found })),
        );
        differences
    }

    /// A GPU declared to be `want` (every instance it places, at its placement), on `board`.
    pub fn new(want: &Want, board: Board) -> Self {
        Self {
            mig_enabled: want.enabled,
            profiles: want
                .instances
                .iter()
                .filter(|(_, count)| *count > 0)
                .map(|(profile, count)| DeclaredCount {
                    profile: profile.clone(),
                    count: *count,
                })
                .collect(),
            instances: want.placements.clone().filter(|_| want.enabled),
            unnamed: want.unnamed,
            board,
            vgpus: None,
            vgpu_heterogeneous: false,
            amd: None,
        }
    }

    /// MIG off, no instance, on `board`: what leaving partitioning declares.
    pub fn disabled(board: Board) -> Self {
        Self::new(&Want::disabled(), board)
    }

    /// What the GPU should be, as the planner and the comparison take it.
    pub fn want(&self) -> Want {
        let counts = self
            .profiles
            .iter()
            .map(|count| (count.profile.clone(), count.count))
            .collect();
        if !self.mig_enabled {
            return Want::disabled();
        }
        let want = Want::enabled(counts).unnamed(self.unnamed);
        match &self.instances {
            Some(instances) => want.placed(instances.clone()),
            None => want,
        }
    }

    /// How the card of `reply` compares with this declaration: the board first, then the rules
    /// of [`crate::compare`].
    pub fn drift(&self, reply: &Reply) -> Comparison {
        let mut found = Comparison::default();
        if let Some(change) = self.board.change(&Board::of(reply)) {
            found
                .differences
                .push(Difference::new(reply.device, Fact::Board(change)));
        }
        match Card::of(reply) {
            Ok(card) => {
                let compared = compare(&card, &self.want());
                found.differences.extend(compared.differences);
                found.adopted = compared.adopted;
            }
            Err(unreadable) => found.differences.push(Difference::new(
                reply.device,
                Fact::Unreadable {
                    what: unreadable.what,
                },
            )),
        }
        found
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
