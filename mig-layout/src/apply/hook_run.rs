//! The hooks of an apply as given ([`Hooks`], by [`HookPoint`]) and how one ran
//! ([`HookRun`], kept in the report); running them is `hooks`'.

use gpu_host_probe::run::{CommandLine, RunResult, Termination};
use serde::Serialize;
use std::fmt;
use std::time::Duration;

gpu_partition_types::token_enum! {
    /// Where in an apply a hook runs.
    pub enum HookPoint: "hook" {
        /// Once the host lock is held, before anything is read.
        ApplyStart = "apply-start",
        /// Before a mode change and the reset that completes it.
        PreApplyMode = "pre-apply-mode",
        /// Before instances are destroyed or created.
        PreApplyConfig = "pre-apply-config",
        /// Always, once the apply is over (with its outcome).
        ApplyExit = "apply-exit",
    }
}

/// The hooks of an apply, by point, each run in the order given; and how long one may run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hooks {
    /// `apply-start`.
    pub apply_start: Vec<CommandLine>,
    /// `pre-apply-mode`.
    pub pre_apply_mode: Vec<CommandLine>,
    /// `pre-apply-config`.
    pub pre_apply_config: Vec<CommandLine>,
    /// `apply-exit`.
    pub apply_exit: Vec<CommandLine>,
    /// How long one command may run before its group is killed (default 60 s).
    pub deadline: Duration,
}

/// How long a hook may run by default: stopping DCGM or kubelet takes seconds.
pub const HOOK_DEADLINE: Duration = Duration::from_secs(60);

impl Default for Hooks {
    fn default() -> Self {
        Self {
            apply_start: Vec::new(),
            pre_apply_mode: Vec::new(),
            pre_apply_config: Vec::new(),
            apply_exit: Vec::new(),
            deadline: HOOK_DEADLINE,
        }
    }
}

impl Hooks {
    /// No hook.
    pub fn none() -> Self {
        Self::default()
    }

    /// The same with `hook` added at `point`.
    pub fn with(mut self, point: HookPoint, hook: CommandLine) -> Self {
        self.at_mut(point).push(hook);
        self
    }

    /// The same with one command's deadline set.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The commands at `point`.
    pub fn at(&self, point: HookPoint) -> &[CommandLine] {
        match point {
            HookPoint::ApplyStart => &self.apply_start,
            HookPoint::PreApplyMode => &self.pre_apply_mode,
            HookPoint::PreApplyConfig => &self.pre_apply_config,
            HookPoint::ApplyExit => &self.apply_exit,
        }
    }

    fn at_mut(&mut self, point: HookPoint) -> &mut Vec<CommandLine> {
        match point {
            HookPoint::ApplyStart => &mut self.apply_start,
            HookPoint::PreApplyMode => &mut self.pre_apply_mode,
            HookPoint::PreApplyConfig => &mut self.pre_apply_config,
            HookPoint::ApplyExit => &mut self.apply_exit,
        }
    }
}

/// One hook command as it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HookRun {
    /// Its point.
    pub point: HookPoint,
    /// The command.
    pub command: CommandLine,
    /// How it ended, typed (in JSON: `end` and its facts beside it, as
    /// [`RunResult`] serializes).
    #[serde(flatten)]
    pub end: RunResult,
    /// What it wrote on stdout: at most 16 KiB of it, cut at a character boundary (lossily
    /// UTF-8, then `…` when cut).
    pub stdout: String,
    /// What it wrote on stderr (the same).
    pub stderr: String,
    /// How long it took (milliseconds in JSON).
    #[serde(rename = "elapsed_ms", serialize_with = "millis")]
    pub elapsed: Duration,
}

impl HookRun {
    /// Whether it passed: it exited 0 (something it started may have held its output:
    /// [`HookRun::held_output`]).
    pub fn passed(&self) -> bool {
        matches!(
            self.end,
            RunResult::Exited(0) | RunResult::LeakedPipes(Termination::Exited(0))
        )
    }

    /// Whether it exited 0 while something it started still held its output (stopped with
    /// the hook's process group): a warning, not a failure.
    pub fn held_output(&self) -> bool {
        matches!(self.end, RunResult::LeakedPipes(Termination::Exited(0)))
    }
}

fn millis<S: serde::Serializer>(elapsed: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

impl fmt::Display for HookRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} hook `{}` ", self.point, self.command)?;
        match &self.end {
            RunResult::CouldNotStart(error) => write!(f, "was never started: {error}"),
            end => write!(f, "{end}"),
        }
    }
}
