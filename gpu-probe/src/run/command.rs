//! [`CommandLine`]: a command an operator configures — an apply's hook, a reset plan's link
//! command — read once, by one rule, and run through the runner like every program (its trust
//! checks, its deadline, its process group).

use super::prepare::is_relative_path;
use super::spec::RunSpec;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A program and its arguments, never a shell line. The program is an absolute path, or a
/// bare name the runner looks up in [`CHILD_PATH`](super::CHILD_PATH); a relative path is
/// refused when read ([`CommandLine::parse`]) and by the runner when run
/// ([`StartError::RelativePath`](super::StartError::RelativePath)), so it never depends on
/// the directory a service was started in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    program: PathBuf,
    args: Vec<OsString>,
}

/// Why a line is no command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandLineError {
    /// The line is blank.
    #[error("the command is blank")]
    Empty,
    /// The program is a relative path.
    #[error(
        "{} is a relative path, found from whatever directory the process runs in; give an \
         absolute path, or a bare name found in {}",
        program.display(),
        super::CHILD_PATH
    )]
    RelativePath {
        /// The program as written.
        program: PathBuf,
    },
}

impl CommandLine {
    /// `program` with `args`, as given (a relative `program` is refused by the runner when
    /// run).
    pub fn new<I, S>(program: impl Into<PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// A command as a configuration file writes it: words separated by white space (no
    /// quoting, no shell), the first the program.
    pub fn parse(line: &str) -> Result<Self, CommandLineError> {
        let mut words = line.split_whitespace();
        let program = Path::new(words.next().ok_or(CommandLineError::Empty)?);
        if is_relative_path(program) {
            return Err(CommandLineError::RelativePath {
                program: program.to_path_buf(),
            });
        }
        Ok(Self::new(program, words))
    }

    /// The program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Its arguments.
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// What the runner runs for it, with `deadline` and the runner's other defaults.
    pub fn spec(&self, deadline: Duration) -> RunSpec {
        RunSpec::new(&self.program, deadline).args(self.args.iter().cloned())
    }
}

impl fmt::Display for CommandLine {
    /// The words, separated by spaces (lossily UTF-8).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.program.display())?;
        for arg in &self.args {
            write!(f, " {}", arg.to_string_lossy())?;
        }
        Ok(())
    }
}

impl std::str::FromStr for CommandLine {
    type Err = CommandLineError;

    /// [`CommandLine::parse`].
    fn from_str(line: &str) -> Result<Self, CommandLineError> {
        Self::parse(line)
    }
}

impl serde::Serialize for CommandLine {
    /// As its line.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CommandLine {
    /// From its line, by [`CommandLine::parse`].
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let line = String::deserialize(deserializer)?;
        Self::parse(&line).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_its_program_and_its_words() {
        let command = CommandLine::parse("  /usr/bin/systemctl  stop dcgm ");
        assert_eq!(
            command,
            Ok(CommandLine::new("/usr/bin/systemctl", ["stop", "dcgm"]))
        );
    }

    #[test]
    fn a_bare_name_reads_and_a_relative_path_does_not() {
        assert!(CommandLine::parse("metalink_train 7").is_ok());
        for line in ["./drain.sh", "hooks/drain.sh now"] {
            assert!(
                matches!(
                    CommandLine::parse(line),
                    Err(CommandLineError::RelativePath { .. })
                ),
                "{line}"
            );
        }
    }

    #[test]
    fn a_blank_line_is_no_command() {
        assert_eq!(CommandLine::parse(" \t"), Err(CommandLineError::Empty));
    }
}
