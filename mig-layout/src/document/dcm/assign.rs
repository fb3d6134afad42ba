//! A profile judged as DCM's `validateProfile` judges the profile a node selects, and
//! assigned to the host's GPUs in order, as DCM assigns it.

use super::{DCM_COMPUTE, DCM_MEMORY, DcmMode, DcmProfile, InvalidMode, UnknownMember};
use gpu_host_probe::amdgpu::{MemoryPartition, list};
use gpu_partition_types::JsonPointer;
use layout_model::amd::AmdWant;
use std::fmt;

/// What is wrong with a profile. DCM's faults come first, in the order its `validateProfile`
/// checks them (DCM reports the first it meets); this project's follow.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileFault {
    /// `skippedGPUs.ids` lists more IDs than the host has GPUs.
    TooManySkipped {
        /// How many IDs it lists.
        skipped: usize,
        /// The host's AMD GPUs.
        host: usize,
    },
    /// A skipped ID the host has no GPU of.
    SkippedOutOfRange {
        /// The ID.
        id: u32,
        /// The host's AMD GPUs.
        host: usize,
    },
    /// The counts and the skipped IDs do not add up to the host's GPUs.
    Count {
        /// The sum of `numGPUsAssigned` (an entry without it counts 0, as in DCM).
        assigned: u64,
        /// How many IDs are skipped.
        skipped: usize,
        /// The host's AMD GPUs.
        host: usize,
    },
    /// `profiles` has no entry (DCM reads the first entry's memory partition: it would fail).
    NoEntries,
    /// An entry's compute partition is none of DCM's `ValidComputePartitions`.
    Compute {
        /// The entry's index in `profiles`.
        entry: usize,
        /// What it gives.
        given: InvalidMode,
    },
    /// An entry's memory partition is none of DCM's `ValidMemoryPartitions` (NPS8 included:
    /// the kernel has it, DCM does not take it).
    Memory {
        /// The entry's index in `profiles`.
        entry: usize,
        /// What it gives.
        given: InvalidMode,
    },
    /// An entry names another memory partition than the first entry: every GPU of a profile
    /// has one.
    MixedMemory {
        /// The entry's index in `profiles`.
        entry: usize,
        /// Its memory partition.
        memory: MemoryPartition,
        /// The first entry's.
        first: MemoryPartition,
    },
    /// This project's: a GPU ID skipped again (DCM counts it twice).
    SkippedTwice {
        /// The ID.
        id: u32,
    },
    /// This project's: an entry without `numGPUsAssigned` (DCM counts it as 0; its own example
    /// calls such a profile invalid).
    MissingGpus {
        /// The entry's index in `profiles`.
        entry: usize,
    },
    /// This project's: a member DCM's format does not define (DCM ignores it), refused so that
    /// a misspelt member cannot change what is applied.
    Unknown(UnknownMember),
}

impl fmt::Display for ProfileFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManySkipped { skipped, host } => {
                write!(f, "it skips {skipped} GPUs, more than the host's {host}")
            }
            Self::SkippedOutOfRange { id, host: 0 } => {
                write!(f, "it skips GPU {id}, and the host has no AMD GPU")
            }
            Self::SkippedOutOfRange { id, host } => write!(
                f,
                "it skips GPU {id}, and the host's GPUs are 0 to {}",
                host - 1
            ),
            Self::Count {
                assigned,
                skipped,
                host,
            } => write!(
                f,
                "it assigns {assigned} GPUs and skips {skipped}, and the host has {host}"
            ),
            Self::NoEntries => f.write_str("`profiles` has no entry"),
            Self::Compute { entry, given } => {
                let valid = list(&DCM_COMPUTE);
                invalid(
                    f,
                    *entry,
                    "compute",
                    given,
                    "ValidComputePartitions",
                    &valid,
                )
            }
            Self::Memory { entry, given } => {
                let valid = list(&DCM_MEMORY);
                invalid(f, *entry, "memory", given, "ValidMemoryPartitions", &valid)
            }
            Self::MixedMemory {
                entry,
                memory,
                first,
            } => write!(
                f,
                "entry {entry} names {memory} and entry 0 {first}: every GPU of a profile has \
                 one memory partition"
            ),
            Self::SkippedTwice { id } => write!(f, "it skips GPU {id} twice"),
            Self::MissingGpus { entry } => write!(
                f,
                "entry {entry} has no `numGPUsAssigned` (DCM would count it as 0)"
            ),
            Self::Unknown(member) => write!(
                f,
                "unexpected member {:?} at {}, line {} (DCM would ignore it)",
                member.name, member.at, member.line
            ),
        }
    }
}

/// An entry's mode that is none of DCM's `constant` (`valid`), or none at all.
fn invalid(
    f: &mut fmt::Formatter<'_>,
    entry: usize,
    kind: &str,
    given: &InvalidMode,
    constant: &str,
    valid: &str,
) -> fmt::Result {
    match given.given() {
        Some(text) => write!(
            f,
            "entry {entry}: the {kind} partition {text:?} is none of DCM's {constant} ({valid})"
        ),
        None => write!(
            f,
            "entry {entry} has no {kind} partition, and DCM's {constant} are {valid}"
        ),
    }
}

/// Why a profile was refused: every fault it has on this host, DCM's first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the profile {name:?}{}: {}", on_line(*.line), Faults(.faults))]
#[non_exhaustive]
pub struct AssignError {
    /// The profile's name.
    pub name: String,
    /// Where it is.
    pub at: JsonPointer,
    /// The line of its name.
    pub line: Option<usize>,
    /// Its faults, at least one: DCM's in the order DCM checks them (the first is the one DCM
    /// reports), then this project's.
    pub faults: Vec<ProfileFault>,
}

/// ` (line N)`, where the line is known.
fn on_line(line: Option<usize>) -> String {
    line.map(|line| format!(" (line {line})"))
        .unwrap_or_default()
}

/// Faults joined for a message.
struct Faults<'f>(&'f [ProfileFault]);

impl fmt::Display for Faults<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, fault) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{fault}")?;
        }
        Ok(())
    }
}

impl DcmProfile {
    /// The partitions the profile gives each of a host's `host` GPUs, by ID (PCI address
    /// order): `None` for a GPU it skips. The profile is judged here, as DCM judges the profile
    /// a node selects, and refused with every fault it has.
    pub fn assign(&self, host: usize) -> Result<Vec<Option<AmdWant>>, AssignError> {
        let runs = self.judge(host).map_err(|faults| AssignError {
            name: self.name.clone(),
            at: self.at.clone(),
            line: self.line,
            faults,
        })?;
        let mut modes = runs
            .into_iter()
            .flat_map(|(want, gpus)| (0..gpus).map(move |_| want));
        Ok((0..host)
            .map(|id| {
                let skipped = u32::try_from(id).is_ok_and(|id| self.skipped.contains(&id));
                if skipped { None } else { modes.next() }
            })
            .collect())
    }

    /// Each entry's partitions with its count, or the profile's faults on a host of `host`
    /// GPUs: DCM's `validateProfile` in its order, then this project's rules.
    fn judge(&self, host: usize) -> Result<Vec<(AmdWant, u32)>, Vec<ProfileFault>> {
        let mut faults = Vec::new();
        let skipped = self.skipped.len();
        if skipped > host {
            faults.push(ProfileFault::TooManySkipped { skipped, host });
        }
        faults.extend(
            self.skipped
                .iter()
                .filter(|id| usize::try_from(**id).map_or(true, |id| id >= host))
                .map(|&id| ProfileFault::SkippedOutOfRange { id, host }),
        );
        let assigned: u64 = self
            .entries
            .iter()
            .map(|entry| u64::from(entry.gpus.unwrap_or(0)))
            .sum();
        let total = usize::try_from(assigned)
            .ok()
            .and_then(|assigned| assigned.checked_add(skipped));
        if total != Some(host) {
            faults.push(ProfileFault::Count {
                assigned,
                skipped,
                host,
            });
        }
        if self.entries.is_empty() {
            faults.push(ProfileFault::NoEntries);
        }
        let first = self.entries.first().map(|entry| &entry.memory);
        let mut runs = Vec::with_capacity(self.entries.len());
        for (index, entry) in self.entries.iter().enumerate() {
            let compute = match &entry.compute {
                DcmMode::Valid(compute) => Some(*compute),
                DcmMode::Invalid(given) => {
                    faults.push(ProfileFault::Compute {
                        entry: index,
                        given: given.clone(),
                    });
                    None
                }
            };
            let memory = match &entry.memory {
                DcmMode::Valid(memory) => Some(*memory),
                DcmMode::Invalid(given) => {
                    faults.push(ProfileFault::Memory {
                        entry: index,
                        given: given.clone(),
                    });
                    None
                }
            };
            if let (Some(memory), Some(DcmMode::Valid(first))) = (memory, first) {
                if memory != *first {
                    faults.push(ProfileFault::MixedMemory {
                        entry: index,
                        memory,
                        first: *first,
                    });
                }
            }
            if let (Some(compute), Some(memory)) = (compute, memory) {
                runs.push((AmdWant::new(compute, memory), entry.gpus.unwrap_or(0)));
            }
        }
        // Once per ID, at its last repeat.
        for (index, id) in self.skipped.iter().enumerate() {
            if self.skipped[..index].contains(id) && !self.skipped[index + 1..].contains(id) {
                faults.push(ProfileFault::SkippedTwice { id: *id });
            }
        }
        faults.extend(
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, entry)| entry.gpus.is_none())
                .map(|(entry, _)| ProfileFault::MissingGpus { entry }),
        );
        faults.extend(self.unknown.iter().cloned().map(ProfileFault::Unknown));
        if faults.is_empty() {
            Ok(runs)
        } else {
            Err(faults)
        }
    }
}
