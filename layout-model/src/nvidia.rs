//! An NVIDIA GPU as declared ([`NvidiaDeclared`]): its MIG mode and layout — the GPU instance
//! profiles with their counts and, once an apply chose them, their placements —, what becomes
//! of instances it does not name, the board it was applied to, and the vGPUs on its virtual
//! functions ([`crate::VgpuDeclared`]), which sit inside its MIG layout.

use crate::board::Board;
use crate::card::Card;
use crate::compare::{Comparison, compare};
use crate::difference::{Difference, Fact};
use crate::owner::{Owned, Owner};
use crate::vgpu::{VfsRead, VgpuDeclared};
use crate::want::{Placed, ProfileKey, Unnamed, Want};
use gpu_partition_types::Reply;
use serde::{Deserialize, Serialize};

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

/// An NVIDIA GPU as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct NvidiaDeclared {
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
    /// The vGPUs on its virtual functions (`None`: a MIG layout alone, which says nothing of
    /// VFs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vgpu: Option<VgpuDeclared>,
    /// Who each of its owned GPU instances is for (schema 8): a partition created for an owner
    /// keeps it here, each at one of `instances`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<Owned>,
}

impl NvidiaDeclared {
    /// A GPU declared to be `want` (every instance it places, at its placement), on `board`,
    /// with no vGPU declared.
    pub fn new(want: &Want, board: Board) -> Self {
        Self {
            mig_enabled: want.enabled,
            profiles: want
                .instances
                .iter()
                .filter(|(_, count)| *count > 0)
                .map(|(profile, count)| DeclaredCount::new(profile.clone(), *count))
                .collect(),
            instances: want.placements.clone().filter(|_| want.enabled),
            unnamed: want.unnamed,
            board,
            vgpu: None,
            owners: Vec::new(),
        }
    }

    /// MIG off, no instance, on `board`: what leaving partitioning declares.
    pub fn disabled(board: Board) -> Self {
        Self::new(&Want::disabled(), board)
    }

    /// The same GPU, its VFs declared so.
    pub fn with_vgpu(mut self, vgpu: VgpuDeclared) -> Self {
        self.vgpu = Some(vgpu);
        self
    }

    /// The same GPU, with these owners kept where it places an instance (an owner of an
    /// instance it does not place is dropped: that partition is gone).
    pub fn with_owners(mut self, owners: &[Owned]) -> Self {
        let placed = self.instances.clone().unwrap_or_default();
        self.owners = owners
            .iter()
            .filter(|owned| placed.contains(&owned.at))
            .cloned()
            .collect();
        self.owners.sort_by_key(|owned| owned.at);
        self
    }

    /// Who the instance `at` is for, when it is owned.
    pub fn owner_of(&self, at: &Placed) -> Option<&Owner> {
        self.owners
            .iter()
            .find(|owned| owned.at == *at)
            .map(|owned| &owned.owner)
    }

    /// What the GPU should be, as the planner and the comparison take it.
    pub fn want(&self) -> Want {
        if !self.mig_enabled {
            return Want::disabled();
        }
        let counts = self
            .profiles
            .iter()
            .map(|count| (count.profile.clone(), count.count))
            .collect();
        let want = Want::enabled(counts).unnamed(self.unnamed);
        match &self.instances {
            Some(instances) => want.placed(instances.clone()),
            None => want,
        }
    }

    /// How the card of `reply` compares with this declaration: the board first, then the rules
    /// of [`crate::compare`]; then, where vGPUs are declared, its VFs (`vfs`; `None`: not
    /// read, which a declaration of vGPUs counts as unreadable).
    pub fn drift(&self, reply: &Reply, vfs: Option<&VfsRead>) -> Comparison {
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
        if let Some(vgpu) = &self.vgpu {
            let unread = VfsRead::Unreadable("its virtual functions were not read".to_owned());
            found
                .differences
                .extend(vgpu.drift(reply.device, vfs.unwrap_or(&unread)));
        }
        found
    }
}
