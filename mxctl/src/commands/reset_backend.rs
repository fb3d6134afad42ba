//! What `reset` and `reset step` share: the real backend and the window from the command line
//! and the config, and the exit code of an outcome.

use crate::cli::BackendArgs;
use crate::config::Config;
use std::path::Path;
use std::time::Duration;
use warm_reset::{MxSmiBackend, OutcomeKind};

/// The exit code of an outcome: 0 done or dry run, 3 blocked, 4 cold reboot.
pub fn exit_code(outcome: OutcomeKind) -> u8 {
    match outcome {
        OutcomeKind::Done | OutcomeKind::DryRun => 0,
        OutcomeKind::Blocked => 3,
        OutcomeKind::ColdRebootRequired => 4,
    }
}

/// The reset window: `--window`, else the config's.
pub fn window(args: &BackendArgs, config: &Config) -> Duration {
    args.window.unwrap_or(config.reset_window)
}

/// The real backend from the command line and the config.
pub fn real_backend(args: &BackendArgs, config: &Config, proc_root: &Path) -> MxSmiBackend {
    let mx_smi = args.mx_smi.clone().or_else(|| config.mx_smi.clone());
    let kmsg = args.kmsg.clone().unwrap_or_else(|| config.kmsg.clone());
    MxSmiBackend::new(mx_smi, proc_root, kmsg)
}
