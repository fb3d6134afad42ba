//! [`Tool`]: a vendor's command-line tool (`mx-smi`, `nvidia-smi`) found in its usual places and
//! queried through the process runner with a deadline; [`ToolError`] for a tool that was not
//! found or did not run to a clean end.

use gpu_host_probe::run::{RunResult, RunSpec, StartError, Termination, check_program, run};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// How long one query of a tool may take.
pub(crate) const QUERY_DEADLINE: Duration = Duration::from_secs(15);

/// How a vendor's reset command ended, before anyone reads what it said: one shape for every
/// method's host (`mx-smi -r`, `nvidia-smi --gpu-reset`); the method's backend reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolEnd {
    /// It exited with `code`, saying this (stdout and stderr).
    Exited {
        /// The command line.
        command: String,
        /// Its exit status.
        code: i32,
        /// What it printed.
        said: String,
    },
    /// It did not end within the time given and was killed.
    Hung,
    /// It could not be run, or a signal ended it.
    Failed(crate::backend::BackendError),
}

/// A tool that could not be found or did not run to a clean end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No candidate is a program this process may run.
    #[error("no usable {tool}: {}", joined(tried))]
    NotFound {
        /// The tool's name.
        tool: &'static str,
        /// Why each candidate, in the order tried, is not usable.
        tried: Vec<StartError>,
    },
    /// The tool is one another user could have written (or a directory on its way): root
    /// never runs it, and looks for no other.
    #[error("refusing to run {tool}")]
    Unsafe {
        /// The tool's name.
        tool: &'static str,
        /// What the check found.
        #[source]
        error: StartError,
    },
    /// A command was asked for before the tool was found.
    #[error("{tool} was not found")]
    NotLocated {
        /// The tool's name.
        tool: &'static str,
    },
    /// A run did not end with exit 0.
    #[error("{command}: {result}{}", StderrTail(stderr))]
    Failed {
        /// The command line.
        command: String,
        /// How it ended.
        result: RunResult,
        /// What it wrote on stderr.
        stderr: Vec<u8>,
    },
}

impl ToolError {
    /// What a host without `tool` in any of `places` or on `PATH` answers: every candidate
    /// absent (the simulated hosts give it as the real ones would).
    #[cfg(feature = "sim")]
    pub(crate) fn absent(tool: &'static str, places: &[&str]) -> Self {
        Self::NotFound {
            tool,
            tried: places
                .iter()
                .chain([&tool])
                .map(|place| StartError::Absent {
                    program: PathBuf::from(place),
                })
                .collect(),
        }
    }

    /// A tool root never runs because another user could have written it.
    pub(crate) fn is_unsafe(&self) -> bool {
        matches!(self, Self::Unsafe { .. })
    }
}

/// The start errors of the candidates, joined by `; `.
fn joined(tried: &[StartError]) -> String {
    tried
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The last 300 characters of what a command wrote on stderr, as `: …`; nothing when it wrote
/// nothing.
pub(crate) struct StderrTail<'a>(pub(crate) &'a [u8]);

impl fmt::Display for StderrTail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = String::from_utf8_lossy(self.0);
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let skip = text.chars().count().saturating_sub(300);
        write!(f, ": {}", text.chars().skip(skip).collect::<String>())
    }
}

/// A tool: the configured path, or the first usable of its usual places and then its name on
/// `PATH`.
#[derive(Debug, Clone)]
pub struct Tool {
    name: &'static str,
    configured: Option<PathBuf>,
    places: &'static [&'static str],
    found: Option<PathBuf>,
}

/// What a run of a tool printed when it ended by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ended {
    pub(crate) command: String,
    pub(crate) result: RunResult,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
}

impl ToolEnd {
    /// The exit's command line, code and words; or how the reset ends without one (the
    /// deadline, a failure to run): what the methods that read their tool's words ask first.
    pub(crate) fn exited(self) -> Result<(String, i32, String), crate::backend::ResetEnd> {
        match self {
            Self::Exited {
                command,
                code,
                said,
            } => Ok((command, code, said)),
            Self::Hung => Err(crate::backend::ResetEnd::Hung),
            Self::Failed(error) => Err(crate::backend::ResetEnd::Failed(error)),
        }
    }
}

/// Which ends of a reset command count as its exit, to be read by the method: any exit code
/// (its output decides), leaked pipes after an exit too — or only exit 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exits {
    /// Any exit code, and an exit that left the pipes held.
    Any,
    /// Exit 0 only.
    Zero,
}

impl Ended {
    /// How a reset command ended, by one rule for every method: an exit `exits` takes is
    /// [`ToolEnd::Exited`] (its words for the method to read), the deadline [`ToolEnd::Hung`],
    /// anything else [`ToolEnd::Failed`] with the tool's error made by `failed`.
    pub(crate) fn reset_end(
        self,
        exits: Exits,
        failed: impl FnOnce(ToolError) -> crate::backend::BackendError,
    ) -> ToolEnd {
        let exited = match (exits, &self.result) {
            (Exits::Any, RunResult::Exited(code))
            | (Exits::Any, RunResult::LeakedPipes(Termination::Exited(code))) => Some(*code),
            (Exits::Zero, RunResult::Exited(0)) => Some(0),
            // `RunResult` is another crate's and `#[non_exhaustive]`: an end it grows is no exit
            // (a failure, below), never read as one.
            _ => None,
        };
        if let Some(code) = exited {
            return ToolEnd::Exited {
                command: self.command,
                code,
                said: [self.stdout.as_slice(), self.stderr.as_slice()]
                    .map(String::from_utf8_lossy)
                    .join("\n"),
            };
        }
        if self.result == RunResult::TimedOut {
            return ToolEnd::Hung;
        }
        ToolEnd::Failed(failed(ToolError::Failed {
            command: self.command,
            result: self.result,
            stderr: self.stderr,
        }))
    }
}

impl Tool {
    /// The tool `name`, at `configured`, else in `places`, else on `PATH`.
    pub fn new(
        name: &'static str,
        configured: Option<PathBuf>,
        places: &'static [&'static str],
    ) -> Self {
        Self {
            name,
            configured,
            places,
            found: None,
        }
    }

    /// Finds the tool again (the configured path, or the first usable candidate).
    pub fn find(&mut self) -> Result<PathBuf, ToolError> {
        self.found = None;
        self.locate()
    }

    /// The tool found, for messages; empty before it is.
    pub fn path(&self) -> PathBuf {
        self.found.clone().unwrap_or_default()
    }

    fn locate(&mut self) -> Result<PathBuf, ToolError> {
        if let Some(found) = &self.found {
            return Ok(found.clone());
        }
        let candidates: Vec<PathBuf> = match &self.configured {
            Some(path) => vec![path.clone()],
            None => self
                .places
                .iter()
                .map(PathBuf::from)
                .chain([PathBuf::from(self.name)])
                .collect(),
        };
        let mut tried = Vec::new();
        for candidate in &candidates {
            match check_program(candidate) {
                Ok(found) => {
                    self.found = Some(found.clone());
                    return Ok(found);
                }
                Err(error) if error.is_unsafe() => {
                    return Err(ToolError::Unsafe {
                        tool: self.name,
                        error,
                    });
                }
                Err(error) => tried.push(error),
            }
        }
        Err(ToolError::NotFound {
            tool: self.name,
            tried,
        })
    }

    /// Runs the tool with `args` under `deadline`, after finding it if need be.
    pub(crate) fn run(&mut self, args: &[&str], deadline: Duration) -> Result<Ended, ToolError> {
        let program = self.locate()?;
        let spec = RunSpec::new(&program, deadline).args(args.iter().copied());
        let output = run(&spec);
        Ok(Ended {
            command: spec.display(),
            result: output.result,
            stdout: output.stdout,
            stderr: output.stderr,
        })
    }

    /// Runs the tool that was found (never looking for it now) under `deadline`.
    pub(crate) fn run_found(
        &mut self,
        args: &[&str],
        deadline: Duration,
    ) -> Result<Ended, ToolError> {
        if self.found.is_none() {
            return Err(ToolError::NotLocated { tool: self.name });
        }
        self.run(args, deadline)
    }

    /// [`Tool::find`] for a method's host: a tool not found is the method's own error `E`.
    pub(crate) fn find_for<E>(&mut self) -> Result<(), crate::backend::BackendError>
    where
        E: From<ToolError> + Into<crate::backend::BackendError>,
    {
        self.find().map(drop).map_err(|error| E::from(error).into())
    }

    /// [`Tool::query`] for a method's host: a query that fails is the method's own error `E`.
    pub(crate) fn query_for<E>(
        &mut self,
        args: &[&str],
    ) -> Result<String, crate::backend::BackendError>
    where
        E: From<ToolError> + Into<crate::backend::BackendError>,
    {
        self.query(args).map_err(|error| E::from(error).into())
    }

    /// Runs the reset command `args` of the tool that was found, killed if it has not ended
    /// `within`, and reads how it ended by [`Ended::reset_end`]: every method's host resets this
    /// way, and only the method's own error `E` (a tool that did not run, an end `exits` does not
    /// take) and its words differ.
    pub(crate) fn reset<E>(&mut self, args: &[&str], within: Duration, exits: Exits) -> ToolEnd
    where
        E: From<ToolError> + Into<crate::backend::BackendError>,
    {
        match self.run_found(args, within) {
            Ok(ended) => ended.reset_end(exits, |error| E::from(error).into()),
            Err(error) => ToolEnd::Failed(E::from(error).into()),
        }
    }

    /// Its standard output, when it exits 0 within [`QUERY_DEADLINE`].
    pub fn query(&mut self, args: &[&str]) -> Result<String, ToolError> {
        let ended = self.run(args, QUERY_DEADLINE)?;
        match ended.result {
            RunResult::Exited(0) => Ok(String::from_utf8_lossy(&ended.stdout).into_owned()),
            result => Err(ToolError::Failed {
                command: ended.command,
                result,
                stderr: ended.stderr,
            }),
        }
    }
}

/// The last 300 characters of what a tool said, trimmed: enough for an error to show why a
/// reset failed without carrying a whole run's output.
pub(crate) fn said_last(text: &str) -> String {
    let skip = text.chars().count().saturating_sub(300);
    text.chars()
        .skip(skip)
        .collect::<String>()
        .trim()
        .to_owned()
}
