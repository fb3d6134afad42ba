//! [`Host`]: one host as every GPU operation sees it. Its state directory holds the state-
//! directory lock, the state file, the reset journal and the simulated sub-state; beside it are
//! the roots of sysfs and procfs, and the machine's one GPU lock is named after its sysfs root
//! ([`crate::lock`]). The sync, the probe, a reset, a plan step and a layout apply all take a
//! `Host`, and the lock is taken only through it: however many `Host` values a process or
//! several processes make of one machine, whatever their state directories (and over the
//! machine's own sysfs, whatever directory of machine locks they name: a second one is refused,
//! [`crate::rendezvous`]), two operations on its GPUs always meet at the same lock.

use crate::boot::Boot;
use crate::trust::{UnsafeDir, check_private_dir};
use std::path::{Path, PathBuf};

/// Where the state of simulations lives inside a state directory: a simulated reset touches no
/// GPU, so its lock and journal stay apart from the real ones.
pub const SIMULATED_DIR: &str = "simulated";

/// One host: its state directory, where its sysfs and procfs are, and the directory of the
/// machine's locks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    state_dir: PathBuf,
    sysfs_root: PathBuf,
    proc_root: PathBuf,
    /// The directory of machine locks, as the caller named it (or not).
    lock_dir: LockDirAsked,
    /// The directory this host takes for the user's default directory of machine locks; `None`
    /// is the user's own ([`crate::machine_lock_dir`]). Set only by the test doubles, so
    /// the rules of the machine's own sysfs are tested without the machine's locks.
    pub(crate) default_lock_dir: Option<PathBuf>,
    /// A simulation of the machine: its machine lock is apart from the real one.
    simulated: bool,
}

/// The directory of machine locks a caller named for a host ([`crate::rendezvous`] decides
/// what each means).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockDirAsked {
    /// None: the machine's over its own sysfs, the tree's own over a built tree.
    Default,
    /// This one ([`Host::with_lock_dir`]): over the machine's own sysfs, only when it is the
    /// machine's.
    Named(PathBuf),
    /// This one, as the machine's own seen at another path ([`Host::with_machine_lock_dir`]).
    TheMachines(PathBuf),
}

impl Host {
    /// The host whose state is kept in `state_dir`, with the real `/sys` and `/proc`.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            state_dir: state_dir.into(),
            sysfs_root: PathBuf::from("/sys"),
            proc_root: PathBuf::from("/proc"),
            lock_dir: LockDirAsked::Default,
            default_lock_dir: None,
            simulated: false,
        }
    }

    /// The same host with its machine's locks (and its record of writes to the cards) in `dir`
    /// instead of its default: for a host over a built sysfs tree (tests), whose default is
    /// `gpu-host-probe` beside the tree. Over the machine's own sysfs the machine has
    /// one directory, the user's default (`/run/gpu-host-probe` for root), and `dir` is taken
    /// only when it is that directory (by any path): any other is refused when the lock is
    /// taken ([`LockError::SecondLockDir`]), since a second would be a second lock and a
    /// second record of writes for one machine. A toolstack whose `/run` is not the host's (a
    /// container with the host's directory mounted elsewhere) names it with
    /// [`Host::with_machine_lock_dir`]. Like the default, `dir` must be private (0700, the
    /// caller's own; created so when absent), so another user's processes are refused it
    /// rather than sharing it.
    ///
    /// [`LockError::SecondLockDir`]: crate::LockError::SecondLockDir
    pub fn with_lock_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.lock_dir = LockDirAsked::Named(dir.into());
        self
    }

    /// The same host with its machine's locks (and its record of writes to the cards) in
    /// `dir`, which the caller declares to be the machine's own directory of machine locks
    /// seen at another path: the host's `/run/gpu-host-probe` mounted into a container whose
    /// own `/run` is not the host's. It is taken as named, even though the `Host`s here that
    /// name nothing use the user's default: every process that uses the machine's GPUs from
    /// there must name it so, or they do not exclude each other. Over a built tree it is
    /// [`Host::with_lock_dir`]. It must be private as the default is, and run as the same user
    /// as the host's processes (root, for mxctl's).
    pub fn with_machine_lock_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.lock_dir = LockDirAsked::TheMachines(dir.into());
        self
    }

    /// What the caller named for the directory of machine locks.
    pub(crate) fn lock_dir_asked(&self) -> &LockDirAsked {
        &self.lock_dir
    }

    /// The same host taking `dir` for the user's default directory of machine locks: for the
    /// test doubles only ([`crate::test_util::machine_host`]).
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn with_default_lock_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.default_lock_dir = Some(dir.into());
        self
    }

    /// The same host with sysfs at `root` (a built tree in tests).
    pub fn with_sysfs_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.sysfs_root = root.into();
        self
    }

    /// The same host with procfs at `root`.
    pub fn with_proc_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.proc_root = root.into();
        self
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The root of sysfs (`/sys`).
    pub fn sysfs_root(&self) -> &Path {
        &self.sysfs_root
    }

    /// The root of procfs (`/proc`).
    pub fn proc_root(&self) -> &Path {
        &self.proc_root
    }

    /// The simulated host beside this one: its state directory is [`SIMULATED_DIR`] inside
    /// this one's, and so is its machine lock (and its record of writes), so a simulation never
    /// takes the real lock, never writes the real journal, and never touches the directory of
    /// machine locks.
    pub fn simulated(&self) -> Host {
        Self {
            state_dir: self.state_dir.join(SIMULATED_DIR),
            simulated: true,
            ..self.clone()
        }
    }

    /// Whether this is a simulated host ([`Host::simulated`]).
    pub fn is_simulated(&self) -> bool {
        self.simulated
    }

    /// The boot the host runs now, read from its procfs.
    pub fn boot(&self) -> Boot {
        Boot::read(&self.proc_root)
    }

    /// Checks that the state directory is private, creating it (0700) when `create` and it is
    /// absent; an absent directory not to be created passes (there is nothing in it to read).
    pub fn check_state_dir(&self, create: bool) -> Result<(), UnsafeDir> {
        check_private_dir(&self.state_dir, create)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_simulated_host_keeps_its_state_inside_the_real_one_and_its_roots() {
        let host = Host::new("/var/lib/x").with_sysfs_root("/t/sys");
        let simulated = host.simulated();
        assert_eq!(simulated.state_dir(), Path::new("/var/lib/x/simulated"));
        assert_eq!(simulated.sysfs_root(), Path::new("/t/sys"));
        assert_eq!(simulated.proc_root(), Path::new("/proc"));
    }
}
