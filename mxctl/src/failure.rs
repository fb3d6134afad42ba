//! [`Failure`]: what stops a command, with its kind token and exit code.

use std::path::PathBuf;

/// A failure that stops a command (exit 1). Refusals and blocked resets are results, not
/// failures.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The config file could not be read.
    #[error("cannot read config file {}", path.display())]
    ConfigUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A config line has a bad value.
    #[error("{}:{line}: {message}", path.display())]
    ConfigValue {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// Standard output could not be written.
    #[error("cannot write the output")]
    Output {
        #[source]
        source: std::io::Error,
    },
    /// An input file could not be read.
    #[error("cannot read {what}")]
    Input {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl Failure {
    /// A stable token for `{"error": {"kind": …}}`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ConfigUnreadable { .. } | Self::ConfigValue { .. } => "config",
            Self::Input { .. } => "input",
            Self::Output { .. } => "output",
        }
    }

    /// The message with its chain of causes, for people.
    pub fn message(&self) -> String {
        let mut message = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        message
    }
}
