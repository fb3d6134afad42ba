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

use super::hook_run::{HookPoint, HookRun, Hooks};
use crate::report::{ApplyWarning, Draft};
use gpu_host_probe::run::run;

/// How many bytes of a hook's stdout and of its stderr the report keeps (each).
const KEPT: usize = 16 << 10;

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
