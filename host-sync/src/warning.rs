//! [`SyncWarning`]: what did not change a sync's course but a person should know.

use crate::pci::SkippedEntry;
use crate::store::StoreNote;
use gpu_partition_types::Bdf;
use std::fmt;
use std::path::PathBuf;

/// What did not change a sync's course but a person should know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncWarning {
    /// The boot now could not be told from the stored one: the start was taken as the same
    /// boot (so no GPU was cleared by a guess). Why, for people.
    BootUndecided(String),
    /// An entry of the PCI device list was skipped (it vanished, or a file of it did not read);
    /// a stored GPU there keeps its record untouched.
    SkippedPciEntry {
        /// The entry.
        path: PathBuf,
        /// Its address, when the name reads as one.
        bdf: Option<Bdf>,
        /// What could not be read, with its causes.
        message: String,
    },
    /// The host's GPUs changed while the sync ran (one added, removed, bound or unbound, as a
    /// rebind for pass-through does): the sync ran again, so what it stored is what the host
    /// has after the change.
    GpusChanged {
        /// The GPUs whose presence or driver changed.
        gpus: Vec<Bdf>,
    },
    /// The store did something on its own (a state file that did not read kept aside, a last
    /// good copy put back).
    Store(StoreNote),
}

impl SyncWarning {
    pub(crate) fn skipped(entry: &SkippedEntry) -> Self {
        Self::SkippedPciEntry {
            path: entry.path.clone(),
            bdf: entry.bdf,
            message: entry.to_string(),
        }
    }
}

impl fmt::Display for SyncWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BootUndecided(why) => f.write_str(why),
            Self::SkippedPciEntry { path, message, .. } => {
                write!(f, "PCI scan: skipped {}: {message}", path.display())
            }
            Self::GpusChanged { gpus } => {
                let named: Vec<String> = gpus.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "the GPUs changed while the sync ran ({}): synced again",
                    named.join(", ")
                )
            }
            Self::Store(note) => write!(f, "{note}"),
        }
    }
}

/// Written as its message, as `mxctl --json` shows warnings.
impl serde::Serialize for SyncWarning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
