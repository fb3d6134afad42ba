//! [`Declaration`]: what a host was declared to be by its last layout apply (or leave), kept in
//! its state so that every sync that reads the cards can say whether they still hold it.
//!
//! A MIG layout does not outlive the card's next reset: a reboot, a driver reload or an
//! administrator's `nvidia-smi mig -dgi` destroys GPU instances on every generation, and from
//! Hopper on a reboot loses the MIG mode too. So the host keeps, per GPU (by PCI address), the
//! MIG mode and the layout as applied — the GPU instance profiles with their counts and, once
//! the apply chose them, the placements, each with its compute instance — and the board it was
//! applied to. A sync with the pool on compares each declared GPU it read with its declaration
//! by the rules of `partition assert` ([`crate::compare`]) and the board ([`Board::change`]);
//! while any differs the host is `entering (layout_drifted)`. A GPU the sync could not read is
//! not drift: its own reason says why.

use crate::card::Card;
use crate::compare::{Difference, DifferenceKind, card_differences};
use crate::want::{Placed, ProfileKey, Want};
use gpu_host_probe::Boot;
use gpu_partition_types::{Bdf, Lenient, Placement, Reply};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The board in a slot, as the card's reply names it (`card`, reply format 1.2); each part
/// `None` where the reply did not give it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Board {
    /// The model (`NVIDIA A100-SXM4-40GB`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The board's serial number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// The GPU's UUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

/// How the board in a slot differs from the one declared there (a closed set: a board is of
/// the same model or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoardChange {
    /// A card of another model: its layout may not even exist on it.
    OtherModel {
        /// The model declared.
        declared: String,
        /// The model found.
        found: String,
    },
    /// Another board of the same model (its serial, or its UUID where a serial is not known,
    /// differs).
    OtherBoard {
        /// The model, where known.
        model: Option<String>,
        /// The declared board's serial or UUID.
        declared: String,
        /// The found board's.
        found: String,
    },
}

impl fmt::Display for BoardChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OtherModel { declared, found } => {
                write!(
                    f,
                    "the layout was declared on an {declared}, and an {found} is here"
                )
            }
            Self::OtherBoard {
                model,
                declared,
                found,
            } => write!(
                f,
                "another board{} is here: {found}, where the layout was declared on {declared}",
                model
                    .as_ref()
                    .map(|model| format!(" of the same model ({model})"))
                    .unwrap_or_default()
            ),
        }
    }
}

impl Board {
    /// A board known by these (a store builds it from its columns).
    pub fn new(model: Option<String>, serial: Option<String>, uuid: Option<String>) -> Self {
        Self {
            model,
            serial,
            uuid,
        }
    }

    /// The board a reply names (nothing where the reply gives no `card`).
    pub fn of(reply: &Reply) -> Board {
        let Lenient::Read(card) = &reply.card else {
            return Board::default();
        };
        Board {
            model: card.name.read().cloned(),
            serial: card
                .serial
                .read()
                .and_then(|serial| serial.as_option().cloned()),
            uuid: card.uuid.read().cloned(),
        }
    }

    /// How `found` differs from this (declared) board: another model, or another board of the
    /// same model; `None` when it is the same board or nothing known tells them apart.
    pub fn change(&self, found: &Board) -> Option<BoardChange> {
        if let (Some(declared), Some(seen)) = (&self.model, &found.model) {
            if declared != seen {
                return Some(BoardChange::OtherModel {
                    declared: declared.clone(),
                    found: seen.clone(),
                });
            }
        }
        let other =
            |declared: &Option<String>, seen: &Option<String>, what: &str| match (declared, seen) {
                (Some(declared), Some(seen)) if declared != seen => Some(BoardChange::OtherBoard {
                    model: self.model.clone().or_else(|| found.model.clone()),
                    declared: format!("{what} {declared}"),
                    found: format!("{what} {seen}"),
                }),
                _ => None,
            };
        match (&self.serial, &found.serial) {
            (Some(_), Some(_)) => other(&self.serial, &found.serial, "serial"),
            _ => other(&self.uuid, &found.uuid, "UUID"),
        }
    }
}

/// A GPU instance as declared: its profile, its placement, and the compute instance filling it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredInstance {
    /// The GPU instance profile's ID.
    pub profile_id: u32,
    /// Where it sits, in memory slices.
    pub placement: Placement,
    /// The compute instance profile's ID of the compute instance that fills it.
    pub compute_profile_id: u32,
    /// That compute instance's placement (in compute slices, from 0).
    pub compute_placement: Placement,
}

impl DeclaredInstance {
    /// A GPU instance of `profile_id` at `placement`, filled by a compute instance of
    /// `compute_profile_id` at `compute_placement`.
    pub fn new(
        profile_id: u32,
        placement: Placement,
        compute_profile_id: u32,
        compute_placement: Placement,
    ) -> Self {
        Self {
            profile_id,
            placement,
            compute_profile_id,
            compute_placement,
        }
    }
}

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

/// One GPU as declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredGpu {
    /// MIG on or off.
    pub mig_enabled: bool,
    /// The GPU instance profiles with their counts (empty with MIG off).
    #[serde(default)]
    pub profiles: Vec<DeclaredCount>,
    /// Where the apply placed them, each with its compute instance; `None` when the apply
    /// stopped before it chose (a card with MIG off lists its catalogue only once MIG is on):
    /// then only the counts are declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<Vec<DeclaredInstance>>,
    /// The board the layout was applied to.
    #[serde(default)]
    pub board: Board,
}

impl DeclaredGpu {
    /// A declared GPU as a store keeps it, from its stored fields.
    pub fn stored(
        mig_enabled: bool,
        profiles: Vec<DeclaredCount>,
        instances: Option<Vec<DeclaredInstance>>,
        board: Board,
    ) -> Self {
        Self {
            mig_enabled,
            profiles,
            instances,
            board,
        }
    }

    /// A GPU declared to be `want`, on `board`; the compute instance of each placed GPU
    /// instance is the one that fills it (`fill` gives its profile and placement by GPU
    /// instance profile, from the card's catalogue).
    pub fn new(want: &Want, board: Board, fill: impl Fn(u32) -> Option<(u32, Placement)>) -> Self {
        let instances = want.placements.as_ref().map(|placed| {
            placed
                .iter()
                .filter_map(|placed| {
                    let (compute_profile_id, compute_placement) = fill(placed.profile_id)?;
                    Some(DeclaredInstance {
                        profile_id: placed.profile_id,
                        placement: placed.placement,
                        compute_profile_id,
                        compute_placement,
                    })
                })
                .collect()
        });
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
            instances,
            board,
        }
    }

    /// MIG off, no instance, on `board`: what leaving partitioning declares.
    pub fn disabled(board: Board) -> Self {
        Self::new(&Want::disabled(), board, |_| None)
    }

    /// What the GPU should be, as the planner and the comparison take it.
    pub fn want(&self) -> Want {
        let counts = self
            .profiles
            .iter()
            .map(|count| (count.profile.clone(), count.count))
            .collect();
        let want = if self.mig_enabled {
            Want::enabled(counts)
        } else {
            Want::disabled()
        };
        match (&self.instances, self.mig_enabled) {
            (Some(instances), true) => want.placed(
                instances
                    .iter()
                    .map(|instance| Placed::new(instance.profile_id, instance.placement))
                    .collect(),
            ),
            _ => want,
        }
    }

    /// Every way the card of `reply` differs from this declaration: the board, then the rules
    /// of [`crate::compare::differences`].
    pub fn drift(&self, reply: &Reply) -> Vec<Difference> {
        let mut found = Vec::new();
        if let Some(change) = self.board.change(&Board::of(reply)) {
            found.push(Difference::new(
                reply.device,
                DifferenceKind::Card,
                change.to_string(),
            ));
        }
        match Card::of(reply) {
            Ok(card) => found.extend(card_differences(&card, &self.want())),
            Err(unreadable) => found.push(Difference::new(
                reply.device,
                DifferenceKind::Unreadable,
                unreadable.to_string(),
            )),
        }
        found
    }
}

/// How the cards compared with the declaration at the last sync that read them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LayoutCheck {
    /// When (Unix seconds).
    pub checked_at: u64,
    /// The boot it was made in: a check of an earlier boot says nothing of this one.
    #[serde(flatten)]
    pub boot: Boot,
    /// Every difference found, by GPU in address order.
    #[serde(default)]
    pub differences: Vec<Difference>,
    /// Declared GPUs that sync could not read (their own reasons say why): not drift, and not
    /// known to hold either.
    #[serde(default)]
    pub unread: Vec<Bdf>,
}

impl LayoutCheck {
    /// A check made at `checked_at` in `boot` that found `differences` and could not read
    /// `unread` (a sync makes it; a store builds it from its columns).
    pub fn new(
        checked_at: u64,
        boot: Boot,
        differences: Vec<Difference>,
        unread: Vec<Bdf>,
    ) -> Self {
        Self {
            checked_at,
            boot,
            differences,
            unread,
        }
    }
}

/// Whether the cards hold the declaration, as far as the stored check knows now (a closed
/// set: they hold it, they do not, or it is not known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holding<'a> {
    /// Every declared GPU was read in this boot and holds it.
    Holds,
    /// Some declared GPU differs: these differences.
    Drifted(&'a [Difference]),
    /// Not known: why.
    Unknown(Unchecked<'a>),
}

/// Why it is not known whether the cards hold the declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unchecked<'a> {
    /// No sync has read the cards since the declaration (the pool is off, or none ran).
    NotChecked,
    /// The last check was made in an earlier boot: a reboot destroys GPU instances.
    EarlierBoot,
    /// These declared GPUs could not be read.
    Unread(&'a [Bdf]),
}

impl<'a> Holding<'a> {
    /// The differences found (none unless drifted).
    pub fn differences(&self) -> &'a [Difference] {
        match self {
            Self::Drifted(found) => found,
            Self::Holds | Self::Unknown(_) => &[],
        }
    }

    /// The state's token for labels and metrics: `holds`, `drifted` or `unknown`.
    pub fn token(&self) -> &'static str {
        match self {
            Self::Holds => "holds",
            Self::Drifted(_) => "drifted",
            Self::Unknown(_) => "unknown",
        }
    }
}

impl fmt::Display for Holding<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Holds => f.write_str("holds"),
            Self::Drifted(found) => write!(f, "drifted ({} difference(s))", found.len()),
            Self::Unknown(Unchecked::NotChecked) => {
                f.write_str("unknown: no sync has read the cards since it was declared")
            }
            Self::Unknown(Unchecked::EarlierBoot) => {
                f.write_str("unknown: the cards were last compared in an earlier boot")
            }
            Self::Unknown(Unchecked::Unread(gpus)) => {
                let named: Vec<String> = gpus.iter().map(ToString::to_string).collect();
                write!(f, "unknown: {} could not be read", named.join(", "))
            }
        }
    }
}

/// What a host was declared to be: the last apply's label and each GPU it declared (an apply
/// replaces the GPUs it names and keeps the others), with the last check of the cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Declaration {
    /// The label of the apply that declared it last (`leave` for a leave).
    pub label: String,
    /// When (Unix seconds).
    pub declared_at: u64,
    /// Each declared GPU, by address.
    pub gpus: BTreeMap<Bdf, DeclaredGpu>,
    /// How the cards compared with it at the last sync that read them; `None` since it was
    /// declared until one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<LayoutCheck>,
}

impl Declaration {
    /// A declaration of `label` at `declared_at`, over `previous` (whose GPUs `gpus` does not
    /// name are kept), not checked yet.
    pub fn new(
        label: impl Into<String>,
        declared_at: u64,
        previous: Option<&Declaration>,
        gpus: BTreeMap<Bdf, DeclaredGpu>,
    ) -> Self {
        let mut all = previous.map(|p| p.gpus.clone()).unwrap_or_default();
        all.extend(gpus);
        Self {
            label: label.into(),
            declared_at,
            gpus: all,
            check: None,
        }
    }

    /// Whether every declared GPU has MIG off (a host declared out of partitioning).
    pub fn is_disabled(&self) -> bool {
        self.gpus.values().all(|gpu| !gpu.mig_enabled)
    }

    /// Whether the cards hold it, as the stored check says, in the boot `now` (a check of an
    /// earlier boot is unknown; a boot that cannot be told apart counts as the same).
    pub fn holding(&self, now: &Boot) -> Holding<'_> {
        let Some(check) = &self.check else {
            return Holding::Unknown(Unchecked::NotChecked);
        };
        if crate::after_boot::is_after_boot(Some(&check.boot), now).after_boot {
            return Holding::Unknown(Unchecked::EarlierBoot);
        }
        if !check.differences.is_empty() {
            Holding::Drifted(&check.differences)
        } else if !check.unread.is_empty() {
            Holding::Unknown(Unchecked::Unread(&check.unread))
        } else {
            Holding::Holds
        }
    }
}
