//! [`PciHost`]: what the PCI backend reads from a host — sysfs, who holds a VFIO group, the
//! kernel log — and [`SysfsHost`], the real one, which writes `1` to a function's `reset` file
//! in a child process under the window's deadline (the kernel may hold that write for a minute).

use super::error::SysfsError;
use super::function::{FunctionState, device_entries, read_function};
use crate::backend::{BackendError, ResetEnd};
use crate::kmsg::KernelLog;
use gpu_host_probe::run::{RunResult, RunSpec, check_program, run};
use gpu_host_probe::{Holder, holders};
use gpu_partition_types::Bdf;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A host's PCI functions as the backend reads them.
pub trait PciHost {
    host_trait_basics!();
    /// Whether the program that writes `reset` may be run (present, executable, trusted).
    fn check_writer(&mut self) -> Result<(), BackendError>;
    /// The function at `bdf` now; `None` when it is not there.
    fn function(&mut self, bdf: Bdf) -> Result<Option<FunctionState>, BackendError>;
    /// Every function on the bus of `bdf` (itself included).
    fn bus_functions(&mut self, bdf: Bdf) -> Result<Vec<Bdf>, BackendError>;
    /// The processes holding one of `files`.
    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError>;
    /// Writes `1` to the `reset` file of `bdf`, stopping the writer if it has not ended
    /// `within`.
    fn write_reset(&mut self, bdf: Bdf, within: Duration) -> ResetEnd;
}

/// The real host: sysfs at `<sysfs-root>`, processes at `<proc-root>`, the kernel log.
#[derive(Debug, Clone)]
pub struct SysfsHost {
    sysfs_root: PathBuf,
    proc_root: PathBuf,
    kernel_log: KernelLog,
}

impl SysfsHost {
    /// The host whose sysfs is at `sysfs_root`, procfs at `proc_root`, kernel log at `kmsg`.
    pub fn new(
        sysfs_root: impl Into<PathBuf>,
        proc_root: impl Into<PathBuf>,
        kmsg: impl Into<PathBuf>,
    ) -> Self {
        Self {
            sysfs_root: sysfs_root.into(),
            proc_root: proc_root.into(),
            kernel_log: KernelLog::new(kmsg),
        }
    }

    fn devices(&self) -> PathBuf {
        self.sysfs_root.join("bus/pci/devices")
    }

    fn device_dir(&self, bdf: Bdf) -> PathBuf {
        self.devices().join(bdf.to_string())
    }
}

/// The program that writes `1` to a `reset` file, in a child of its own.
const WRITER: &str = "/bin/sh";

impl PciHost for SysfsHost {
    real_host_basics!();

    fn check_writer(&mut self) -> Result<(), BackendError> {
        check_program(Path::new(WRITER)).map_err(SysfsError::Writer)?;
        Ok(())
    }

    fn function(&mut self, bdf: Bdf) -> Result<Option<FunctionState>, BackendError> {
        Ok(read_function(&self.device_dir(bdf), bdf)?)
    }

    fn bus_functions(&mut self, bdf: Bdf) -> Result<Vec<Bdf>, BackendError> {
        let devices = self.devices();
        let mut found = Vec::new();
        for entry in device_entries(&devices)? {
            let (other, _) = entry?;
            if other.domain == bdf.domain && other.bus == bdf.bus {
                found.push(other);
            }
        }
        found.sort();
        Ok(found)
    }

    fn holders(&mut self, files: &[PathBuf]) -> Result<Vec<Holder>, BackendError> {
        Ok(holders(&self.proc_root, files)?)
    }

    fn write_reset(&mut self, bdf: Bdf, within: Duration) -> ResetEnd {
        let path = self.device_dir(bdf).join("reset");
        let spec = RunSpec::new(WRITER, within)
            .args(["-c", r#"echo 1 > "$1""#, "sh"])
            .args([path.as_os_str()]);
        let output = run(&spec);
        match output.result {
            RunResult::Exited(0) => ResetEnd::Finished,
            RunResult::TimedOut => ResetEnd::Hung,
            result => {
                let said = String::from_utf8_lossy(&output.stderr).trim().to_owned();
                ResetEnd::Failed(
                    SysfsError::ResetWrite {
                        path,
                        why: if said.is_empty() {
                            result.to_string()
                        } else {
                            format!("{result}: {said}")
                        },
                    }
                    .into(),
                )
            }
        }
    }
}
