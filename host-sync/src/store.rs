//! The state store: a trait, so a toolstack keeps the fields in its own database, and the
//! embedded default, one JSON file written atomically.

use crate::state::{FieldDifference, HostState, SCHEMA, StateLost, StateReadError};
use std::path::{Path, PathBuf};

/// Where a host's state is kept: the embedded [`FileStore`], or a toolstack's own database.
///
/// # The contract a store keeps
///
/// - **What `load` answers.** Exactly what the last `save` stored, equal by `==` (every field
///   of [`HostState`] and of each [`GpuRecord`](crate::GpuRecord)), also after the process
///   restarts; `None` only when nothing was ever saved. A store never answers defaults for what
///   it cannot read: it answers an error, and the sync stops before it writes anything.
/// - **What `save` does.** Stores the whole state or nothing: a reader never sees half a save
///   (a database writes it in one transaction). A GPU absent from `state.gpus` is gone from
///   the store.
/// - **What must survive** (the sync's safety rests on them): the status and its reason, stored
///   together; `boot` (the boot of the last sync: without it every start looks like the first
///   after a boot, or none does); each GPU's `partition_mode` and `last_read` (the last mode
///   read from the card: the `unknown` written before each read hides the mode, and
///   `last_read` is what still says the GPU was divided after a crash during the read); the
///   reasons and messages (the why an administrator sees).
/// - **`schema`** is the state file's layout version. A database keeps its own migrations and
///   need not store it: it builds its answer with [`HostState::new`], which sets [`SCHEMA`].
/// - **Values it cannot read back** (a status, mode or reason token a later version wrote, or
///   a row edited by hand) are [`StoreError::UnknownValue`], never a default; its own failures
///   (a database error) are [`StoreError::Backend`] with the error as the source.
/// - **Every member, nested ones too**: a store written before a member existed must learn it
///   (the schema moves with the members, [`SCHEMA`]). `declared` above all: it is what a
///   restore brings the cards back to. An apply that declares reads the state back under the
///   lock and fails with [`StoreError::NotKept`] naming the first member the store lost; the
///   conformance suite names it too.
/// - **When it is called**: by a sync under the host lock, one call at a time; a reader such as
///   `mxctl status` may `load` at any time.
///
/// The conformance suite `host_sync::conformance` (feature `test-util`) checks a store
/// against this contract.
pub trait StateStore {
    /// The stored state; `None` when nothing was ever stored.
    fn load(&mut self) -> Result<Option<HostState>, StoreError>;
    /// Stores `state` whole, or not at all.
    fn save(&mut self, state: &HostState) -> Result<(), StoreError>;
    /// What the store did on its own since it was last asked, for a person to know (a state
    /// that did not read, kept aside, and a last good copy put back): the sync reports each as
    /// a warning. None by default.
    fn take_notes(&mut self) -> Vec<StoreNote> {
        Vec::new()
    }
}

/// What a store did on its own that a person should know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreNote {
    /// The state file did not read: it was kept aside and its last good copy put back.
    Recovered {
        /// Where the state that did not read is kept.
        kept: PathBuf,
        /// The copy put back.
        from: PathBuf,
    },
    /// The state file did not read and no good copy did either: it was kept aside, and the
    /// host is a host that lost its state ([`HostState::lost`]).
    Lost(StateLost),
}

impl std::fmt::Display for StoreNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Recovered { kept, from } => write!(
                f,
                "the state file did not read; it is kept aside as {}, and its last good copy {} \
                 was put back",
                kept.display(),
                from.display()
            ),
            Self::Lost(lost) => write!(f, "{lost}"),
        }
    }
}

/// Saves `state` into `store`, then loads it back: a store that did not keep a member (one it
/// was written before, say) is [`StoreError::NotKept`], naming the first that differs.
pub fn save_checked(store: &mut dyn StateStore, state: &HostState) -> Result<(), StoreError> {
    store.save(state)?;
    match store.load()? {
        Some(loaded) => match crate::state::first_difference(state, &loaded) {
            None => Ok(()),
            Some(difference) => Err(StoreError::NotKept { difference }),
        },
        None => Err(StoreError::NotKept {
            difference: FieldDifference {
                path: String::new(),
                saved: "Some(..)".to_owned(),
                loaded: "None".to_owned(),
            },
        }),
    }
}

/// The store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The state file could not be read or written.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// `read`, `write`, …
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The state file does not read (a read-only store leaves it where it is; the next sync
    /// keeps it aside).
    #[error("the state file {} does not read; the next sync keeps it aside", path.display())]
    Unreadable {
        /// The state file.
        path: PathBuf,
        /// What was wrong.
        #[source]
        source: serde_json::Error,
    },
    /// The state file is well-formed but holds a value this version does not know (a status, a
    /// mode, a reason of a later version, or an edit by hand): it is left where it is.
    #[error("the state file {} holds what this version does not read; it is left as it is", path.display())]
    Unsupported {
        /// The state file.
        path: PathBuf,
        /// What was not read, and where.
        #[source]
        source: serde_json::Error,
    },
    /// The state file is of a later schema.
    #[error("the state file {} has schema {found}; this version reads schema {SCHEMA} and earlier, and leaves it as it is", path.display())]
    NewerSchema {
        /// The state file.
        path: PathBuf,
        /// Its schema.
        found: u32,
    },
    /// A store holds a value this version does not read (a token of a later version, a row
    /// edited by hand): the store is left as it is, and nothing is replaced with a default.
    #[error("the state store holds {value:?} as {what}, which this version does not read")]
    UnknownValue {
        /// What the value stands for, and where (`the status`, `the partition mode of
        /// 0000:3b:00.0`, a column name).
        what: String,
        /// The value as stored.
        value: String,
        /// Why it does not read, when the parser said (the known spellings, say).
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A state saved did not load back as it was saved: the store does not keep this member.
    #[error("the state store does not keep what was saved: {difference}")]
    NotKept {
        /// The first member that differs, by path, saved and loaded.
        difference: FieldDifference,
    },
    /// The store's own backend failed (a database error), with that error as the cause.
    #[error("the state store {store} failed")]
    Backend {
        /// Which store, for people (`sqlite /var/lib/toolstack/db`, say).
        store: String,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl StoreError {
    /// A value `value` stored as `what` that does not read, with the parser's error.
    pub fn unknown_value(
        what: impl Into<String>,
        value: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::UnknownValue {
            what: what.into(),
            value: value.into(),
            source: Some(Box::new(source)),
        }
    }

    /// The backend of `store` failed with `source`.
    pub fn backend(
        store: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self::Backend {
            store: store.into(),
            source: source.into(),
        }
    }
}

/// A store behind a box is a store (`Box<dyn StateStore + Send>` for [`crate::spawn_sync`]).
impl<S: StateStore + ?Sized> StateStore for Box<S> {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        (**self).load()
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        (**self).save(state)
    }

    fn take_notes(&mut self) -> Vec<StoreNote> {
        (**self).take_notes()
    }
}

/// The state file's name inside the state directory.
pub const STATE_FILE: &str = "state.json";

/// The last good copy of the state file, beside it: written after it by every save, as
/// atomically.
pub const LAST_GOOD_FILE: &str = "state.json.last-good";

/// The embedded store: `state.json` in a state directory, written atomically (temp file,
/// fsync, rename, fsync of the directory), never through a link or over another user's file,
/// and read without following a link (`gpu_host_probe::fs::read_own`).
///
/// Every save also writes a last good copy ([`LAST_GOOD_FILE`]), as atomically. A state file
/// that does not read (truncated, torn by hand) is kept aside, never replaced with defaults:
/// the last good copy is put back when it reads ([`StoreNote::Recovered`]); else the store
/// answers — and writes — a host that lost its state ([`HostState::lost`]), which says so until
/// a good copy is put back or a layout is declared anew. A file of a later schema, or whole JSON
/// holding values this version does not know, is refused and left as it is, byte for byte.
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
    read_only: bool,
    notes: Vec<StoreNote>,
}

impl FileStore {
    /// The store in `dir` (created on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            read_only: false,
            notes: Vec::new(),
        }
    }

    /// The store in `dir` for a reader that changes nothing: a state file that does not read
    /// is reported ([`StoreError::Unreadable`]) and left where it is; saving is refused.
    pub fn read_only(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            read_only: true,
            notes: Vec::new(),
        }
    }

    /// The state file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// Its last good copy.
    pub fn last_good_path(&self) -> PathBuf {
        self.dir.join(LAST_GOOD_FILE)
    }

    /// The last good copy, when it reads whole at a schema this version knows.
    fn last_good(&self) -> Option<HostState> {
        let bytes = gpu_host_probe::fs::read_own(&self.last_good_path()).ok()??;
        HostState::from_json(&bytes).ok()
    }

    fn write(&self, name: &str, state: &HostState) -> Result<(), StoreError> {
        let mut text = serde_json::to_vec_pretty(state).map_err(|error| StoreError::Io {
            action: "write",
            path: self.dir.join(name),
            source: std::io::Error::other(error),
        })?;
        text.push(b'\n');
        gpu_host_probe::fs::remove_stale_temporaries(&self.dir, name);
        gpu_host_probe::fs::write_atomic(&self.dir, name, &text).map_err(|error| StoreError::Io {
            action: error.action,
            path: error.path,
            source: error.source,
        })
    }

    /// The state file did not read (`why`): kept aside, then the last good copy put back, or the
    /// host written as one that lost its state.
    fn recover(&mut self, path: &Path, why: String) -> Result<HostState, StoreError> {
        let kept = self.keep_aside(path)?;
        tracing::warn!(
            "the state file {} does not read ({why}); kept aside as {}",
            path.display(),
            kept.display()
        );
        if let Some(good) = self.last_good() {
            self.write(STATE_FILE, &good)?;
            self.notes.push(StoreNote::Recovered {
                kept,
                from: self.last_good_path(),
            });
            return Ok(good);
        }
        let lost = StateLost::new(kept, crate::clock::unix_now(), why);
        let state = HostState::lost(lost.clone());
        self.write(STATE_FILE, &state)?;
        self.notes.push(StoreNote::Lost(lost));
        Ok(state)
    }

    fn keep_aside(&self, path: &Path) -> Result<PathBuf, StoreError> {
        let stamp = crate::clock::unix_now();
        let kept = self.dir.join(format!(
            "{STATE_FILE}.corrupt-{stamp}-{}",
            std::process::id()
        ));
        std::fs::rename(path, &kept).map_err(|source| StoreError::Io {
            action: "keep aside",
            path: path.to_path_buf(),
            source,
        })?;
        Ok(kept)
    }
}

impl StateStore for FileStore {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        let path = self.path();
        let bytes = match gpu_host_probe::fs::read_own(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    action: "read",
                    path,
                    source,
                });
            }
        };
        match HostState::from_json(&bytes) {
            Ok(state) => Ok(Some(state)),
            Err(StateReadError::NewerSchema { found }) => {
                Err(StoreError::NewerSchema { path, found })
            }
            // Whole JSON that does not fit: a later version's values, not a torn file. Moving
            // it aside would make the next sync start from nothing.
            Err(StateReadError::Unsupported(source)) => {
                Err(StoreError::Unsupported { path, source })
            }
            Err(StateReadError::Torn(source)) if self.read_only => {
                Err(StoreError::Unreadable { path, source })
            }
            Err(StateReadError::Torn(source)) => self.recover(&path, source.to_string()).map(Some),
        }
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        if self.read_only {
            return Err(StoreError::Io {
                action: "write (the store was opened read-only)",
                path: self.path(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            });
        }
        self.write(STATE_FILE, state)?;
        self.write(LAST_GOOD_FILE, state)
    }

    fn take_notes(&mut self) -> Vec<StoreNote> {
        std::mem::take(&mut self.notes)
    }
}

/// A store in memory, for tests and for embedders that keep the state themselves (it does not
/// outlive the process, so it is no store for a host's real state).
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    /// What was last saved.
    pub state: Option<HostState>,
    saves: usize,
}

impl MemoryStore {
    /// How many saves were made: counted by the store, so only a save can change it.
    pub fn saves(&self) -> usize {
        self.saves
    }
}

impl StateStore for MemoryStore {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        Ok(self.state.clone())
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        self.state = Some(state.clone());
        self.saves += 1;
        Ok(())
    }
}
