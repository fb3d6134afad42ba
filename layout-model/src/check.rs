//! A check of the cards is an observation with a time ([`LayoutCheck`]): what a sync found when
//! it read the declared GPUs, in which boot, and where the machine's record of writes stood then.
//! Whether it still says anything ([`Holding`]) is decided now, against the boot now and the
//! record now ([`gpu_host_probe::Now`]): a check of another boot, or of a boot that cannot be
//! told apart, says nothing; a write of ours to a declared GPU since it ends it; so does a sync
//! that did not read the cards after it ([`Lapse`]: the pool switched off).

use crate::compare::Adopted;
use crate::difference::Difference;
use gpu_host_probe::{Boot, BootMatch, Now, Since, WriteMark, WrittenSince};
use gpu_partition_types::{Bdf, Token};
use serde::{Deserialize, Serialize};
use std::fmt;

/// What a sync found when it read the declared GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LayoutCheck {
    /// When the cards were read (Unix seconds).
    pub checked_at: u64,
    /// The boot they were read in (`boot_id`, `boot_time` in the file).
    #[serde(flatten)]
    pub boot: Boot,
    /// Where the machine's record of writes stood when they were read (under the host lock,
    /// before the reads); `None` when it did not read, so nothing can be said after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<WriteMark>,
    /// Every difference found, by GPU in address order.
    #[serde(default)]
    pub differences: Vec<Difference>,
    /// Declared GPUs that sync could not read (their own reasons say why): not drift, and not
    /// known to hold either.
    #[serde(default)]
    pub unread: Vec<Bdf>,
    /// The instances it found that the declaration does not name and adopts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopted: Vec<Adopted>,
}

impl LayoutCheck {
    /// A check made at `checked_at` in `boot`, with the record of writes at `writes`, that found
    /// `differences` and could not read `unread` (a sync makes it; a store builds it from its
    /// columns).
    pub fn new(
        checked_at: u64,
        boot: Boot,
        writes: Option<WriteMark>,
        differences: Vec<Difference>,
        unread: Vec<Bdf>,
    ) -> Self {
        Self {
            checked_at,
            boot,
            writes,
            differences,
            unread,
            adopted: Vec::new(),
        }
    }

    /// The same, with the instances it adopted.
    pub fn adopted(mut self, adopted: Vec<Adopted>) -> Self {
        self.adopted = adopted;
        self
    }
}

gpu_partition_types::token_enum! {
    /// Why a sync did not read the cards after the last check.
    #[non_exhaustive]
    pub enum LapseReason: "lapse reason" {
        /// The pool switch is off: no helper runs.
        PoolDisabled = "pool_disabled",
    }
}

/// A sync that did not read the declared GPUs since the last check: from then on the check says
/// nothing (the cards go unwatched).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Lapse {
    /// When that sync ran (Unix seconds).
    pub at: u64,
    /// Why it did not read them.
    pub why: LapseReason,
}

impl Lapse {
    /// A sync at `at` that did not read the cards, for `why`.
    pub fn new(at: u64, why: LapseReason) -> Self {
        Self { at, why }
    }
}

gpu_partition_types::token_enum! {
    /// Whether the cards hold the declaration, as a token (labels, metrics, `--json`).
    pub enum HoldingState: "layout state" {
        /// Every declared GPU was read and holds it, and nothing was written to them since.
        Holds = "holds",
        /// Some declared GPU differs.
        Drifted = "drifted",
        /// It is not known.
        Unknown = "unknown",
    }
}

/// Whether the cards hold the declaration, as far as the stored check says now (a closed set:
/// they hold it, they do not, or it is not known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holding {
    /// Every declared GPU was read in this boot and holds it, and none was written since.
    Holds,
    /// Some declared GPU differs: these differences.
    Drifted(Vec<Difference>),
    /// Not known: why.
    Unknown(Unchecked),
}

/// Why it is not known whether the cards hold the declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unchecked {
    /// No sync has read the cards since the declaration.
    NotChecked,
    /// A sync since the last check did not read the cards.
    Lapsed(Lapse),
    /// The last check was made in an earlier boot: a reboot destroys GPU instances.
    EarlierBoot,
    /// The boot of the last check and the boot now cannot be told apart.
    BootUntold,
    /// Declared GPUs were written since the last check, by these writes of ours.
    WrittenSince(Vec<WrittenSince>),
    /// Whether anything was written since the last check cannot be told: why.
    WritesUntold(String),
    /// These declared GPUs could not be read.
    Unread(Vec<Bdf>),
}

gpu_partition_types::token_enum! {
    /// Why it is not known, as a token (`because` in `--json`).
    #[non_exhaustive]
    pub enum UncheckedKind: "unchecked reason" {
        /// [`Unchecked::NotChecked`].
        NotChecked = "not_checked",
        /// [`Unchecked::Lapsed`].
        Lapsed = "lapsed",
        /// [`Unchecked::EarlierBoot`].
        EarlierBoot = "earlier_boot",
        /// [`Unchecked::BootUntold`].
        BootUntold = "boot_untold",
        /// [`Unchecked::WrittenSince`].
        WrittenSince = "written_since",
        /// [`Unchecked::WritesUntold`].
        WritesUntold = "writes_untold",
        /// [`Unchecked::Unread`].
        Unread = "unread",
    }
}

impl Unchecked {
    /// Its token.
    pub fn kind(&self) -> UncheckedKind {
        match self {
            Self::NotChecked => UncheckedKind::NotChecked,
            Self::Lapsed(_) => UncheckedKind::Lapsed,
            Self::EarlierBoot => UncheckedKind::EarlierBoot,
            Self::BootUntold => UncheckedKind::BootUntold,
            Self::WrittenSince(_) => UncheckedKind::WrittenSince,
            Self::WritesUntold(_) => UncheckedKind::WritesUntold,
            Self::Unread(_) => UncheckedKind::Unread,
        }
    }
}

/// Why an observation says nothing now ([`still_current`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// It was made in an earlier boot.
    EarlierBoot,
    /// Its boot and the boot now cannot be told apart.
    BootUntold,
    /// What it covers was written since, by these writes of ours.
    WrittenSince(Vec<WrittenSince>),
    /// Whether anything was written since cannot be told: why.
    WritesUntold(String),
}

impl From<Ended> for Unchecked {
    fn from(ended: Ended) -> Self {
        match ended {
            Ended::EarlierBoot => Self::EarlierBoot,
            Ended::BootUntold => Self::BootUntold,
            Ended::WrittenSince(writes) => Self::WrittenSince(writes),
            Ended::WritesUntold(why) => Self::WritesUntold(why),
        }
    }
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Unchecked::from(self.clone()).fmt(f)
    }
}

/// Whether an observation of `gpus` made in `boot`, with the record of writes at `writes`
/// (`None`: it did not read then), still says anything `now`: not in another boot or one that
/// cannot be told apart, and not after a write of ours to one of them (or one that cannot be
/// ruled out). The one rule of an observation's end: a declaration's check and a GPU's last
/// read division ([`crate::partition::Division`]) are judged by it.
pub fn still_current(
    boot: &Boot,
    writes: Option<&WriteMark>,
    gpus: &[Bdf],
    now: &Now,
) -> Result<(), Ended> {
    match boot.compare(&now.boot) {
        BootMatch::Same => {}
        BootMatch::Other => return Err(Ended::EarlierBoot),
        BootMatch::CannotTell => return Err(Ended::BootUntold),
    }
    let Some(mark) = writes else {
        return Err(Ended::WritesUntold(
            "the record of writes to the cards did not read when they were read".to_owned(),
        ));
    };
    match now.writes.since(mark, gpus) {
        Since::Unwritten => Ok(()),
        Since::Written(writes) => Err(Ended::WrittenSince(writes)),
        Since::CannotTell(why) => Err(Ended::WritesUntold(why)),
    }
}

impl Holding {
    /// Judges `check` (none: never checked), `lapsed`, for the declared `gpus`, against `now`.
    /// In this order: a lapse, no check, another boot or one that cannot be told apart, a write
    /// since (or one that cannot be ruled out), then what the check found.
    pub fn of(
        check: Option<&LayoutCheck>,
        lapsed: Option<&Lapse>,
        gpus: &[Bdf],
        now: &Now,
    ) -> Self {
        if let Some(lapse) = lapsed {
            return Self::Unknown(Unchecked::Lapsed(lapse.clone()));
        }
        let Some(check) = check else {
            return Self::Unknown(Unchecked::NotChecked);
        };
        if let Err(why) = still_current(&check.boot, check.writes.as_ref(), gpus, now) {
            return Self::Unknown(why.into());
        }
        if !check.differences.is_empty() {
            Self::Drifted(check.differences.clone())
        } else if !check.unread.is_empty() {
            Self::Unknown(Unchecked::Unread(check.unread.clone()))
        } else {
            Self::Holds
        }
    }

    /// The differences found (none unless drifted).
    pub fn differences(&self) -> &[Difference] {
        match self {
            Self::Drifted(found) => found,
            Self::Holds | Self::Unknown(_) => &[],
        }
    }

    /// The state's token: holds, drifted or unknown.
    pub fn state(&self) -> HoldingState {
        match self {
            Self::Holds => HoldingState::Holds,
            Self::Drifted(_) => HoldingState::Drifted,
            Self::Unknown(_) => HoldingState::Unknown,
        }
    }

    /// Why it is not known, when it is not.
    pub fn unchecked(&self) -> Option<&Unchecked> {
        match self {
            Self::Unknown(why) => Some(why),
            Self::Holds | Self::Drifted(_) => None,
        }
    }
}

impl fmt::Display for Holding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Holds => f.write_str(HoldingState::Holds.as_str()),
            Self::Drifted(found) => write!(f, "drifted ({} difference(s))", found.len()),
            Self::Unknown(why) => write!(f, "unknown: {why}"),
        }
    }
}

impl fmt::Display for Unchecked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotChecked => f.write_str("no sync has read the cards since it was declared"),
            Self::Lapsed(Lapse { at, why }) => write!(
                f,
                "a sync at {at} (Unix time) did not read the cards ({}); nothing has read them since",
                why.as_str()
            ),
            Self::EarlierBoot => f.write_str("the cards were last compared in an earlier boot"),
            Self::BootUntold => f.write_str(
                "the boot the cards were last compared in cannot be told apart from this one",
            ),
            Self::WrittenSince(writes) => {
                let each: Vec<String> = writes.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "written since the cards were last read: {}",
                    each.join("; ")
                )
            }
            Self::WritesUntold(why) => {
                write!(
                    f,
                    "what was written since the cards were last read is not known: {why}"
                )
            }
            Self::Unread(gpus) => {
                let named: Vec<String> = gpus.iter().map(ToString::to_string).collect();
                write!(f, "{} could not be read", named.join(", "))
            }
        }
    }
}
