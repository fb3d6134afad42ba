//! Where a host's machine lock and its record of writes to the cards live: the one rule, which
//! the lock ([`crate::lock`]) and the record ([`crate::writes`]) both ask, so they can never
//! disagree.
//!
//! **Over the machine's own sysfs** — a sysfs mount, the kernel's, wherever it is mounted —
//! the machine has one directory of machine locks: the user's default
//! ([`crate::machine_lock_dir`], `/run/gpu-host-probe` for root), and its lock there is
//! always `sys.lock` (a bind mount of `/sys` elsewhere is the same machine). A directory named
//! with [`Host::with_lock_dir`] is taken only when it is that directory, by whatever path
//! (the same directory on disk); any other is refused ([`LockError::SecondLockDir`], naming
//! both), since it would be a second "machine lock" and a second record of writes that
//! neither excludes nor sees the first. The one directory that is not the default and still
//! the machine's is the host's own seen at another path, from a process whose `/run` is not
//! the host's (a container with the host's `/run/gpu-host-probe` mounted elsewhere): the
//! caller says so by name ([`Host::with_machine_lock_dir`]), and it is taken as named.
//!
//! A pointer was weighed instead: every `Host` of the machine's sysfs recording, in the
//! default directory, which directory holds the machine's lock, following it, and refusing a
//! third. It is not what this does, for these reasons:
//!
//! - It decides by order: whether a toolstack naming its own directory is refused would depend
//!   on whether a boot-time sync ran before it since the boot. This rule is a function of the
//!   `Host` and the file system: every process gets the same answer every time.
//! - It goes stale: a pointer on `/run` outlives the process that wrote it, so a toolstack
//!   reconfigured to another directory is refused until a reboot or a hand removal, and moving
//!   the pointer while another process holds the old lock is itself a split.
//! - It does not reach the one case a second directory exists for: a pointer in the default
//!   directory is seen only by processes that share that directory, and a container's default
//!   is its own `/run` (which it would also need writable and private, for nothing).
//!
//! What it would add (a process naming no directory following one that did) is had here by
//! construction: a process naming none is at the machine's directory already, and one naming
//! another is refused before it takes anything.
//!
//! **Over a built tree** (any sysfs root that is not a sysfs mount: tests, examples,
//! `--sysfs-root` trees), the machine is the tree: its lock is named after the tree (as
//! [`crate::lock::machine_lock_path`] says) and kept beside it, in `gpu-host-probe` in the
//! directory that holds the tree (made private, 0700, as every directory of locks must be),
//! unless a directory is named. A tree is made and removed with its directory, and its lock
//! goes with it: nothing of a test or an example is left among the machine's locks (CI checks
//! `/run/gpu-host-probe` after the tests and the examples), and no tree's lock can meet the
//! machine's. A directory of its own rather than the tree's directory itself, since that one
//! is made with its maker's umask (a temporary directory is group-writable under umask 002)
//! and would be refused as not private; the tree's directory is never made (it is its
//! maker's), so a tree whose directory is absent has no lock. A tree right inside a shared
//! directory (`/tmp`) is better given a directory by name. A simulated host's lock is in its
//! own state directory, as before.
//!
//! [`Host::with_lock_dir`]: crate::host::Host::with_lock_dir
//! [`Host::with_machine_lock_dir`]: crate::host::Host::with_machine_lock_dir
//! [`LockError::SecondLockDir`]: crate::lock::LockError::SecondLockDir

use crate::host::{Host, LockDirAsked};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The root the machine's own sysfs names its lock after, wherever it is mounted.
const MACHINE_SYSFS: &str = "/sys";

/// The directory of a built tree's machine locks, beside the tree.
const TREE_LOCK_DIR: &str = "gpu-host-probe";

/// A host's machine lock: where it is, and whether its directory is made when absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MachineLock {
    /// The directory of machine locks it is in.
    pub(crate) dir: PathBuf,
    /// The lock file.
    pub(crate) path: PathBuf,
    /// Whether the directory is made (private) when absent: not when it would be beside a
    /// tree whose own directory is absent (that directory is its maker's to make).
    pub(crate) make_dir: bool,
}

/// A directory named over the machine's own sysfs that is not the machine's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The directory named.
    pub(crate) named: PathBuf,
    /// The machine's.
    pub(crate) machines: PathBuf,
    /// The host's sysfs root.
    pub(crate) sysfs_root: PathBuf,
    /// The machine lock as it would be in the directory named.
    pub(crate) path: PathBuf,
}

/// Where `host`'s machine lock is (its record of writes is beside it), or why the directory
/// named for it is refused.
pub(crate) fn machine_lock(host: &Host) -> Result<MachineLock, Refused> {
    let machine = is_machine_sysfs(host.sysfs_root());
    let root = if machine {
        PathBuf::from(MACHINE_SYSFS)
    } else {
        resolved(host.sysfs_root())
    };
    let (dir, make_dir) = if host.is_simulated() {
        (host.state_dir().to_path_buf(), true)
    } else {
        match (machine, host.lock_dir_asked()) {
            (true, LockDirAsked::Default) => (host.default_lock_dir(), true),
            (true, LockDirAsked::Named(named)) => {
                let machines = host.default_lock_dir();
                if !same_dir(named, &machines) {
                    return Err(Refused {
                        named: named.clone(),
                        machines,
                        sysfs_root: host.sysfs_root().to_path_buf(),
                        path: named.join(lock_name(&root, false)),
                    });
                }
                (named.clone(), true)
            }
            (true, LockDirAsked::TheMachines(dir))
            | (false, LockDirAsked::Named(dir) | LockDirAsked::TheMachines(dir)) => {
                (dir.clone(), true)
            }
            (false, LockDirAsked::Default) => {
                let holder = root.parent().unwrap_or(&root);
                (holder.join(TREE_LOCK_DIR), holder.is_dir())
            }
        }
    };
    let path = dir.join(lock_name(&root, host.is_simulated()));
    Ok(MachineLock {
        dir,
        path,
        make_dir,
    })
}

/// Whether `root` is a sysfs mount (the kernel's own view of this machine), not a built tree.
/// A root that cannot be looked at is no sysfs: as a tree its lock goes beside it, where
/// whatever fails (no directory there, one that is not private) refuses it.
pub(crate) fn is_machine_sysfs(root: &Path) -> bool {
    nix::sys::statfs::statfs(root)
        .is_ok_and(|fs| fs.filesystem_type() == nix::sys::statfs::SYSFS_MAGIC)
}

/// A path as it resolves: links and `..` followed when it exists, else its parent's resolved
/// with its name, else made absolute.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(real) = std::fs::canonicalize(path) {
        return real;
    }
    if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(real) = std::fs::canonicalize(parent) {
            return real.join(name);
        }
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Whether two paths name one directory: the same file on disk when both exist (a bind mount
/// of it too), else the same path once resolved.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => resolved(a) == resolved(b),
    }
}

/// The machine lock's file name for the sysfs root `root` (resolved): `/` becomes `-`, any byte
/// outside `[A-Za-z0-9._]` `\xNN`, as systemd-escape writes paths; a name too long for a file
/// ends in a hash of the whole; `simulated-` before it for a simulated host.
fn lock_name(root: &Path, simulated: bool) -> String {
    let mut name = String::new();
    if simulated {
        name.push_str("simulated-");
    }
    let text = root.to_string_lossy();
    let trimmed = text.trim_matches('/');
    if trimmed.is_empty() {
        name.push('-');
    }
    for (at, byte) in trimmed.bytes().enumerate() {
        match byte {
            b'/' => name.push('-'),
            b'.' if at == 0 => name.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || b == b'.' || b == b'_' => name.push(char::from(b)),
            b => name.push_str(&format!("\\x{b:02x}")),
        }
    }
    if name.len() > 200 {
        // FNV-1a over the whole path: stable across builds (a toolstack and mxctl, built apart,
        // must name one machine alike).
        let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        name.truncate(180);
        name.push_str(&format!("-{hash:016x}"));
    }
    name.push_str(".lock");
    name
}

/// Root's directory of machine locks.
pub const MACHINE_LOCK_DIR: &str = "/run/gpu-host-probe";

/// The directory of this user's machine locks: [`MACHINE_LOCK_DIR`] for root, else
/// `$XDG_RUNTIME_DIR/gpu-host-probe` when that is set to an absolute path, else
/// `gpu-host-probe-<uid>` in the temporary directory.
pub fn machine_lock_dir() -> PathBuf {
    let uid = nix::unistd::geteuid();
    if uid.is_root() {
        return PathBuf::from(MACHINE_LOCK_DIR);
    }
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(runtime) if runtime.is_absolute() => runtime.join("gpu-host-probe"),
        _ => std::env::temp_dir().join(format!("gpu-host-probe-{uid}")),
    }
}

// Where a host's machine locks are by default, and whether it is the machine, are this rule's.
impl Host {
    /// The directory this host takes for the user's default directory of machine locks.
    pub(crate) fn default_lock_dir(&self) -> PathBuf {
        self.default_lock_dir
            .clone()
            .unwrap_or_else(machine_lock_dir)
    }

    /// Whether the host's roots are the machine's own: its sysfs root a sysfs mount and its
    /// procfs root a procfs mount, wherever they are mounted, and the host no simulation. A host
    /// over a built tree (tests, examples, `--sysfs-root`) is not, and never runs the machine's
    /// own programs ([`crate::Program::for_host`]).
    pub fn is_machine(&self) -> bool {
        !self.is_simulated()
            && is_machine_sysfs(self.sysfs_root())
            && nix::sys::statfs::statfs(self.proc_root())
                .is_ok_and(|fs| fs.filesystem_type() == nix::sys::statfs::PROC_SUPER_MAGIC)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_machines_own_sysfs_is_a_sysfs_mount_and_a_directory_of_files_is_not() {
        assert!(
            is_machine_sysfs(Path::new("/sys")),
            "/sys is not sysfs here"
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_machine_sysfs(dir.path()));
        assert!(!is_machine_sysfs(&dir.path().join("absent")));
    }

    #[test]
    fn a_directory_not_yet_made_is_the_same_by_another_spelling_of_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("run")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("run"), dir.path().join("link")).unwrap();
        let one = dir.path().join("run/gpu-host-probe");
        assert!(same_dir(&one, &dir.path().join("link/gpu-host-probe")));
        assert!(!same_dir(&one, &dir.path().join("run/other")));
    }

    #[test]
    fn a_root_gives_its_lock_name_as_systemd_escapes_a_path() {
        assert_eq!(lock_name(Path::new("/sys"), false), "sys.lock");
        assert_eq!(lock_name(Path::new("/"), false), "-.lock");
        assert_eq!(
            lock_name(Path::new("/tmp/.x/a b"), true),
            "simulated-tmp-.x-a\\x20b.lock"
        );
        assert_eq!(lock_name(Path::new("/.hidden"), false), "\\x2ehidden.lock");
        let long = lock_name(&Path::new("/").join("d".repeat(300)), false);
        assert_eq!(long.len(), 180 + 17 + 5);
    }
}
