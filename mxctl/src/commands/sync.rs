//! `mxctl sync`: the host sync, written to the state directory.

use super::state::StateReport;
use crate::cli::{AfterBootArg, Switch, Sync};
use crate::config::Config;
use crate::failure::Failure;
use crate::helper::helper;
use crate::host::Host;
use crate::output::Output;
use host_sync::{AfterBoot, Boot, FileStore, HostPaths, SyncOptions};

/// Runs the sync and prints the state it wrote.
pub fn run(args: &Sync, config: &Config, host: &Host, output: Output) -> Result<u8, Failure> {
    let pool_enabled = match args.pool {
        Some(Switch::Enabled) => true,
        Some(Switch::Disabled) => false,
        None => config.pool_enabled,
    };
    let after_boot = match args.after_boot {
        AfterBootArg::Auto => AfterBoot::Auto,
        AfterBootArg::Yes => AfterBoot::Yes,
        AfterBootArg::No => AfterBoot::No,
    };
    let options = SyncOptions::new(pool_enabled, after_boot).boot(Boot::read(&host.proc_root));
    let paths = HostPaths::new(&host.state_dir, &host.sysfs_root);
    let mut store = FileStore::new(&host.state_dir);
    let report = host_sync::sync(&paths, &helper(&args.helper, config), &mut store, &options)?;
    let report = StateReport::new(
        report.status,
        &report.reason.into(),
        Some(report.after_boot),
        &report.gpus,
    );
    output.emit(&report, &report.text())?;
    Ok(0)
}
