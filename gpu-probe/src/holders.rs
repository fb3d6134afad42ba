//! Who holds a device file open: every process whose `<proc-root>/<pid>/fd/*` links to it. The
//! idle test of every vendor's side — the NVIDIA, AMD and PCI reset backends, a vGPU's VFs, an
//! AMD layout's GPUs — (a module's use count or a vendor tool's process list misses the holders
//! that matter: Fabric Manager, persistence daemons, a VMM's VFIO fd).

use crate::os_error::OsError;
use std::path::{Path, PathBuf};

/// A process that holds one of the files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Holder {
    /// Its pid.
    pub pid: u32,
    /// Its name (`comm`); `None` when it ended before it could be read.
    pub name: Option<String>,
    /// The file it holds.
    pub file: PathBuf,
}

impl Holder {
    /// Process `pid` named `name` holding `file`.
    pub fn new(pid: u32, name: &str, file: impl Into<PathBuf>) -> Self {
        Self {
            pid,
            name: Some(name.to_owned()),
            file: file.into(),
        }
    }
}

/// The processes could not all be looked at: a holder could hide there, so nothing is idle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot tell who holds a device file: cannot read {}", path.display())]
#[non_exhaustive]
pub struct ProcError {
    /// What could not be read.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: OsError,
}

fn proc_error(path: &Path) -> impl Fn(std::io::Error) -> ProcError + '_ {
    move |source| ProcError {
        path: path.to_path_buf(),
        source: source.into(),
    }
}

/// A process that ended while it was looked at holds nothing.
fn gone(error: &std::io::Error) -> bool {
    let code = error.raw_os_error();
    code == Some(nix::errno::Errno::ENOENT as i32) || code == Some(nix::errno::Errno::ESRCH as i32)
}

/// Every process under `proc_root` holding one of `files` open, by pid.
pub fn holders(proc_root: &Path, files: &[PathBuf]) -> Result<Vec<Holder>, ProcError> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(proc_root).map_err(proc_error(proc_root))?;
    for entry in entries {
        let entry = entry.map_err(proc_error(proc_root))?;
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let fd_dir = entry.path().join("fd");
        let fds = match std::fs::read_dir(&fd_dir) {
            Ok(fds) => fds,
            Err(error) if gone(&error) => continue,
            Err(error) => return Err(proc_error(&fd_dir)(error)),
        };
        for fd in fds {
            let fd = match fd {
                Ok(fd) => fd,
                Err(error) if gone(&error) => continue,
                Err(error) => return Err(proc_error(&fd_dir)(error)),
            };
            let Ok(target) = std::fs::read_link(fd.path()) else {
                // Closed between the listing and the read.
                continue;
            };
            if let Some(file) = files.iter().find(|file| **file == target) {
                let name = std::fs::read_to_string(entry.path().join("comm"))
                    .ok()
                    .map(|comm| comm.trim_end().to_owned());
                found.push(Holder {
                    pid,
                    name,
                    file: file.clone(),
                });
            }
        }
    }
    found.sort_by_key(|holder| holder.pid);
    found.dedup_by(|a, b| a.pid == b.pid && a.file == b.file);
    Ok(found)
}

/// The holders for people: `4242 qemu-system-x86 (/dev/vfio/12), …` (`pid 4242` alone when
/// its name could not be read).
pub fn describe_holders(holders: &[Holder]) -> String {
    holders
        .iter()
        .map(|holder| match &holder.name {
            Some(name) => format!("{} {name} ({})", holder.pid, holder.file.display()),
            None => format!("pid {} ({})", holder.pid, holder.file.display()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_process_whose_fd_links_to_the_file_holds_it_and_others_do_not() {
        let proc_root = tempfile::tempdir().unwrap();
        for (pid, comm, link) in [("42", "qemu", "/dev/vfio/12"), ("43", "bash", "/dev/null")] {
            let fd = proc_root.path().join(pid).join("fd");
            std::fs::create_dir_all(&fd).unwrap();
            std::fs::write(proc_root.path().join(pid).join("comm"), format!("{comm}\n")).unwrap();
            symlink(link, fd.join("7")).unwrap();
        }
        std::fs::create_dir_all(proc_root.path().join("self")).unwrap();
        let found = holders(proc_root.path(), &[PathBuf::from("/dev/vfio/12")]).unwrap();
        assert_eq!(describe_holders(&found), "42 qemu (/dev/vfio/12)");
    }

    #[test]
    fn a_holder_whose_name_did_not_read_has_none_and_is_named_by_its_pid() {
        let proc_root = tempfile::tempdir().unwrap();
        let fd = proc_root.path().join("44/fd");
        std::fs::create_dir_all(&fd).unwrap();
        symlink("/dev/vfio/12", fd.join("3")).unwrap();
        let found = holders(proc_root.path(), &[PathBuf::from("/dev/vfio/12")]).unwrap();
        assert_eq!(found.first().map(|holder| holder.name.clone()), Some(None));
        assert_eq!(describe_holders(&found), "pid 44 (/dev/vfio/12)");
    }
}
