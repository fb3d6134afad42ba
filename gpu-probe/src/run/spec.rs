//! [`RunSpec`]: what to run, and within which limits.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The environment every child gets: nothing else is passed on.
pub const CHILD_PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// How much output is kept before the child's process group is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OutputLimits {
    /// Bytes of stdout kept (default 4 MiB).
    pub stdout: usize,
    /// Bytes of stderr kept (default 64 KiB).
    pub stderr: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            stdout: 4 << 20,
            stderr: 64 << 10,
        }
    }
}

impl OutputLimits {
    /// Limits of `stdout` and `stderr` bytes.
    pub fn new(stdout: usize, stderr: usize) -> Self {
        Self { stdout, stderr }
    }
}

/// A program to run, as data: the program and its arguments, never a shell string.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunSpec {
    /// The program: a path, or a bare name looked up in [`CHILD_PATH`].
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables the child gets besides `PATH` and `LANG` (which it always gets, and which these
    /// cannot replace); empty by default.
    pub env: Vec<(OsString, OsString)>,
    /// How long it may run before its process group gets SIGTERM.
    pub deadline: Duration,
    /// How long after SIGTERM before SIGKILL (default 500 ms).
    pub grace: Duration,
    /// How long to wait for the pipes to close once the child has exited, or once the group
    /// was killed, before the pipes count as leaked (default 200 ms).
    pub eof_grace: Duration,
    /// Output caps.
    pub limits: OutputLimits,
    /// What the child reads on stdin (written by a thread of its own, then closed); `None`
    /// (the default): stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Ends the run as its deadline would when triggered (the result is
    /// [`RunResult::Cancelled`](super::RunResult::Cancelled)); `None` by default.
    pub cancel: Option<crate::Cancel>,
    /// The child is killed (SIGKILL) when the thread that started it dies — the whole
    /// process killed with `kill -9` included — so no write of a dead run goes on under the
    /// next one (`PR_SET_PDEATHSIG`). Off by default: a reset command is left to finish.
    pub die_with_parent: bool,
}

impl RunSpec {
    /// Runs `program` with no arguments, a deadline of `deadline`, and the default grace and
    /// limits.
    pub fn new(program: impl Into<PathBuf>, deadline: Duration) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            deadline,
            grace: Duration::from_millis(500),
            eof_grace: Duration::from_millis(200),
            limits: OutputLimits::default(),
            stdin: None,
            cancel: None,
            die_with_parent: false,
        }
    }

    /// Kills the child when the thread that started it dies ([`RunSpec::die_with_parent`]).
    pub fn die_with_parent(mut self) -> Self {
        self.die_with_parent = true;
        self
    }

    /// Ends the run when `cancel` is triggered, as a deadline ends it.
    pub fn cancel(mut self, cancel: crate::Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Gives the child `input` on stdin.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Gives the child the variable `name` = `value` (a `PATH` or `LANG` here is ignored: the
    /// child always gets the runner's).
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    crate::setters! {
        /// Sets the output caps.
        pub limits: OutputLimits,
        /// Sets the grace between SIGTERM and SIGKILL.
        pub grace: Duration,
        /// Sets the bound on the wait for pipe EOF.
        pub eof_grace: Duration,
    }

    /// The command line, for logs.
    pub fn display(&self) -> String {
        let mut line = self.program.display().to_string();
        for arg in &self.args {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    }
}
