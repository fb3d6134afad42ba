//! The real backend: `mx-smi` through the process runner (a deadline on every call),
//! `<proc-root>/modules`, the kernel log, and the effective user.

use crate::backend::{Backend, ResetEnd};
use crate::host_files::{DriverUse, metax_use, read_kmsg};
use crate::mx_smi::{self, GpuProcess, GpuRow, Topology, VersionCheck};
use gpu_probe::run::{RunResult, RunSpec, check_program, run};
use std::path::{Path, PathBuf};
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
    kmsg: PathBuf,
    mark: Option<u64>,
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
            kmsg: kmsg.into(),
            mark: None,
            plain: None,
        }
    }

    /// Plain `mx-smi`, which must be MetaX's: its output is read for the versions and the
    /// processes.
    fn plain(&mut self) -> Result<String, String> {
        let text = self.query(&[])?;
        if !mx_smi::is_metax(&text) {
            return Err(format!(
                "the mx-smi at {} is not MetaX's: its output has no `mx-smi version:` banner, no \
                 `MetaX System Management Interface Log` title and no `MX-SMI` header",
                self.found
                    .as_deref()
                    .map(Path::display)
                    .map(|d| d.to_string())
                    .unwrap_or_default()
            ));
        }
        Ok(text)
    }

    fn query(&mut self, args: &[&str]) -> Result<String, String> {
        let program = match &self.found {
            Some(program) => program.clone(),
            None => {
                self.find_mx_smi()?;
                self.found.clone().ok_or("mx-smi not found")?
            }
        };
        let spec = RunSpec::new(&program, QUERY_DEADLINE).args(args.iter().copied());
        let output = run(&spec);
        let command = spec.display();
        match output.result {
            RunResult::Exited(0) => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
            result => Err(format!(
                "{command}: {result}{}",
                stderr_tail(&output.stderr)
            )),
        }
    }
}

/// The last 300 characters of what a command wrote on stderr, as `: …` for a message.
fn stderr_tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    let skip = text.chars().count().saturating_sub(300);
    format!(": {}", text.chars().skip(skip).collect::<String>())
}

impl Backend for MxSmiBackend {
    fn is_root(&mut self) -> bool {
        nix::unistd::geteuid().is_root()
    }

    fn find_mx_smi(&mut self) -> Result<(), String> {
        let candidates: Vec<PathBuf> = match &self.configured {
            Some(path) => vec![path.clone()],
            None => MX_SMI_PLACES
                .iter()
                .map(PathBuf::from)
                .chain([PathBuf::from("mx-smi")])
                .collect(),
        };
        let mut why = Vec::new();
        for candidate in &candidates {
            match check_program(candidate) {
                Ok(found) => {
                    self.found = Some(found);
                    return Ok(());
                }
                Err(error) => why.push(error.to_string()),
            }
        }
        Err(format!("no usable mx-smi: {}", why.join("; ")))
    }

    fn driver_use(&mut self) -> DriverUse {
        let path = self.proc_root.join("modules");
        match std::fs::read_to_string(&path) {
            Ok(text) => metax_use(&text),
            Err(error) => DriverUse::Unreadable(format!("{}: {error}", path.display())),
        }
    }

    fn versions(&mut self) -> Result<VersionCheck, String> {
        let text = self.plain()?;
        let versions = mx_smi::parse_header(&text).map_err(|error| error.to_string())?;
        self.plain = Some(text);
        Ok(mx_smi::check_versions(&versions))
    }

    fn processes(&mut self) -> Result<Vec<GpuProcess>, String> {
        let text = match self.plain.take() {
            Some(text) => text,
            None => self.plain()?,
        };
        mx_smi::parse_processes(&text).map_err(|error| error.to_string())
    }

    fn list(&mut self) -> Result<Vec<GpuRow>, String> {
        let text = self.query(&["-L"])?;
        mx_smi::parse_listing(&text).map_err(|error| error.to_string())
    }

    fn topology(&mut self) -> Result<Topology, String> {
        let text = self.query(&["topo", "-m"])?;
        mx_smi::parse_topology(&text).map_err(|error| error.to_string())
    }

    fn mark_kernel_log(&mut self) -> Result<(), String> {
        let records =
            read_kmsg(&self.kmsg).map_err(|error| format!("{}: {error}", self.kmsg.display()))?;
        self.mark = Some(
            records
                .iter()
                .map(|record| record.sequence)
                .max()
                .unwrap_or(0),
        );
        Ok(())
    }

    fn kernel_errors(&mut self) -> Result<Vec<String>, String> {
        let mark = self
            .mark
            .ok_or("the kernel log was not marked before the reset")?;
        let records =
            read_kmsg(&self.kmsg).map_err(|error| format!("{}: {error}", self.kmsg.display()))?;
        Ok(records
            .into_iter()
            .filter(|record| record.sequence > mark && record.is_error())
            .map(|record| record.message)
            .collect())
    }

    fn reset(&mut self, mx_smi_id: &str, within: Duration) -> ResetEnd {
        let Some(program) = self.found.clone() else {
            return ResetEnd::Failed("mx-smi was not found".to_owned());
        };
        let spec = RunSpec::new(&program, within).args(["-r", "-i", mx_smi_id]);
        let output = run(&spec);
        match output.result {
            RunResult::Exited(0) => {
                let said = [output.stdout.as_slice(), output.stderr.as_slice()]
                    .map(String::from_utf8_lossy)
                    .join("\n");
                match mx_smi::reset_failure(&said) {
                    Some(line) => {
                        ResetEnd::Failed(format!("{} exited 0 but said: {line}", spec.display()))
                    }
                    None => ResetEnd::Finished,
                }
            }
            RunResult::TimedOut => ResetEnd::Hung,
            result => ResetEnd::Failed(format!(
                "{}: {result}{}",
                spec.display(),
                stderr_tail(&output.stderr)
            )),
        }
    }
}
