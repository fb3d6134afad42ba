//! The host GPU lock: an exclusive `flock` on a file in a [`Host`]'s state directory, taken
//! only through [`Host::lock`] and [`Host::try_lock`]. Every operation on the host's GPUs (a
//! sync, a probe, a reset, a plan step) holds it, so none runs inside another's window; what
//! must only happen under it (a read of a card, a write of the reset journal) asks for a
//! `&HostLock`. The state directory must be private ([`crate::trust::check_private_dir`];
//! created 0700), and the lock file is opened without following a link and only when it is a
//! regular file of this user.
//!
//! [`Host`]: crate::host::Host
//! [`Host::lock`]: crate::host::Host::lock
//! [`Host::try_lock`]: crate::host::Host::try_lock

use crate::host::Host;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The lock file's name inside the state directory.
pub const LOCK_FILE: &str = "host-gpu.lock";

/// How long a sync or a probe waits for another GPU operation to let go of the host lock (a
/// reset never waits: held, it is blocked).
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The held host lock; dropping it releases the lock. Made only by [`Host::lock`], so it always
/// belongs to one host's state directory ([`HostLock::state_dir`]).
///
/// [`Host::lock`]: crate::host::Host::lock
#[derive(Debug)]
pub struct HostLock {
    _held: Flock<File>,
    path: PathBuf,
    host: Host,
}

/// The lock could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another process holds it (past the bounded wait, if there was one).
    #[error("the host GPU lock {} is held{}", path.display(), holder.map(|pid| format!(" by pid {pid}")).unwrap_or_default())]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// The holder's pid, as it wrote it in the file, when it reads.
        holder: Option<u32>,
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

impl HostLock {
    /// Takes the lock, waiting up to `wait` for a holder to let go; a zero `wait` tries once.
    pub(crate) fn acquire(host: &Host, wait: Duration) -> Result<HostLock, LockError> {
        let state_dir = host.state_dir();
        let path = state_dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        crate::trust::check_private_dir(state_dir, true)?;
        let give_up = Instant::now() + wait;
        let mut pause = Duration::from_millis(5);
        loop {
            let file = open_lock(&path)?;
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(mut held) => {
                    // Who holds it, for the message another process gives when it is busy.
                    let pid = std::process::id();
                    let noted = held
                        .set_len(0)
                        .and_then(|()| held.rewind())
                        .and_then(|()| writeln!(held, "{pid}"));
                    if let Err(error) = noted {
                        tracing::debug!(
                            "cannot note the lock holder in {}: {error}",
                            path.display()
                        );
                    }
                    return Ok(HostLock {
                        _held: held,
                        path,
                        host: host.clone(),
                    });
                }
                Err((mut file, Errno::EWOULDBLOCK)) => {
                    if Instant::now() >= give_up {
                        return Err(LockError::Busy {
                            holder: holder(&mut file),
                            path,
                        });
                    }
                    std::thread::sleep(
                        pause.min(give_up.saturating_duration_since(Instant::now())),
                    );
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
            }
        }
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
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}
