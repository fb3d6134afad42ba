//! `card.architecture` (format 1.4): the GPU's architecture as NVML numbers it
//! (`nvmlDeviceGetArchitecture`, an `nvmlDeviceArchitecture_t`).
//!
//! The wire carries NVML's number, not a name: the helper passes on what the driver says
//! without a table of its own, so a helper never has to be rebuilt for an architecture NVML
//! adds, and a reader older than that architecture keeps the number as unknown rather than
//! losing it.

use crate::read::{Decode, Fault, Field, Path};
use serde::{Serialize, Serializer};
use std::fmt;

crate::token_enum! {
    /// An architecture NVML names: nvml.h's `NVML_DEVICE_ARCH_*` (`nvmlDeviceArchitecture_t`),
    /// each spelled as its lower-case name. Not `#[non_exhaustive]`: an architecture added here
    /// must be given its facts where they are matched (what a restart keeps), not fall into
    /// a wildcard; a number NVML adds before that reads as [`CardArchitecture::Unknown`].
    pub enum Architecture: "architecture" {
        /// `NVML_DEVICE_ARCH_KEPLER` (2).
        Kepler = "kepler",
        /// `NVML_DEVICE_ARCH_MAXWELL` (3).
        Maxwell = "maxwell",
        /// `NVML_DEVICE_ARCH_PASCAL` (4).
        Pascal = "pascal",
        /// `NVML_DEVICE_ARCH_VOLTA` (5).
        Volta = "volta",
        /// `NVML_DEVICE_ARCH_TURING` (6).
        Turing = "turing",
        /// `NVML_DEVICE_ARCH_AMPERE` (7): A100, A30.
        Ampere = "ampere",
        /// `NVML_DEVICE_ARCH_ADA` (8): L40S.
        Ada = "ada",
        /// `NVML_DEVICE_ARCH_HOPPER` (9): H100, H200, GH200.
        Hopper = "hopper",
        /// `NVML_DEVICE_ARCH_BLACKWELL` (10): B200.
        Blackwell = "blackwell",
    }
}

impl Architecture {
    /// NVML's number for it (nvml.h's `NVML_DEVICE_ARCH_*`).
    pub fn nvml(self) -> u32 {
        match self {
            Self::Kepler => 2,
            Self::Maxwell => 3,
            Self::Pascal => 4,
            Self::Volta => 5,
            Self::Turing => 6,
            Self::Ampere => 7,
            Self::Ada => 8,
            Self::Hopper => 9,
            Self::Blackwell => 10,
        }
    }

    /// The architecture NVML's number names, if this crate knows it.
    pub fn from_nvml(number: u32) -> Option<Self> {
        <Self as crate::Token>::ALL
            .iter()
            .copied()
            .find(|architecture| architecture.nvml() == number)
    }
}

/// `card.architecture` as read: an architecture this crate knows, or NVML's number for one it
/// does not (a later NVML's), kept so that it is written back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CardArchitecture {
    /// An architecture this crate knows.
    Known(Architecture),
    /// A number no [`Architecture`] has, as it was read.
    Unknown(UnknownArchitecture),
}

/// NVML's number for an architecture this crate does not know: opaque, made only by
/// [`CardArchitecture::from_nvml`], so a known number never poses as unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UnknownArchitecture(u32);

impl UnknownArchitecture {
    /// The number as it was read.
    pub fn nvml(self) -> u32 {
        self.0
    }
}

impl CardArchitecture {
    /// NVML's number read as an architecture: known when this crate knows it, else kept.
    pub fn from_nvml(number: u32) -> Self {
        match Architecture::from_nvml(number) {
            Some(architecture) => Self::Known(architecture),
            None => Self::Unknown(UnknownArchitecture(number)),
        }
    }

    /// NVML's number: what is written.
    pub fn nvml(self) -> u32 {
        match self {
            Self::Known(architecture) => architecture.nvml(),
            Self::Unknown(unknown) => unknown.nvml(),
        }
    }

    /// The known architecture, if this is one.
    pub fn known(self) -> Option<Architecture> {
        match self {
            Self::Known(architecture) => Some(architecture),
            Self::Unknown(_) => None,
        }
    }
}

impl From<Architecture> for CardArchitecture {
    fn from(architecture: Architecture) -> Self {
        Self::Known(architecture)
    }
}

/// The name (`hopper`), or `nvml:N` for a number this crate does not know.
impl fmt::Display for CardArchitecture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Known(architecture) => architecture.fmt(f),
            Self::Unknown(unknown) => write!(f, "nvml:{}", unknown.nvml()),
        }
    }
}

impl Serialize for CardArchitecture {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.nvml())
    }
}

/// NVML's number, as written: what a state that keeps the architecture reads back.
impl<'de> serde::Deserialize<'de> for CardArchitecture {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u32::deserialize(deserializer).map(Self::from_nvml)
    }
}

impl Decode for CardArchitecture {
    const EXPECTED: &'static str = "an integer (u32, NVML's nvmlDeviceArchitecture_t)";

    fn from_unsigned(value: u64, at: &Path<'_>) -> Field<Self> {
        u32::from_unsigned(value, at).map(Self::from_nvml)
    }

    /// A negative number is of the right JSON type, outside the range.
    fn from_signed(value: i64, at: &Path<'_>) -> Field<Self> {
        Err(Fault::new(
            at,
            crate::Problem::OutOfRange,
            format!("the integer {value} is out of range for {}", Self::EXPECTED),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Token;

    #[test]
    fn each_architecture_has_the_number_nvml_h_gives_it() {
        let numbers: Vec<(&str, u32)> = Architecture::ALL
            .iter()
            .map(|architecture| (architecture.as_str(), architecture.nvml()))
            .collect();
        assert_eq!(
            numbers,
            [
                ("kepler", 2),
                ("maxwell", 3),
                ("pascal", 4),
                ("volta", 5),
                ("turing", 6),
                ("ampere", 7),
                ("ada", 8),
                ("hopper", 9),
                ("blackwell", 10),
            ]
        );
    }

    #[test]
    fn a_known_number_reads_as_its_architecture_and_another_is_kept_with_its_number() {
        assert_eq!(
            CardArchitecture::from_nvml(9),
            CardArchitecture::Known(Architecture::Hopper)
        );
        let later = CardArchitecture::from_nvml(11);
        assert_eq!((later.known(), later.nvml()), (None, 11));
        assert_eq!(later.to_string(), "nvml:11");
        // NVML_DEVICE_ARCH_UNKNOWN is a number like any other to the reader.
        assert_eq!(CardArchitecture::from_nvml(u32::MAX).nvml(), u32::MAX);
    }

    #[test]
    fn serde_writes_and_reads_nvml_s_number_known_or_not() {
        for number in [7, 9, 11] {
            let architecture = CardArchitecture::from_nvml(number);
            let text = serde_json::to_string(&architecture).ok();
            assert_eq!(text.as_deref(), Some(number.to_string().as_str()));
            let back: Option<CardArchitecture> = serde_json::from_str(&number.to_string()).ok();
            assert_eq!(back, Some(architecture));
        }
    }
}
