//! `mxctl sync`: the host sync, written to the state directory.

use super::state::StateReport;
use crate::cli::{AfterBootArg, Sync};
use crate::config::Config;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use host_sync::{AfterBoot, FileStore, SyncOptions};

/// Runs the sync and prints the state it wrote.
pub fn run(args: &Sync, config: &Config, host: &Host, output: Output) -> Result<u8, Failure> {
    let pool = args.pool.map_or(config.pool, host_sync::Pool::from);
    let after_boot = match args.after_boot {
        AfterBootArg::Auto => AfterBoot::Auto,
        AfterBootArg::Yes => AfterBoot::Yes,
        AfterBootArg::No => AfterBoot::No,
    };
    let mut options = SyncOptions::new(pool, after_boot);
    if let Some(wait) = args.lock_wait {
        options = options.lock_wait(wait);
    }
    let mut store = FileStore::new(host.state_dir());
    let report = host_sync::sync(host, &helper(&args.helper, config), &mut store, &options)?;
    let text = StateReport {
        status: report.status,
        reason: &report.reason.into(),
        message: report.message.as_deref(),
        after_boot: Some(report.after_boot),
        gpus: &report.gpus,
        warnings: &report
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        layout: None,
        declared: None,
        drift: &report.drift,
    }
    .text();
    output.emit(&report, &text)?;
    Ok(0)
}
