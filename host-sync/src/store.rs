//! The state store: a trait, so a toolstack keeps the fields in its own database, and the
//! embedded default, one JSON file written atomically.

use crate::state::{HostState, SCHEMA};
use std::path::{Path, PathBuf};

/// Where a host's state is kept.
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

/// A store in memory, for tests and for embedders that keep the state themselves.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    /// What was last saved.
    pub state: Option<HostState>,
    /// How many saves were made.
    pub saves: usize,
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
