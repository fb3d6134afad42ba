//! The base of every test host: a directory of its own holding a built sysfs tree (`sys/`), a
//! procfs (`proc/`, with a boot id), a state directory (`state/`) and fake programs (`bin/`),
//! and `mxctl` run on them. Each host (MetaX, NVIDIA, PCI, partition, sync) adds its programs
//! and files on top, and reaches this through `Deref`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use host_sync::fake_sysfs::FakeSysfs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The boot id every host starts with.
pub const BOOT_ID: &str = "11111111-2222-3333-4444-555555555555";

pub struct Machine {
    pub dir: tempfile::TempDir,
    pub sysfs: FakeSysfs,
    /// The sysfs root mxctl is given where it is not the tree's own: a mount of the tree
    /// whose drivers' files answer (`fake_driver_files::ServedSysfs`).
    pub served: Option<PathBuf>,
}

impl Machine {
    pub fn new() -> Machine {
        Machine::in_dir(tempfile::tempdir().unwrap())
    }

    /// A machine in `dir` (a pool keeps its hosts under one directory).
    pub fn in_dir(dir: tempfile::TempDir) -> Machine {
        let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
        let machine = Machine {
            dir,
            sysfs,
            served: None,
        };
        machine.boot(BOOT_ID);
        machine
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Reads a file of the host; an absent file reads empty.
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    pub fn write(&self, name: &str, text: &str) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Writes a program of the host (see `write_executable` for why through a child).
    pub fn program(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        gpu_host_probe::test_util::write_executable(&path, text).unwrap();
        path
    }

    /// Boots the machine as `id` (`/proc/sys/kernel/random/boot_id`).
    pub fn boot(&self, id: &str) {
        self.write("proc/sys/kernel/random/boot_id", &format!("{id}\n"));
    }

    /// A process `pid` named `comm` holding `file` open (as its descriptor `fd`).
    pub fn holder(&self, pid: u32, comm: &str, file: &str, fd: u32) {
        let dir = self.path("proc").join(pid.to_string());
        std::fs::create_dir_all(dir.join("fd")).unwrap();
        std::fs::write(dir.join("comm"), format!("{comm}\n")).unwrap();
        symlink(file, dir.join("fd").join(fd.to_string())).unwrap();
    }

    /// `mxctl --config CONFIG` on this machine's sysfs, procfs and state directory: a machine of
    /// its own, so tests run at once never meet at the real `/sys`'s GPU lock.
    pub fn mxctl_configured(&self, config: &Path) -> Command {
        let mut command = super::mxctl_configured_on(
            config,
            self.served.as_deref().unwrap_or(self.sysfs.root()),
            &self.path("state"),
            &self.path("locks"),
        );
        command.arg("--proc-root").arg(self.path("proc"));
        command
    }

    /// Takes the host's GPU lock, as another GPU operation of the host would hold it.
    pub fn hold_lock(&self) -> gpu_host_probe::HostLock {
        gpu_host_probe::Host::new(self.path("state"))
            .with_sysfs_root(self.sysfs.root())
            .with_lock_dir(self.path("locks"))
            .try_lock()
            .unwrap()
    }

    /// Asserts that the host's reset journal holds no reset in flight.
    pub fn no_reset_in_flight(&self) {
        let journal = self.read("state/warm-reset-journal.json");
        assert!(!journal.contains("in_flight\": {"), "{journal}");
    }

    /// The calls the host's fake tool logged in `bin/calls` that start with `prefix`.
    pub fn calls_starting(&self, prefix: &str) -> Vec<String> {
        self.read("bin/calls")
            .lines()
            .filter(|line| line.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    }

    /// `mxctl --json reset --method METHOD --TOOL bin/TOOL --kmsg kmsg ARGS…`: a reset of
    /// `method` through the host's fake `tool` and kernel log.
    pub fn reset_through(&self, method: &str, tool: &str, args: &[&str]) -> Command {
        let mut command = self.mxctl(&["reset", "--method", method]);
        command
            .arg(format!("--{tool}"))
            .arg(self.path(&format!("bin/{tool}")))
            .arg("--kmsg")
            .arg(self.path("kmsg"))
            .args(args);
        command
    }

    /// `mxctl --json ARGS…` with no config file.
    pub fn mxctl(&self, args: &[&str]) -> Command {
        let mut command = self.mxctl_configured(Path::new("/dev/null"));
        command.arg("--json").args(args);
        command
    }
}
