//! One pure function from what was seen of a run to what the run was.

use std::fmt;
use std::path::PathBuf;

/// Why a program was not started (it was never forked, or exec failed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// Nothing at the path.
    #[error("{} does not exist", program.display())]
    Absent {
        /// The program.
        program: PathBuf,
    },
    /// Not a regular file this process may execute.
    #[error("{} is not executable: {why}", program.display())]
    NotExecutable {
        /// The program.
        program: PathBuf,
        /// What the check found.
        why: String,
    },
    /// Another user could have written it, or a directory on its way: never run.
    #[error("{} is not safe to run: {fault}", program.display())]
    Untrusted {
        /// The program.
        program: PathBuf,
        /// What is wrong.
        fault: crate::trust::TrustFault,
    },
    /// A relative path (one with a `/` that does not start at `/`): it would name whatever
    /// the working directory of this process holds there, so it is never run. A bare name is
    /// looked up in [`CHILD_PATH`](super::CHILD_PATH) instead.
    #[error(
        "{} is a relative path, found from whatever directory this process runs in: never run; \
         give an absolute path, or a bare name found in {}",
        program.display(),
        super::CHILD_PATH
    )]
    RelativePath {
        /// The program.
        program: PathBuf,
    },
    /// The fork or the exec failed.
    #[error("{} could not be started: {why}", program.display())]
    SpawnFailed {
        /// The program.
        program: PathBuf,
        /// The error of the spawn.
        why: String,
    },
}

impl StartError {
    /// Whether the program was refused as unsafe to run — another user could have changed it,
    /// or its relative path could name anything — rather than found absent or broken.
    pub fn is_unsafe(&self) -> bool {
        match self {
            Self::Untrusted { .. } | Self::RelativePath { .. } => true,
            Self::Absent { .. } | Self::NotExecutable { .. } | Self::SpawnFailed { .. } => false,
        }
    }

    /// Its kind, as a token (`cause` in `--json`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Absent { .. } => "absent",
            Self::NotExecutable { .. } => "not_executable",
            Self::Untrusted { .. } => "untrusted",
            Self::RelativePath { .. } => "relative_path",
            Self::SpawnFailed { .. } => "spawn_failed",
        }
    }
}

/// One of the child's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        })
    }
}

/// How the child process ended, as `wait` reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Termination {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
    /// It ended, but `wait` did not say how (the wait failed, or the status held neither an
    /// exit code nor a signal).
    Unknown,
}

/// What the supervisor saw of a run: the input of [`classify`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunFacts {
    /// The program was not started.
    pub start_error: Option<StartError>,
    /// How the child ended (`None` only when it was not started).
    pub termination: Option<Termination>,
    /// The deadline passed and the group was sent SIGTERM.
    pub deadline_passed: bool,
    /// The run was cancelled and the group was sent SIGTERM.
    pub cancelled: bool,
    /// A stream passed its cap and the group was killed.
    pub output_over_cap: Option<Stream>,
    /// The pipes stayed open after the child ended (a grandchild held them).
    pub pipes_leaked: bool,
}

/// What a run was, in one word (with its detail).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunResult {
    /// It exited with this code.
    Exited(i32),
    /// A signal it did not get from us killed it.
    Signaled(i32),
    /// It ended, but how is not known (see [`Termination::Unknown`]).
    EndUnknown,
    /// It passed its deadline and we stopped it.
    TimedOut,
    /// Its caller cancelled it and we stopped it.
    Cancelled,
    /// A stream passed its cap and we stopped it.
    OutputTooLarge(Stream),
    /// It exited (with this termination), but something it started held the pipes open; the
    /// group was killed.
    LeakedPipes(Termination),
    /// It was never started.
    CouldNotStart(StartError),
}

/// Classifies a run. What we did to the child comes first (not started, output over its cap,
/// deadline passed), because the child's own end then only reflects our signal; a leak keeps
/// the child's own end, so an answer written before the leak can still be used.
pub fn classify(facts: &RunFacts) -> RunResult {
    if let Some(error) = &facts.start_error {
        return RunResult::CouldNotStart(error.clone());
    }
    if let Some(stream) = facts.output_over_cap {
        return RunResult::OutputTooLarge(stream);
    }
    if facts.cancelled {
        return RunResult::Cancelled;
    }
    if facts.deadline_passed {
        return RunResult::TimedOut;
    }
    match (facts.termination, facts.pipes_leaked) {
        (Some(termination), true) => RunResult::LeakedPipes(termination),
        (Some(Termination::Exited(code)), false) => RunResult::Exited(code),
        (Some(Termination::Signaled(signal)), false) => RunResult::Signaled(signal),
        // The supervisor always records an end for what it started; facts with neither an
        // end nor a start error say no more than an unknown end.
        (Some(Termination::Unknown), false) | (None, _) => RunResult::EndUnknown,
    }
}

impl fmt::Display for RunResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Exited(code) => write!(f, "exited with code {code}"),
            Self::Signaled(signal) => write!(f, "killed by signal {signal}"),
            Self::EndUnknown => f.write_str("ended, but wait did not say how"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Cancelled => f.write_str("was cancelled"),
            Self::OutputTooLarge(stream) => write!(f, "{stream} passed its cap"),
            Self::LeakedPipes(Termination::Exited(code)) => {
                write!(f, "exited with code {code}, but left the pipes held open")
            }
            Self::LeakedPipes(Termination::Signaled(signal)) => {
                write!(f, "killed by signal {signal}, but left the pipes held open")
            }
            Self::LeakedPipes(Termination::Unknown) => {
                f.write_str("ended in a way wait did not say, and left the pipes held open")
            }
            Self::CouldNotStart(error) => write!(f, "not started: {error}"),
        }
    }
}

impl serde::Serialize for RunResult {
    /// As a typed end, one token in `end` and its facts beside it, so a reader tells a
    /// timeout from an exit 1 from a program never started: `{"end": "exited", "code": 1}`,
    /// `{"end": "signaled", "signal": 9}`, `{"end": "timed_out"}`, `{"end": "cancelled"}`,
    /// `{"end": "end_unknown"}`, `{"end": "output_too_large", "stream": "stdout"}`,
    /// `{"end": "pipes_held", "code": 0}` (or `"signal"`; neither when unknown), and
    /// `{"end": "not_started", "cause": "untrusted", "message": "…"}` (`cause` is
    /// [`StartError::as_str`]).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        let termination = |map: &mut S::SerializeMap, end: &Termination| match end {
            Termination::Exited(code) => map.serialize_entry("code", code),
            Termination::Signaled(signal) => map.serialize_entry("signal", signal),
            Termination::Unknown => Ok(()),
        };
        match self {
            Self::Exited(code) => {
                map.serialize_entry("end", "exited")?;
                map.serialize_entry("code", code)?;
            }
            Self::Signaled(signal) => {
                map.serialize_entry("end", "signaled")?;
                map.serialize_entry("signal", signal)?;
            }
            Self::EndUnknown => map.serialize_entry("end", "end_unknown")?,
            Self::TimedOut => map.serialize_entry("end", "timed_out")?,
            Self::Cancelled => map.serialize_entry("end", "cancelled")?,
            Self::OutputTooLarge(stream) => {
                map.serialize_entry("end", "output_too_large")?;
                map.serialize_entry("stream", &stream.to_string())?;
            }
            Self::LeakedPipes(end) => {
                map.serialize_entry("end", "pipes_held")?;
                termination(&mut map, end)?;
            }
            Self::CouldNotStart(error) => {
                map.serialize_entry("end", "not_started")?;
                map.serialize_entry("cause", error.as_str())?;
                map.serialize_entry("message", &error.to_string())?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> RunFacts {
        RunFacts {
            termination: Some(Termination::Exited(0)),
            ..RunFacts::default()
        }
    }

    #[test]
    fn classification_table() {
        let absent = StartError::Absent {
            program: "/x".into(),
        };
        let table: Vec<(&str, RunFacts, RunResult)> = vec![
            ("a clean exit is its code", facts(), RunResult::Exited(0)),
            (
                "a non-zero exit is its code",
                RunFacts {
                    termination: Some(Termination::Exited(75)),
                    ..facts()
                },
                RunResult::Exited(75),
            ),
            (
                "a death by signal is that signal",
                RunFacts {
                    termination: Some(Termination::Signaled(11)),
                    ..facts()
                },
                RunResult::Signaled(11),
            ),
            (
                "an end wait could not describe is an unknown end",
                RunFacts {
                    termination: Some(Termination::Unknown),
                    ..facts()
                },
                RunResult::EndUnknown,
            ),
            (
                "facts with neither an end nor a start error are an unknown end",
                RunFacts::default(),
                RunResult::EndUnknown,
            ),
            (
                "held pipes after an unknown end keep the unknown end",
                RunFacts {
                    termination: Some(Termination::Unknown),
                    pipes_leaked: true,
                    ..facts()
                },
                RunResult::LeakedPipes(Termination::Unknown),
            ),
            (
                "a passed deadline wins over the signal we sent",
                RunFacts {
                    termination: Some(Termination::Signaled(15)),
                    deadline_passed: true,
                    ..facts()
                },
                RunResult::TimedOut,
            ),
            (
                "a passed cap wins over the kill we sent",
                RunFacts {
                    termination: Some(Termination::Signaled(9)),
                    output_over_cap: Some(Stream::Stdout),
                    ..facts()
                },
                RunResult::OutputTooLarge(Stream::Stdout),
            ),
            (
                "a passed cap wins over a deadline passed after it",
                RunFacts {
                    output_over_cap: Some(Stream::Stderr),
                    deadline_passed: true,
                    ..facts()
                },
                RunResult::OutputTooLarge(Stream::Stderr),
            ),
            (
                "held pipes after an exit keep the exit",
                RunFacts {
                    pipes_leaked: true,
                    ..facts()
                },
                RunResult::LeakedPipes(Termination::Exited(0)),
            ),
            (
                "a timeout wins over held pipes",
                RunFacts {
                    pipes_leaked: true,
                    deadline_passed: true,
                    ..facts()
                },
                RunResult::TimedOut,
            ),
            (
                "not starting wins over everything",
                RunFacts {
                    start_error: Some(absent.clone()),
                    termination: None,
                    ..RunFacts::default()
                },
                RunResult::CouldNotStart(absent),
            ),
        ];
        for (case, facts, expected) in table {
            assert_eq!(classify(&facts), expected, "{case}");
        }
    }
}
