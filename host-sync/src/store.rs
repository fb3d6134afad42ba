//! The state store: a trait, so a toolstack keeps the fields in its own database, and the
//! embedded default, one JSON file written atomically.

use crate::state::{HostState, SCHEMA};
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
    /// The state file does not read; it was moved aside, never replaced with defaults.
    #[error("the state file {} does not read; kept aside as {}", path.display(), kept.display())]
    Corrupt {
        /// The state file.
        path: PathBuf,
        /// Where it now is.
        kept: PathBuf,
        /// What was wrong.
        #[source]
        source: serde_json::Error,
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
    #[error("the state file {} has schema {found}; this version reads schema {SCHEMA}", path.display())]
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
}

/// The state file's name inside the state directory.
pub const STATE_FILE: &str = "state.json";

/// The embedded store: `state.json` in a state directory, written atomically (temp file,
/// fsync, rename, fsync of the directory), never through a link or over another user's file,
/// and read without following a link (`gpu_host_probe::fs::read_own`).
#[derive(Debug, Clone)]
pub struct FileStore {
    dir: PathBuf,
    read_only: bool,
}

impl FileStore {
    /// The store in `dir` (created on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            read_only: false,
        }
    }

    /// The store in `dir` for a reader that changes nothing: a state file that does not read
    /// is reported ([`StoreError::Unreadable`]) and left where it is; saving is refused.
    pub fn read_only(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            read_only: true,
        }
    }

    /// The state file.
    pub fn path(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    fn keep_aside(&self, path: &Path) -> Result<PathBuf, StoreError> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_secs())
            .unwrap_or_default();
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
        #[derive(serde::Deserialize)]
        struct Schema {
            schema: u32,
        }
        if let Ok(Schema { schema }) = serde_json::from_slice::<Schema>(&bytes) {
            if schema > SCHEMA {
                return Err(StoreError::NewerSchema {
                    path,
                    found: schema,
                });
            }
        }
        match serde_json::from_slice::<HostState>(&bytes) {
            Ok(state) => Ok(Some(state)),
            // Whole JSON that does not fit: a later version's values, not a torn file. Moving
            // it aside would make the next sync start from nothing.
            Err(source) if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() => {
                Err(StoreError::Unsupported { path, source })
            }
            Err(source) if self.read_only => Err(StoreError::Unreadable { path, source }),
            Err(source) => {
                let kept = self.keep_aside(&path)?;
                Err(StoreError::Corrupt { path, kept, source })
            }
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
        let mut text = serde_json::to_vec_pretty(state).map_err(|error| StoreError::Io {
            action: "write",
            path: self.path(),
            source: std::io::Error::other(error),
        })?;
        text.push(b'\n');
        gpu_host_probe::fs::remove_stale_temporaries(&self.dir, STATE_FILE);
        gpu_host_probe::fs::write_atomic(&self.dir, STATE_FILE, &text).map_err(|error| {
            StoreError::Io {
                action: error.action,
                path: error.path,
                source: error.source,
            }
        })
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
