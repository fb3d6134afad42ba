//! What root may trust: a program or a file that no other user can change, along its whole
//! path — the rule of OpenSSH's `StrictModes` and of sudo. The file, and every directory on the
//! way to it (the path as given and as resolved through links), must be owned by root or by
//! the user running this process, and writable by neither group nor others; a directory
//! writable by others is allowed only when it is root's and sticky (`/tmp`), where nobody can
//! replace another's entry.
//!
//! [`check_trusted`] is the one check: the runner applies it to every program it starts (so
//! the helper, `mx-smi`, `nvidia-smi` and the link commands are never run when someone else could
//! have written them), and `mxctl` to its config file. [`check_private_dir`] is the state
//! directory's rule: owned by this user, writable by nobody else.

use nix::unistd::{Uid, geteuid};
use std::collections::HashMap;
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const GROUP_WRITE: u32 = 0o020;
const OTHER_WRITE: u32 = 0o002;
const STICKY: u32 = 0o1000;

/// Why a path cannot be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrustFault {
    /// It is owned by another user.
    OwnedBy(u32),
    /// Its group may write it.
    WritableByGroup,
    /// Others may write it.
    WritableByOthers,
    /// A directory on its path is owned by another user.
    InDirectoryOwnedBy {
        /// The directory.
        dir: PathBuf,
        /// Its owner.
        uid: u32,
    },
    /// A directory on its path may be written by its group.
    InDirectoryWritableByGroup(PathBuf),
    /// A directory on its path may be written by others (and is not root's and sticky).
    InDirectoryWritableByOthers(PathBuf),
    /// It could not be looked at.
    Unreadable(String),
}

impl fmt::Display for TrustFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OwnedBy(uid) => write!(f, "owned by uid {uid}"),
            Self::WritableByGroup => f.write_str("writable by its group"),
            Self::WritableByOthers => f.write_str("writable by others"),
            Self::InDirectoryOwnedBy { dir, uid } => {
                write!(f, "in a directory owned by uid {uid}: {}", dir.display())
            }
            Self::InDirectoryWritableByGroup(dir) => {
                write!(f, "in a directory writable by its group: {}", dir.display())
            }
            Self::InDirectoryWritableByOthers(dir) => {
                write!(f, "in a directory writable by others: {}", dir.display())
            }
            Self::Unreadable(why) => write!(f, "cannot be looked at: {why}"),
        }
    }
}

/// A path root must not trust.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is not safe: {fault}", path.display())]
#[non_exhaustive]
pub struct Untrusted {
    /// The path as given.
    pub path: PathBuf,
    /// What is wrong.
    pub fault: TrustFault,
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || Uid::from_raw(uid) == geteuid()
}

fn metadata(path: &Path) -> Result<std::fs::Metadata, TrustFault> {
    std::fs::symlink_metadata(path).map_err(|error| TrustFault::Unreadable(error.to_string()))
}

/// How long a directory judged safe stays judged, in this process: the directories on a
/// program's path do not change under one run (a probe of many cards, a reset's many tool
/// runs), and a process that lives longer (a toolstack) judges them again after this.
pub const DIR_VERDICT_TTL: Duration = Duration::from_secs(5);

/// The directories judged safe lately, with when. Only safe verdicts are kept (a refused
/// directory is judged again at once, so fixing it takes effect), and the file itself is never
/// kept: it is checked on every call.
fn safe_dirs() -> &'static Mutex<HashMap<PathBuf, Instant>> {
    static SAFE: OnceLock<Mutex<HashMap<PathBuf, Instant>>> = OnceLock::new();
    SAFE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// [`check_dir`], once per directory per [`DIR_VERDICT_TTL`].
fn check_dir_cached(dir: &Path) -> Result<(), TrustFault> {
    let now = Instant::now();
    let fresh = safe_dirs().lock().ok().is_some_and(|safe| {
        safe.get(dir)
            .is_some_and(|at| now.saturating_duration_since(*at) < DIR_VERDICT_TTL)
    });
    if fresh {
        return Ok(());
    }
    check_dir(dir)?;
    if let Ok(mut safe) = safe_dirs().lock() {
        if safe.len() > 1024 {
            safe.clear();
        }
        safe.insert(dir.to_path_buf(), now);
    }
    Ok(())
}

/// Checks one directory on the way to a file. A link on the way (`/bin` → `usr/bin`) has no
/// permissions of its own: the directories it leads to are checked on the resolved path.
fn check_dir(dir: &Path) -> Result<(), TrustFault> {
    let metadata = metadata(dir)?;
    if metadata.file_type().is_symlink() {
        return Ok(());
    }
    let mode = metadata.mode();
    if !trusted_owner(metadata.uid()) {
        return Err(TrustFault::InDirectoryOwnedBy {
            dir: dir.to_path_buf(),
            uid: metadata.uid(),
        });
    }
    let shared_tmp = metadata.uid() == 0 && mode & STICKY != 0;
    if mode & OTHER_WRITE != 0 && !shared_tmp {
        return Err(TrustFault::InDirectoryWritableByOthers(dir.to_path_buf()));
    }
    if mode & GROUP_WRITE != 0 && !shared_tmp {
        return Err(TrustFault::InDirectoryWritableByGroup(dir.to_path_buf()));
    }
    Ok(())
}

/// Every directory above `path` (which must be absolute), from the root down.
fn ancestors(path: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut current = PathBuf::new();
    let components: Vec<Component<'_>> = path.components().collect();
    for component in components.iter().take(components.len().saturating_sub(1)) {
        current.push(component);
        dirs.push(current.clone());
    }
    dirs
}

/// Checks that `path` (a program or a file root reads) and every directory on its way, as
/// given and as resolved through links, is owned by root or by this user and writable by
/// neither group nor others (a root-owned sticky directory excepted).
pub fn check_trusted(path: &Path) -> Result<(), Untrusted> {
    let untrusted = |fault| Untrusted {
        path: path.to_path_buf(),
        fault,
    };
    let absolute = std::path::absolute(path)
        .map_err(|error| untrusted(TrustFault::Unreadable(error.to_string())))?;
    let resolved = std::fs::canonicalize(&absolute)
        .map_err(|error| untrusted(TrustFault::Unreadable(error.to_string())))?;
    let mut dirs = ancestors(&absolute);
    for dir in ancestors(&resolved) {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for dir in &dirs {
        check_dir_cached(dir).map_err(untrusted)?;
    }
    let metadata = std::fs::metadata(&resolved)
        .map_err(|error| untrusted(TrustFault::Unreadable(error.to_string())))?;
    if !trusted_owner(metadata.uid()) {
        return Err(untrusted(TrustFault::OwnedBy(metadata.uid())));
    }
    if metadata.mode() & OTHER_WRITE != 0 {
        return Err(untrusted(TrustFault::WritableByOthers));
    }
    if metadata.mode() & GROUP_WRITE != 0 {
        return Err(untrusted(TrustFault::WritableByGroup));
    }
    Ok(())
}

/// A state directory another user could change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UnsafeDir {
    /// It is owned by another user, or group or others may write it.
    #[error("the state directory {} is not private: {fault}", path.display())]
    Shared {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        fault: TrustFault,
    },
    /// It is not a directory (a link, a file).
    #[error("the state directory {} is not a directory of its own (a link or a file)", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// It could not be created or looked at.
    #[error("cannot create or look at the state directory {}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Checks the state directory `dir`, creating it (mode 0700) when `create` and it is absent:
/// it must be a directory (not a link) owned by this user, writable by neither group nor
/// others. An absent directory that is not to be created passes (there is nothing to read).
pub fn check_private_dir(dir: &Path, create: bool) -> Result<(), UnsafeDir> {
    let metadata = match std::fs::symlink_metadata(dir) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if !create {
                return Ok(());
            }
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| UnsafeDir::Io {
                    path: dir.to_path_buf(),
                    source,
                })?;
            std::fs::symlink_metadata(dir).map_err(|source| UnsafeDir::Io {
                path: dir.to_path_buf(),
                source,
            })?
        }
        Err(source) => {
            return Err(UnsafeDir::Io {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    if !metadata.is_dir() {
        return Err(UnsafeDir::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let shared = |fault| UnsafeDir::Shared {
        path: dir.to_path_buf(),
        fault,
    };
    if Uid::from_raw(metadata.uid()) != geteuid() {
        return Err(shared(TrustFault::OwnedBy(metadata.uid())));
    }
    if metadata.mode() & OTHER_WRITE != 0 {
        return Err(shared(TrustFault::WritableByOthers));
    }
    if metadata.mode() & GROUP_WRITE != 0 {
        return Err(shared(TrustFault::WritableByGroup));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The file `name` in `dir`, holding `text`, of permissions `mode`.
    fn file_in(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        chmod(&file, mode);
        file
    }

    /// Why `path` is not trusted (the tests of a refusal compare only the fault).
    fn fault_of(path: &Path) -> TrustFault {
        check_trusted(path).unwrap_err().fault
    }

    #[test]
    fn a_file_of_this_user_in_private_directories_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path(), "tool", "#!/bin/sh\n", 0o755);
        assert_eq!(check_trusted(&file), Ok(()));
    }

    #[test]
    fn a_directory_refused_is_judged_again_at_once_so_fixing_it_takes_effect() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("bin");
        std::fs::create_dir(&sub).unwrap();
        let file = file_in(&sub, "tool", "#!/bin/sh\n", 0o755);
        chmod(&sub, 0o777);
        assert_eq!(
            fault_of(&file),
            TrustFault::InDirectoryWritableByOthers(sub.clone())
        );
        chmod(&sub, 0o755);
        assert_eq!(check_trusted(&file), Ok(()));
    }

    #[test]
    fn the_file_itself_is_checked_on_every_call_though_its_directories_were_judged() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path(), "tool", "#!/bin/sh\n", 0o755);
        assert_eq!(check_trusted(&file), Ok(()));
        chmod(&file, 0o775);
        assert_eq!(fault_of(&file), TrustFault::WritableByGroup);
    }

    #[test]
    fn a_file_writable_by_others_or_its_group_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let file = file_in(dir.path(), "tool", "", 0o757);
        assert_eq!(fault_of(&file), TrustFault::WritableByOthers);
        chmod(&file, 0o775);
        assert_eq!(fault_of(&file), TrustFault::WritableByGroup);
    }

    #[test]
    fn a_directory_writable_by_others_on_the_way_is_not_unless_root_and_sticky() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        let file = shared.join("tool");
        std::fs::write(&file, "").unwrap();
        chmod(&shared, 0o777);
        let error = check_trusted(&file).unwrap_err();
        assert_eq!(
            error.fault,
            TrustFault::InDirectoryWritableByOthers(shared.clone())
        );
        assert!(
            error
                .to_string()
                .contains("in a directory writable by others"),
            "{error}"
        );
        chmod(&shared, 0o1777);
        let sticky = check_trusted(&file);
        if geteuid().is_root() {
            assert_eq!(sticky, Ok(()));
        } else {
            assert!(sticky.is_err(), "a sticky directory that is not root's");
        }
    }

    #[test]
    fn a_link_is_checked_where_it_lies_and_where_it_leads() {
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        let target = open.join("tool");
        std::fs::write(&target, "").unwrap();
        chmod(&open, 0o777);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(matches!(
            fault_of(&link),
            TrustFault::InDirectoryWritableByOthers(_)
        ));
    }

    #[test]
    fn a_private_state_directory_is_created_0700_and_a_shared_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("a/state");
        check_private_dir(&state, true).unwrap();
        let mode = std::fs::metadata(&state).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        chmod(&state, 0o1777);
        let error = check_private_dir(&state, false).unwrap_err();
        assert!(error.to_string().contains("is not private"), "{error}");
    }

    #[test]
    fn a_state_directory_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("state");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(matches!(
            check_private_dir(&link, true),
            Err(UnsafeDir::NotADirectory { .. })
        ));
    }
}
