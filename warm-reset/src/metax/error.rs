//! [`MxSmiError`]: why `mx-smi` gave no answer the procedure can use.

use super::mx_smi::ParseError;
use gpu_probe::run::{RunResult, StartError};
use std::fmt;
use std::path::PathBuf;

/// `mx-smi` could not be found, did not run to a clean end, is not MetaX's, or printed what
/// does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MxSmiError {
    /// No candidate is a program this process may run.
    #[error("no usable mx-smi: {}", Joined(tried))]
    NotFound {
        /// Why each candidate, in the order tried, is not usable.
        tried: Vec<StartError>,
    },
    /// A command was asked for before `mx-smi` was found.
    #[error("mx-smi was not found")]
    NotLocated,
    /// A query did not end with exit 0.
    #[error("{command}: {result}{}", StderrTail(stderr))]
    Failed {
        /// The command line.
        command: String,
        /// How it ended.
        result: RunResult,
        /// What it wrote on stderr.
        stderr: Vec<u8>,
    },
    /// Its output has none of the marks of MetaX's `mx-smi`.
    #[error(
        "the mx-smi at {} is not MetaX's: its output has no `mx-smi version:` banner, no \
         `MetaX System Management Interface Log` title and no `MX-SMI` header",
        program.display()
    )]
    NotMetax {
        /// The program that answered.
        program: PathBuf,
    },
    /// Its output does not read.
    #[error(transparent)]
    Unreadable(#[from] ParseError),
    /// `mx-smi -r` exited 0 but printed that the reset failed.
    #[error("{command} exited 0 but said: {line}")]
    SaidFailed {
        /// The command line.
        command: String,
        /// The line that says so.
        line: String,
    },
}

/// The start errors of the candidates, joined by `; `.
struct Joined<'a>(&'a [StartError]);

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// The last 300 characters of what a command wrote on stderr, as `: …`; nothing when it wrote
/// nothing.
struct StderrTail<'a>(&'a [u8]);

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
