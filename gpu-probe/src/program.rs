//! [`Program`]: a program root runs that acts on the machine itself — NVML through the
//! partition helper, a GPU's SR-IOV functions through `sriov-manage`, its driver through
//! `modprobe` — whatever a [`Host`]'s roots say. A `Host` built over a test tree reads and
//! writes that tree's files, but a program finds the machine's GPUs by itself: run on such a
//! host, the machine's own program would change the real machine under a test. So a program is
//! either the machine's own, found where its vendor installs it ([`Program::installed`]), which
//! only a host whose roots are the machine's may run, or one the caller names for the host it
//! built ([`Program::named`]: a fake that answers for its tree, a wrapper): nothing defaults
//! silently ([`Program::for_host`]). Either way root runs it only when nobody else can change
//! it ([`crate::trust::check_trusted`]).

use crate::host::Host;
use crate::trust::{Untrusted, check_trusted};
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a program comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The machine's own, at the path its vendor installs it: a host whose roots are not the
    /// machine's never runs it.
    Installed,
    /// Named by the caller, for the host it built (or for the machine, at another path).
    Named,
}

/// A program that acts on the machine itself, with where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    name: &'static str,
    path: PathBuf,
    origin: Origin,
}

impl Program {
    /// The machine's own `name`, at `path` where its vendor installs it.
    pub fn installed(name: &'static str, path: impl Into<PathBuf>) -> Self {
        Self {
            name,
            path: path.into(),
            origin: Origin::Installed,
        }
    }

    /// `name` at `path`, as the caller names it.
    pub fn named(name: &'static str, path: impl Into<PathBuf>) -> Self {
        Self {
            name,
            path: path.into(),
            origin: Origin::Named,
        }
    }

    /// What it is (`sriov-manage`, `modprobe`, `gpu-partition-helper`), for people.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where it comes from.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The same program at `path`, named by the caller.
    pub fn at(&self, path: impl Into<PathBuf>) -> Self {
        Self::named(self.name, path)
    }

    /// Whether `host` may run it: the machine's own only on a host whose roots are the
    /// machine's ([`Host::is_machine`]); then only when root may trust it. The one rule every
    /// side of a write asks before its first write.
    pub fn for_host(&self, host: &Host) -> Result<&Path, ProgramRefused> {
        self.allowed_on(host)?;
        check_trusted(&self.path).map_err(|source| ProgramRefused::Untrusted {
            program: self.clone(),
            source,
        })?;
        Ok(&self.path)
    }

    /// Whether `host` may run it as far as its roots say (its trust not looked at): the
    /// machine's own only on a host whose roots are the machine's.
    pub fn allowed_on(&self, host: &Host) -> Result<(), ProgramRefused> {
        if self.origin == Origin::Installed && !host.is_machine() {
            return Err(ProgramRefused::NotThisHosts {
                program: self.clone(),
                sysfs_root: host.sysfs_root().to_path_buf(),
                proc_root: host.proc_root().to_path_buf(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name, self.path.display())
    }
}

/// Why a host may not run a program.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramRefused {
    /// The machine's own program, on a host whose roots are not the machine's: it would act
    /// on the real machine, not on the host's tree.
    #[error(
        "{program} is the machine's own, and this host's roots (sysfs {}, procfs {}) are not \
         the machine's: name one made for this host",
        sysfs_root.display(),
        proc_root.display()
    )]
    NotThisHosts {
        /// The program.
        program: Program,
        /// The host's sysfs root.
        sysfs_root: PathBuf,
        /// The host's procfs root.
        proc_root: PathBuf,
    },
    /// Root may not trust it: someone else can change it, or it is not there.
    #[error("{program} may not be run")]
    Untrusted {
        /// The program.
        program: Program,
        /// Why.
        #[source]
        source: Untrusted,
    },
}

impl ProgramRefused {
    /// The program refused.
    pub fn program(&self) -> &Program {
        match self {
            Self::NotThisHosts { program, .. } | Self::Untrusted { program, .. } => program,
        }
    }
}
