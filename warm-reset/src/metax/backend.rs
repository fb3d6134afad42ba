//! [`MxSmiBackend`]: the real MetaX host: `mx-smi` through the process runner (a deadline on
//! every call), `<proc-root>/modules`, the kernel log, and the effective user.

use super::error::MxSmiError;
use super::modules::{DriverUse, metax_use};
use super::mx_smi::{self, GpuProcess, GpuRow, Topology, VersionCheck};
use crate::backend::{Backend, BackendError, ResetEnd};
use crate::kmsg::KernelLog;
use gpu_probe::run::{RunResult, RunSpec, check_program, run};
use std::path::PathBuf;
use std::time::Duration;

/// Where `mx-smi` usually is, tried in order when none is configured; then `mx-smi` on `PATH`.
pub const MX_SMI_PLACES: [&str; 2] = ["/opt/mxdriver/bin/mx-smi", "/opt/maca/bin/mx-smi"];

/// How long one query of `mx-smi` may take.
pub const QUERY_DEADLINE: Duration = Duration::from_secs(15);

/// The real host.
#[derive(Debug, Clone)]
pub struct MxSmiBackend {
    configured: Option<PathBuf>,
    found: Option<PathBuf>,
    proc_root: PathBuf,
    kernel_log: KernelLog,
    /// What plain `mx-smi` printed for the versions, kept for the process section.
    plain: Option<String>,
}

impl MxSmiBackend {
    /// A backend using `mx_smi` (or the usual places when `None`), `<proc_root>/modules` and
    /// the kernel log at `kmsg`.
    pub fn new(
        mx_smi: Option<PathBuf>,
        proc_root: impl Into<PathBuf>,
        kmsg: impl Into<PathBuf>,
    ) -> Self {
        Self {
            configured: mx_smi,
            found: None,
            proc_root: proc_root.into(),
            kernel_log: KernelLog::new(kmsg),
            plain: None,
        }
    }

    /// Finds `mx-smi`: the configured path, or the first usable of the usual places.
    fn locate(&mut self) -> Result<PathBuf, MxSmiError> {
        if let Some(found) = &self.found {
            return Ok(found.clone());
        }
        let candidates: Vec<PathBuf> = match &self.configured {
            Some(path) => vec![path.clone()],
            None => MX_SMI_PLACES
                .iter()
                .map(PathBuf::from)
                .chain([PathBuf::from("mx-smi")])
                .collect(),
        };
        let mut tried = Vec::new();
        for candidate in &candidates {
            match check_program(candidate) {
                Ok(found) => {
                    self.found = Some(found.clone());
                    return Ok(found);
                }
                Err(error) => tried.push(error),
            }
        }
        Err(MxSmiError::NotFound { tried })
    }

    /// Plain `mx-smi`, which must be MetaX's: its output is read for the versions and the
    /// processes.
    fn plain(&mut self) -> Result<String, MxSmiError> {
        let text = self.query(&[])?;
        if !mx_smi::is_metax(&text) {
            return Err(MxSmiError::NotMetax {
                program: self.found.clone().unwrap_or_default(),
            });
        }
        Ok(text)
    }

    fn query(&mut self, args: &[&str]) -> Result<String, MxSmiError> {
        let program = self.locate()?;
        let spec = RunSpec::new(&program, QUERY_DEADLINE).args(args.iter().copied());
        let output = run(&spec);
        match output.result {
            RunResult::Exited(0) => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
            result => Err(MxSmiError::Failed {
                command: spec.display(),
                result,
                stderr: output.stderr,
            }),
        }
    }

    fn run_reset(&mut self, mx_smi_id: &str, within: Duration) -> Result<ResetEnd, MxSmiError> {
        let program = self.found.clone().ok_or(MxSmiError::NotLocated)?;
        let spec = RunSpec::new(&program, within).args(["-r", "-i", mx_smi_id]);
        let output = run(&spec);
        match output.result {
            RunResult::Exited(0) => {
                let said = [output.stdout.as_slice(), output.stderr.as_slice()]
                    .map(String::from_utf8_lossy)
                    .join("\n");
                match mx_smi::reset_failure(&said) {
                    Some(line) => Err(MxSmiError::SaidFailed {
                        command: spec.display(),
                        line,
                    }),
                    None => Ok(ResetEnd::Finished),
                }
            }
            RunResult::TimedOut => Ok(ResetEnd::Hung),
            result => Err(MxSmiError::Failed {
                command: spec.display(),
                result,
                stderr: output.stderr,
            }),
        }
    }
}

impl Backend for MxSmiBackend {
    fn is_root(&mut self) -> bool {
        nix::unistd::geteuid().is_root()
    }

    fn find_mx_smi(&mut self) -> Result<(), BackendError> {
        self.found = None;
        self.locate()?;
        Ok(())
    }

    fn driver_use(&mut self) -> DriverUse {
        let path = self.proc_root.join("modules");
        match std::fs::read_to_string(&path) {
            Ok(text) => metax_use(&text),
            Err(error) => DriverUse::Unreadable(format!("{}: {error}", path.display())),
        }
    }

    fn versions(&mut self) -> Result<VersionCheck, BackendError> {
        let text = self.plain()?;
        let versions = mx_smi::parse_header(&text).map_err(MxSmiError::from)?;
        self.plain = Some(text);
        Ok(mx_smi::check_versions(&versions))
    }

    fn processes(&mut self) -> Result<Vec<GpuProcess>, BackendError> {
        let text = match self.plain.take() {
            Some(text) => text,
            None => self.plain()?,
        };
        Ok(mx_smi::parse_processes(&text).map_err(MxSmiError::from)?)
    }

    fn list(&mut self) -> Result<Vec<GpuRow>, BackendError> {
        let text = self.query(&["-L"])?;
        Ok(mx_smi::parse_listing(&text).map_err(MxSmiError::from)?)
    }

    fn topology(&mut self) -> Result<Topology, BackendError> {
        let text = self.query(&["topo", "-m"])?;
        Ok(mx_smi::parse_topology(&text).map_err(MxSmiError::from)?)
    }

    fn mark_kernel_log(&mut self) -> Result<(), BackendError> {
        Ok(self.kernel_log.mark()?)
    }

    fn kernel_errors(&mut self) -> Result<Vec<String>, BackendError> {
        Ok(self.kernel_log.errors_since_mark()?)
    }

    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ResetEnd {
        self.run_reset(mx_smi_id, within)
            .unwrap_or_else(|error| ResetEnd::Failed(error.into()))
    }
}
