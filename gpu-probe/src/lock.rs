//! The host GPU lock, taken only through [`Host::lock`] and [`Host::try_lock`]: two exclusive
//! `flock`s, always in this order —
//!
//! 1. **the machine's**: a file named after the host's sysfs root in the directory of machine
//!    locks ([`machine_lock_path`]: `/run/gpu-host-probe/sys.lock` for root on the real `/sys`),
//!    so however many [`Host`] values a process or several processes make of one machine,
//!    whatever their state directories, they meet at one lock;
//! 2. **the state directory's** (`host-gpu.lock` in it), so two machines that share one state
//!    directory never write its state and journal at once.
//!
//! Every operation on the host's GPUs (a sync, a probe, a reset, a plan step, a layout apply)
//! holds it, so none runs inside another's window; what must only happen under it (a read of a
//! card, a write of the reset journal) asks for a `&HostLock`. Both directories must be private
//! ([`crate::trust::check_private_dir`]; created 0700), and each lock file is opened without
//! following a link and only when it is a regular file of this user. The machine lock's file
//! names its holder (pid and state directory), so a refusal says who holds the machine.
//!
//! **One machine, one directory.** Over the machine's own sysfs, every `Host` meets every other
//! whatever it names: the machine's lock (and its record of writes, beside it) is in the
//! user's default directory, a directory named with [`Host::with_lock_dir`] is taken only when
//! it is that one, any other is refused ([`LockError::SecondLockDir`]), and the one exception —
//! the host's directory seen from a container whose `/run` is not the host's — is named as the
//! machine's ([`Host::with_machine_lock_dir`]). A built tree's lock is kept beside the tree.
//! The rule, and why it is this one rather than a pointer kept in the default directory, is in
//! [`crate::rendezvous`].
//!
//! Root's machine locks live in `/run/gpu-host-probe`, which only root can write: another user
//! can neither hold nor plant them. Another user's live in `$XDG_RUNTIME_DIR/gpu-host-probe`
//! (else a private directory of theirs in the temporary directory): such a user reads cards but
//! resets and layouts need root, so the operations that change a GPU all meet at root's.
//!
//! [`Host`]: crate::host::Host
//! [`Host::lock`]: crate::host::Host::lock
//! [`Host::try_lock`]: crate::host::Host::try_lock
//! [`Host::with_lock_dir`]: crate::host::Host::with_lock_dir
//! [`Host::with_machine_lock_dir`]: crate::host::Host::with_machine_lock_dir

use crate::host::Host;
use crate::rendezvous::Refused;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The lock file's name inside the state directory.
pub const LOCK_FILE: &str = "host-gpu.lock";

/// The machine lock of a host: a file named after the host's sysfs root (resolved: `/sys`
/// gives `sys.lock`, `/tmp/x/sys` gives `tmp-x-sys.lock`; `/` becomes `-`, any byte outside
/// `[A-Za-z0-9._]` `\xNN`, as systemd-escape writes paths; a name too long for a file ends in
/// a hash of the whole; `simulated-` before it for a simulated host) in the host's directory of
/// machine locks ([`Host::lock_dir`]). Over the machine's own sysfs (a sysfs mount, wherever it
/// is mounted) it is always `sys.lock` in the machine's one directory, the user's default
/// ([`machine_lock_dir`]) or the one named as the machine's; over a built tree, in
/// `gpu-host-probe` beside the tree unless another is named. Refused
/// ([`LockError::SecondLockDir`]) when a directory named over the machine's own sysfs is not
/// the machine's.
///
/// [`machine_lock_dir`]: crate::machine_lock_dir
pub fn machine_lock_path(host: &Host) -> Result<PathBuf, LockError> {
    crate::rendezvous::machine_lock(host)
        .map(|lock| lock.path)
        .map_err(LockError::from)
}

/// How long a sync or a probe waits for another GPU operation to let go of the host lock (a
/// reset never waits: held, it is blocked).
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The held host lock; dropping it releases the lock. Made only by [`Host::lock`], so it always
/// belongs to one host's state directory ([`HostLock::state_dir`]).
///
/// [`Host::lock`]: crate::host::Host::lock
#[derive(Debug)]
pub struct HostLock {
    // Dropped in this order: the state directory's, then the machine's.
    _held: Flock<File>,
    _machine: Flock<File>,
    path: PathBuf,
    machine: PathBuf,
    host: Host,
    /// Serializes the record of writes between the threads of the holder (an apply writes its
    /// GPUs side by side under one lock): one read-modify-write at a time.
    pub(crate) writes: std::sync::Mutex<()>,
}

/// The lock could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another operation holds it (past the bounded wait, if there was one).
    #[error("the host GPU lock {} is held{}", path.display(), holder.map(|pid| format!(" by pid {pid}")).unwrap_or_default())]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// The holder's pid, as it wrote it in the file, when it reads.
        holder: Option<u32>,
    },
    /// Another operation holds this machine's GPU lock for another state directory (another
    /// `Host` of the same machine): its GPUs are in use (past the bounded wait).
    #[error(
        "the GPUs of this machine (sysfs {}) are held{}{}: the machine lock {} is taken",
        sysfs_root.display(),
        holder.map(|pid| format!(" by pid {pid}")).unwrap_or_default(),
        state_dir.as_ref().map(|dir| format!(" for the state directory {}", dir.display())).unwrap_or_default(),
        path.display()
    )]
    MachineBusy {
        /// The machine lock file.
        path: PathBuf,
        /// The machine's sysfs root.
        sysfs_root: PathBuf,
        /// The holder's pid, when its note reads.
        holder: Option<u32>,
        /// The state directory the holder works for, when its note reads.
        state_dir: Option<PathBuf>,
    },
    /// Over the machine's own sysfs, a directory of machine locks was named
    /// ([`Host::with_lock_dir`]) that is not the machine's: a second directory would be a
    /// second machine lock and a second record of writes, which neither exclude nor see the
    /// machine's. A directory that is the machine's seen at another path (a container's view
    /// of the host's) is named as such ([`Host::with_machine_lock_dir`]).
    #[error(
        "refusing the lock directory {} for the machine's own sysfs {}: the machine's GPU lock and record of writes are in {}, where every other process of the machine meets them (a directory that is the machine's seen at another path is named as the machine's)",
        named.display(),
        sysfs_root.display(),
        machines.display()
    )]
    SecondLockDir {
        /// The directory named.
        named: PathBuf,
        /// The machine's directory of machine locks (the user's default).
        machines: PathBuf,
        /// The machine's sysfs root, as the host names it.
        sysfs_root: PathBuf,
    },
    /// The wait for the lock was cancelled ([`Host::lock_unless`]).
    #[error("the wait for the host GPU lock {} was cancelled", path.display())]
    Cancelled {
        /// The lock file waited for.
        path: PathBuf,
    },
    /// The state directory is not private (another user could change what is in it).
    #[error(transparent)]
    UnsafeDir(#[from] crate::trust::UnsafeDir),
    /// The lock file is a link, not a regular file, or another user's: never opened or
    /// truncated.
    #[error("refusing the host GPU lock {}: {why}", path.display())]
    Unsafe {
        /// The lock file.
        path: PathBuf,
        /// What it is.
        why: String,
    },
    /// The lock file or its directory could not be opened or created.
    #[error("cannot open the host GPU lock {}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl LockError {
    /// Whether another operation holds the lock (of the state directory or of the machine):
    /// what a caller that does not wait reports as `lock_busy`.
    pub fn is_busy(&self) -> bool {
        matches!(self, Self::Busy { .. } | Self::MachineBusy { .. })
    }
}

impl HostLock {
    /// Takes the lock, waiting up to `wait` for a holder to let go; a zero `wait` tries once.
    pub(crate) fn acquire(
        host: &Host,
        wait: Duration,
        cancel: Option<&crate::Cancel>,
    ) -> Result<HostLock, LockError> {
        // A directory refused is refused before anything is made.
        let crate::rendezvous::MachineLock {
            dir,
            path: machine,
            make_dir,
        } = crate::rendezvous::machine_lock(host).map_err(LockError::from)?;
        let state_dir = host.state_dir();
        let path = state_dir.join(LOCK_FILE);
        crate::trust::check_private_dir(state_dir, true)?;
        crate::trust::check_private_dir(&dir, make_dir)?;
        let give_up = Instant::now() + wait;
        let note = format!("{}\n{}\n", std::process::id(), state_dir.display());
        let machine_held = match take(&machine, give_up, &note, cancel)? {
            Ok(held) => held,
            Err(mut file) => {
                let (holder, dir) = machine_holder(&mut file);
                return Err(if dir.as_deref() == Some(state_dir) {
                    LockError::Busy { path, holder }
                } else {
                    LockError::MachineBusy {
                        path: machine,
                        sysfs_root: host.sysfs_root().to_path_buf(),
                        holder,
                        state_dir: dir,
                    }
                });
            }
        };
        let held = match take(&path, give_up, &format!("{}\n", std::process::id()), cancel)? {
            Ok(held) => held,
            Err(mut file) => {
                return Err(LockError::Busy {
                    holder: holder(&mut file),
                    path,
                });
            }
        };
        Ok(HostLock {
            _held: held,
            _machine: machine_held,
            path,
            machine,
            host: host.clone(),
            writes: std::sync::Mutex::new(()),
        })
    }

    /// The machine's lock file (see [`machine_lock_path`]).
    pub fn machine_path(&self) -> &Path {
        &self.machine
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The state directory the lock guards: the one where whatever must be written under it
    /// (the reset journal, the state file) lives.
    pub fn state_dir(&self) -> &Path {
        self.host.state_dir()
    }

    /// The host whose lock this is: what runs under the lock (a sync, a reset, a layout) takes
    /// its sysfs, procfs and state directory from here, so it cannot be handed another host's.
    pub fn host(&self) -> &Host {
        &self.host
    }
}

/// Takes the lock of `path`, trying until `give_up`, and notes `note` in it once taken; the
/// open file of a lock still held at `give_up`, to read its holder from.
fn take(
    path: &Path,
    give_up: Instant,
    note: &str,
    cancel: Option<&crate::Cancel>,
) -> Result<Result<Flock<File>, File>, LockError> {
    let mut pause = Duration::from_millis(5);
    loop {
        if crate::cancel::cancelled(cancel) {
            return Err(LockError::Cancelled {
                path: path.to_path_buf(),
            });
        }
        let file = open_lock(path)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut held) => {
                // Who holds it, for the message another process gives when it is busy.
                let noted = held
                    .set_len(0)
                    .and_then(|()| held.rewind())
                    .and_then(|()| held.write_all(note.as_bytes()));
                if let Err(error) = noted {
                    tracing::debug!("cannot note the lock holder in {}: {error}", path.display());
                }
                return Ok(Ok(held));
            }
            Err((file, Errno::EWOULDBLOCK)) => {
                if Instant::now() >= give_up {
                    return Ok(Err(file));
                }
                std::thread::sleep(pause.min(give_up.saturating_duration_since(Instant::now())));
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Err((_, errno)) => {
                return Err(LockError::Io {
                    path: path.to_path_buf(),
                    source: std::io::Error::from(errno),
                });
            }
        }
    }
}

/// The holder a machine lock's note names: its pid, and the state directory it works for.
fn machine_holder(file: &mut File) -> (Option<u32>, Option<PathBuf>) {
    let mut text = String::new();
    if file
        .rewind()
        .and_then(|()| file.read_to_string(&mut text))
        .is_err()
    {
        return (None, None);
    }
    let mut lines = text.lines();
    let pid = lines.next().and_then(|line| line.trim().parse().ok());
    let dir = lines
        .next()
        .filter(|line| !line.is_empty())
        .map(PathBuf::from);
    (pid, dir)
}

/// Opens (creating, mode 0600) the lock file, never through a link, and only when it is a
/// regular file of this user: it is truncated and written once taken.
fn open_lock(path: &Path) -> Result<File, LockError> {
    use std::os::unix::fs::OpenOptionsExt;
    let unsafe_lock = |why: String| LockError::Unsafe {
        path: path.to_path_buf(),
        why,
    };
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(|source| {
            if source.raw_os_error() == Some(Errno::ELOOP as i32) {
                unsafe_lock(crate::fs::A_LINK.to_owned())
            } else {
                LockError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
    let metadata = file.metadata().map_err(|source| LockError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    crate::fs::check_own(&metadata).map_err(|why| unsafe_lock(why.to_string()))?;
    Ok(file)
}

fn holder(file: &mut File) -> Option<u32> {
    machine_holder(file).0
}

impl From<Refused> for LockError {
    fn from(refused: Refused) -> Self {
        LockError::SecondLockDir {
            named: refused.named,
            machines: refused.machines,
            sysfs_root: refused.sysfs_root,
        }
    }
}

// A host's locks are taken here: `host` holds what a host is, this module how it is locked.
impl Host {
    /// The directory of the machine's locks (and of its record of writes) this host uses: a
    /// simulated host's own state directory; over the machine's own sysfs, the user's default
    /// ([`crate::machine_lock_dir`]) or the one named as the machine's; over a built
    /// tree, the one named, else `gpu-host-probe` beside the tree. Refused
    /// ([`LockError::SecondLockDir`]) when a directory named over the machine's own sysfs is
    /// not the machine's.
    pub fn lock_dir(&self) -> Result<PathBuf, LockError> {
        crate::rendezvous::machine_lock(self)
            .map(|lock| lock.dir)
            .map_err(LockError::from)
    }

    /// Takes the host GPU lock — the machine's one GPU lock, then the state directory's —,
    /// waiting up to `wait` for a holder to let go (a zero `wait` tries once). The state
    /// directory is created private (0700) when absent, and refused when another user could
    /// change it; so is the directory of machine locks ([`crate::lock::machine_lock_path`];
    /// a built tree's own directory is not created). A directory of machine locks named over
    /// the machine's own sysfs that is not the machine's is refused before anything is taken
    /// ([`LockError::SecondLockDir`]).
    pub fn lock(&self, wait: Duration) -> Result<HostLock, LockError> {
        HostLock::acquire(self, wait, None)
    }

    /// [`Host::lock`], giving up at once when `cancel` (if any: `None` is [`Host::lock`]) is
    /// triggered while it waits ([`LockError::Cancelled`]).
    pub fn lock_unless(
        &self,
        wait: Duration,
        cancel: Option<&crate::Cancel>,
    ) -> Result<HostLock, LockError> {
        HostLock::acquire(self, wait, cancel)
    }

    /// Takes the host GPU lock without waiting: held by another, it is [`LockError::Busy`] (or
    /// [`LockError::MachineBusy`], held for another state directory of the machine).
    pub fn try_lock(&self) -> Result<HostLock, LockError> {
        self.lock(Duration::ZERO)
    }
}
