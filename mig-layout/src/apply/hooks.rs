//! Hooks, as mig-parted has them: commands run at `apply-start`, `pre-apply-mode` (before a
//! mode change and its reset), `pre-apply-config` (before instances are destroyed or created)
//! and `apply-exit` (always, once the apply is over, with its outcome), for every apply, leave
//! and restore that is not a dry run.
//!
//! Each runs through the runner of `gpu-host-probe` (a deadline, its output captured into the
//! report, its own process group), under the trust rules of the helper: a program another user
//! could change is never run. A pre-hook (`apply-start`, `pre-apply-mode`, `pre-apply-config`)
//! that does not exit 0 blocks the apply before anything is written (`hook_failed`, naming the
//! hook and its end); `apply-exit` runs all the same. A hook gets, beside `PATH` and `LANG`:
//! `MXCTL_HOOK` (its point), `MXCTL_LABEL` (the layout), `MXCTL_DEVICES` (the GPUs, by PCI
//! address, separated by spaces), and at `apply-exit` `MXCTL_OUTCOME` and `MXCTL_REASON`.

use gpu_host_probe::run::{RunResult, RunSpec, run};
use serde::Serialize;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
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

/// One command of a hook: a program and its arguments (never a shell line).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hook {
    /// The program (an absolute path, or a name looked up in the runner's `PATH`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Hook {
    /// `program` with `args`.
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

    /// A command line as a config gives it: words separated by spaces (no quoting, no shell);
    /// `None` for a blank line.
    pub fn parse(line: &str) -> Option<Self> {
        let mut words = line.split_whitespace();
        let program = words.next()?;
        Some(Self::new(program, words))
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.program.display())?;
        for arg in &self.args {
            write!(f, " {}", arg.to_string_lossy())?;
        }
        Ok(())
    }
}

/// The hooks of an apply, by point, each run in the order given; and how long one may run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hooks {
    /// `apply-start`.
    pub apply_start: Vec<Hook>,
    /// `pre-apply-mode`.
    pub pre_apply_mode: Vec<Hook>,
    /// `pre-apply-config`.
    pub pre_apply_config: Vec<Hook>,
    /// `apply-exit`.
    pub apply_exit: Vec<Hook>,
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
    pub fn with(mut self, point: HookPoint, hook: Hook) -> Self {
        self.at_mut(point).push(hook);
        self
    }

    /// The same with one command's deadline set.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The commands at `point`.
    pub fn at(&self, point: HookPoint) -> &[Hook] {
        match point {
            HookPoint::ApplyStart => &self.apply_start,
            HookPoint::PreApplyMode => &self.pre_apply_mode,
            HookPoint::PreApplyConfig => &self.pre_apply_config,
            HookPoint::ApplyExit => &self.apply_exit,
        }
    }

    fn at_mut(&mut self, point: HookPoint) -> &mut Vec<Hook> {
        match point {
            HookPoint::ApplyStart => &mut self.apply_start,
            HookPoint::PreApplyMode => &mut self.pre_apply_mode,
            HookPoint::PreApplyConfig => &mut self.pre_apply_config,
            HookPoint::ApplyExit => &mut self.apply_exit,
        }
    }
}

/// How much of a hook's stdout and stderr the report keeps (each).
const KEPT: usize = 16 << 10;

/// One hook command as it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HookRun {
    /// Its point.
    pub point: HookPoint,
    /// The command line, for people.
    pub command: String,
    /// Whether it exited 0.
    pub ok: bool,
    /// How it ended, for people (`exited 0`, `timed out`, `was never started: …`).
    pub ended: String,
    /// What it wrote on stdout (at most 16 KiB, lossily UTF-8).
    pub stdout: String,
    /// What it wrote on stderr (the same).
    pub stderr: String,
    /// How long it took (milliseconds in JSON).
    #[serde(rename = "elapsed_ms", serialize_with = "millis")]
    pub elapsed: Duration,
}

fn millis<S: serde::Serializer>(elapsed: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

impl fmt::Display for HookRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} hook `{}` {}", self.point, self.command, self.ended)
    }
}

/// What every hook of one apply is told.
#[derive(Debug, Clone)]
pub(super) struct HookEnv {
    pub label: String,
    pub devices: String,
    /// How the apply ended: `MXCTL_OUTCOME` and `MXCTL_REASON`, at `apply-exit`.
    pub outcome: Option<crate::report::ApplyOutcome>,
}

fn kept(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    match text.char_indices().nth(KEPT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

/// Runs the commands of `point` in order, each recorded in `runs`; stops at the first that does
/// not exit 0 and answers it (a pre-hook that fails blocks the apply).
pub(super) fn run_point(
    hooks: &Hooks,
    point: HookPoint,
    env: &HookEnv,
    runs: &mut Vec<HookRun>,
) -> Option<HookRun> {
    for hook in hooks.at(point) {
        let mut spec = RunSpec::new(&hook.program, hooks.deadline)
            .args(hook.args.iter().cloned())
            .env("MXCTL_HOOK", point.to_string())
            .env("MXCTL_LABEL", &env.label)
            .env("MXCTL_DEVICES", &env.devices);
        if let Some(outcome) = env.outcome {
            spec = spec
                .env("MXCTL_OUTCOME", outcome.as_str())
                .env("MXCTL_REASON", outcome.reason().unwrap_or_default());
        }
        let done = run(&spec);
        let ok = matches!(done.result, RunResult::Exited(0));
        let ended = match &done.result {
            RunResult::CouldNotStart(error) => format!("was never started: {error}"),
            result => format!("{result}"),
        };
        let ran = HookRun {
            point,
            command: hook.to_string(),
            ok,
            ended,
            stdout: kept(&done.stdout),
            stderr: kept(&done.stderr),
            elapsed: done.elapsed,
        };
        tracing::info!("{ran}");
        runs.push(ran.clone());
        if !ok {
            return Some(ran);
        }
    }
    None
}
