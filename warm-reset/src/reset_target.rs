//! [`ResetTarget`]: what a reset is asked to reset — every GPU of the method, or GPUs named by
//! the IDs the vendors' tools take — read once from an operator's words
//! ([`ResetTarget::parse`]) or built from PCI addresses by a caller that has them
//! ([`ResetTarget::devices`]). Backends match it; none splits a string again.

use crate::nvidia::nvidia_smi::parse_bus_id;
use gpu_partition_types::Bdf;
use std::fmt;

/// What a reset is asked to reset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetTarget {
    /// Every GPU the method sees (`all`).
    All,
    /// These GPUs, in the order given (never empty; the nvidia method resets them in one
    /// command, the metax and pci methods take one).
    Named(Vec<ResetId>),
}

/// One GPU as a reset names it: the three forms `nvidia-smi -i` and `mx-smi -i` take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResetId {
    /// Its index (`nvidia-smi`'s index, `mx-smi`'s node ID).
    Index(u32),
    /// Its PCI address (read in any case, with a 4- or 8-digit domain).
    Bus(Bdf),
    /// Its UUID, as given (matched in any case, with or without its `GPU-` prefix).
    Uuid(String),
}

/// Why an operator's words name no reset target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResetTargetError {
    /// Nothing was given, or a comma-separated list holds an empty entry.
    #[error("{text:?} holds an empty ID; name `all`, or IDs separated by commas")]
    EmptyId {
        /// The words given.
        text: String,
    },
    /// `all` stands in a list with other IDs.
    #[error("{text:?} names `all` among other IDs; name `all` alone")]
    AllInList {
        /// The words given.
        text: String,
    },
}

impl ResetTarget {
    /// Reads an operator's words: `all` (any case), or one or more IDs separated by commas,
    /// each an index, a PCI address or else a UUID (an ID that names no GPU is refused by the
    /// backend, which knows the GPUs).
    pub fn parse(text: &str) -> Result<Self, ResetTargetError> {
        let words: Vec<&str> = text.split(',').map(str::trim).collect();
        if words.iter().any(|word| word.is_empty()) {
            return Err(ResetTargetError::EmptyId {
                text: text.to_owned(),
            });
        }
        let all = |word: &&str| word.eq_ignore_ascii_case("all");
        match words.as_slice() {
            [only] if all(only) => Ok(Self::All),
            _ if words.iter().any(all) => Err(ResetTargetError::AllInList {
                text: text.to_owned(),
            }),
            _ => Ok(Self::Named(words.into_iter().map(ResetId::read).collect())),
        }
    }

    /// The GPUs at these PCI addresses; `None` when there are none.
    pub fn devices(devices: &[Bdf]) -> Option<Self> {
        (!devices.is_empty())
            .then(|| Self::Named(devices.iter().copied().map(ResetId::Bus).collect()))
    }

    /// The one GPU at this PCI address.
    pub fn device(device: Bdf) -> Self {
        Self::Named(vec![ResetId::Bus(device)])
    }

    /// The one GPU of index `index` (a plan's node).
    pub fn index(index: u32) -> Self {
        Self::Named(vec![ResetId::Index(index)])
    }
}

impl std::str::FromStr for ResetTarget {
    type Err = ResetTargetError;

    /// [`ResetTarget::parse`].
    fn from_str(text: &str) -> Result<Self, ResetTargetError> {
        Self::parse(text)
    }
}

impl ResetId {
    /// One word: an index when it is a number, a PCI address when it reads as one, else a UUID.
    fn read(word: &str) -> Self {
        if let Ok(index) = word.parse::<u32>() {
            Self::Index(index)
        } else if let Some(bdf) = parse_bus_id(word) {
            Self::Bus(bdf)
        } else {
            Self::Uuid(word.to_owned())
        }
    }

    /// Whether this ID names the GPU of index `index`, address `bdf` and UUID `uuid` — the one
    /// rule every method matches with.
    pub fn names(&self, index: u32, bdf: Bdf, uuid: Option<&str>) -> bool {
        let bare = |uuid: &str| {
            let uuid = uuid.trim();
            uuid.strip_prefix("GPU-")
                .or_else(|| uuid.strip_prefix("gpu-"))
                .unwrap_or(uuid)
                .to_ascii_lowercase()
        };
        match self {
            Self::Index(wanted) => *wanted == index,
            Self::Bus(wanted) => *wanted == bdf,
            Self::Uuid(wanted) => uuid.is_some_and(|uuid| bare(uuid) == bare(wanted)),
        }
    }
}

impl fmt::Display for ResetTarget {
    /// As the tools take it: `all`, or the IDs joined by commas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => f.write_str("all"),
            Self::Named(ids) => {
                for (at, id) in ids.iter().enumerate() {
                    if at > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{id}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for ResetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Index(index) => write!(f, "{index}"),
            Self::Bus(bdf) => write!(f, "{bdf}"),
            Self::Uuid(uuid) => f.write_str(uuid),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::*;

    fn bdf(text: &str) -> Bdf {
        text.parse()
            .unwrap_or_else(|_| panic!("{text} is a PCI address"))
    }

    #[test]
    fn all_alone_in_any_case_is_every_gpu() {
        assert_eq!(ResetTarget::parse(" ALL "), Ok(ResetTarget::All));
    }

    #[test]
    fn a_list_reads_each_id_as_an_index_an_address_or_a_uuid() {
        assert_eq!(
            ResetTarget::parse("0, 00000000:3B:00.0,GPU-ab12"),
            Ok(ResetTarget::Named(vec![
                ResetId::Index(0),
                ResetId::Bus(bdf("0000:3b:00.0")),
                ResetId::Uuid("GPU-ab12".to_owned()),
            ]))
        );
    }

    #[test]
    fn an_empty_entry_or_all_among_others_is_refused_naming_the_words() {
        assert!(
            matches!(ResetTarget::parse("0,,1"), Err(ResetTargetError::EmptyId { text }) if text == "0,,1")
        );
        assert!(matches!(
            ResetTarget::parse(""),
            Err(ResetTargetError::EmptyId { .. })
        ));
        assert!(matches!(
            ResetTarget::parse("0,all"),
            Err(ResetTargetError::AllInList { .. })
        ));
    }

    #[test]
    fn a_uuid_names_its_gpu_in_any_case_with_or_without_its_prefix() {
        let gpu = (3, bdf("0000:3b:00.0"), Some("GPU-AB12-cd"));
        for word in ["ab12-CD", "GPU-ab12-cd", "gpu-AB12-cd"] {
            assert!(
                ResetId::Uuid(word.to_owned()).names(gpu.0, gpu.1, gpu.2),
                "{word}"
            );
        }
        assert!(!ResetId::Uuid("ab12".to_owned()).names(gpu.0, gpu.1, gpu.2));
    }

    #[test]
    fn a_target_is_written_as_the_tools_take_it() {
        let target = ResetTarget::devices(&[bdf("0000:3b:00.0"), bdf("0000:3c:00.0")]);
        assert_eq!(
            target.map(|t| t.to_string()).as_deref(),
            Some("0000:3b:00.0,0000:3c:00.0")
        );
        assert_eq!(ResetTarget::devices(&[]), None);
    }
}
