//! The process runner: runs a program given as data, with a deadline, in its own process
//! group, and classifies how it ended.
//!
//! - The environment is cleared but for `PATH=/usr/sbin:/usr/bin:/sbin:/bin` and `LANG=C`.
//! - An absent or non-executable program is never forked.
//! - At the deadline the group gets SIGTERM, then SIGKILL after a grace (500 ms).
//! - Both pipes are drained while waiting; output past its cap kills the group.
//! - The wait for pipe EOF after the child ends is bounded (a grandchild may hold the pipes),
//!   and such a leak is reported; the group is killed before the child is reaped.
//! - The result is classified by one pure function, [`classify`].

mod classify;
mod command;
mod prepare;
mod spec;
mod supervise;

pub use classify::{RunFacts, RunResult, StartError, Stream, Termination, classify};
pub use command::{CommandLine, CommandLineError};
pub use prepare::{is_relative_path, resolve as check_program};
pub use spec::{CHILD_PATH, OutputLimits, RunSpec};
pub use supervise::run;

use std::time::Duration;

/// A finished run: how it ended and what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Run {
    /// How it ended.
    pub result: RunResult,
    /// Its standard output, up to the cap.
    pub stdout: Vec<u8>,
    /// Its standard error, up to the cap.
    pub stderr: Vec<u8>,
    /// From the start of the run (checks included) to its end.
    pub elapsed: Duration,
    /// The child's pid, when it was started (already reaped).
    pub pid: Option<u32>,
}

impl Run {
    /// A run that never started.
    pub fn not_started(error: StartError) -> Self {
        supervise::not_started(error, std::time::Instant::now())
    }
}
