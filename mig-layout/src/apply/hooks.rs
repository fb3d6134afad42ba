//! Hooks, as mig-parted has them: commands run at `apply-start`, `pre-apply-mode` (before a
//! mode change and its reset), `pre-apply-config` (before instances are destroyed or created)
//! and `apply-exit` (always, once the apply is over, with its outcome), for every apply, leave
//! and restore that is not a dry run.
//!
//! Each is a [`CommandLine`] (an absolute path or a bare name, never a relative path or a
//! shell line) run through the runner of `gpu-host-probe` (a deadline, its output captured
//! into the report, its own process group), under the trust rules of the helper: a program
//! another user could change is never run. A pre-hook (`apply-start`, `pre-apply-mode`,
//! `pre-apply-config`) that does not exit 0 blocks the apply before anything is written
//! (`hook_failed`, naming the hook and its typed end); `apply-exit` runs all the same. A hook
//! that exits 0 while something it started still holds its output (a daemon restarted without
//! redirecting it) passes, with a warning: what held the output was in the hook's process
//! group and was stopped with it. A hook gets, beside `PATH` and `LANG`:
//! `MXCTL_HOOK` (its point), `MXCTL_LABEL` (the layout), `MXCTL_DEVICES` (the GPUs, by PCI
//! address, separated by spaces), and at `apply-exit` `MXCTL_OUTCOME` and `MXCTL_REASON`.

use crate::report::{ApplyWarning, Draft};
use gpu_host_probe::run::{CommandLine, RunResult, Termination, run};
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

/// How many bytes of a hook's stdout and of its stderr the report keeps (each).
const KEPT: usize = 16 << 10;

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

/// What every hook of one apply is told.
#[derive(Debug, Clone)]
pub(super) struct HookEnv {
    pub label: String,
    pub devices: String,
    /// How the apply ended: `MXCTL_OUTCOME` and `MXCTL_REASON`, at `apply-exit`.
    pub outcome: Option<crate::report::ApplyOutcome>,
}

/// At most [`KEPT`] bytes of `bytes` as text, cut at a character boundary, `…` when cut.
fn kept(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= KEPT {
        return text.into_owned();
    }
    let mut at = KEPT;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    format!("{}…", &text[..at])
}

/// Runs the commands of `point` in order, each recorded in the draft's hooks (one that held
/// its output after exit 0 also as a warning); stops at the first that did not pass and
/// answers it (a pre-hook that fails blocks the apply).
pub(super) fn run_point(
    hooks: &Hooks,
    point: HookPoint,
    env: &HookEnv,
    draft: &mut Draft,
) -> Option<HookRun> {
    for hook in hooks.at(point) {
        let mut spec = hook
            .spec(hooks.deadline)
            .env("MXCTL_HOOK", point.to_string())
            .env("MXCTL_LABEL", &env.label)
            .env("MXCTL_DEVICES", &env.devices);
        if let Some(outcome) = env.outcome {
            spec = spec
                .env("MXCTL_OUTCOME", outcome.as_str())
                .env("MXCTL_REASON", outcome.reason().unwrap_or_default());
        }
        let done = run(&spec);
        let ran = HookRun {
            point,
            command: hook.clone(),
            end: done.result,
            stdout: kept(&done.stdout),
            stderr: kept(&done.stderr),
            elapsed: done.elapsed,
        };
        tracing::info!("{ran}");
        draft.hooks.push(ran.clone());
        if ran.held_output() {
            draft.warnings.push(ApplyWarning::HookHeldOutput(ran));
        } else if !ran.passed() {
            return Some(ran);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_kept_to_16_kib_in_bytes_cut_at_a_character_boundary() {
        // 'é' is two bytes: 16 KiB of bytes end inside one at an odd length.
        let long = format!("a{}", "é".repeat(KEPT));
        let kept = kept(long.as_bytes());
        let body = kept.strip_suffix('…').unwrap_or_default();
        assert!(
            body.len() <= KEPT && body.len() >= KEPT - 1,
            "{}",
            body.len()
        );
        assert!(long.starts_with(body));
    }

    #[test]
    fn output_within_the_limit_is_kept_whole() {
        assert_eq!(kept("done\n".as_bytes()), "done\n");
    }
}
