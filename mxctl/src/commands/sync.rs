//! `mxctl sync`: the host sync, written to the state directory.

use super::state::StateReport;
use crate::cli::{AfterBootArg, LockWaitArgs, Sync};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use host_sync::{AfterBoot, FileStore, SyncOptions};

/// Runs the sync and prints the state it wrote.
pub fn run(args: &Sync, config: &Config, host: &Host, output: Output) -> Result<Exit, Failure> {
    let pool = args.pool.map_or(config.pool, host_sync::Pool::from);
    let after_boot = match args.after_boot {
        AfterBootArg::Auto => AfterBoot::Auto,
        AfterBootArg::Yes => AfterBoot::Yes,
        AfterBootArg::No => AfterBoot::No,
    };
    let options = options(pool, after_boot, &args.lock);
    let mut store = FileStore::new(host.state_dir());
    let report = host_sync::sync(host, &helper(&args.helper, config), &mut store, &options)?;
    let text = StateReport {
        status: report.status,
        reason: &report.reason.into(),
        message: report.message.as_deref(),
        after_boot: Some(report.after_boot),
        gpus: &report.gpus,
        ownership: &report.ownership,
        warnings: &report
            .warnings
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        layout: None,
        declared: None,
        drift: &report.drift,
        checked_at: report.checked_at,
    }
    .text();
    output.emit(&report, &text)?;
    Ok(Exit::Done)
}

/// The sync mxctl runs after a write of its own to the cards (a warm reset, a plan step): with
/// the config's pool switch and helper, waiting for the lock as a sync does. The write ended
/// every check of the cards it touched; this reads them again, so the surfaces say what they
/// hold now (`entering (layout_drifted)`, naming what the reset took). `None` with a warning
/// when it could not run: the host then says `unknown` until a sync does.
pub fn after_write(config: &Config, host: &Host) -> Option<host_sync::SyncReport> {
    let options = SyncOptions::new(config.pool, AfterBoot::No);
    let mut store = FileStore::new(host.state_dir());
    let helper = gpu_host_probe::helper::Helper::new(config.helper.clone());
    match host_sync::sync(host, &helper, &mut store, &options) {
        Ok(report) => Some(report),
        Err(error) => {
            tracing::warn!(
                "the sync after the write could not run: {}; the cards' state is unknown until \
                 a sync reads them",
                gpu_host_probe::chain::Chain(&error)
            );
            None
        }
    }
}

/// A write's document (a reset's, a plan step's) with the host the sync after it left
/// (`host_after`: the sync's document, `null` when none ran).
#[derive(serde::Serialize)]
pub struct WithHost<'a, R> {
    #[serde(flatten)]
    pub report: &'a R,
    pub host_after: Option<&'a host_sync::SyncReport>,
}

/// The host as the sync after a write left it, for the end of a command's text.
pub fn host_lines(after: &host_sync::SyncReport) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    let _ = writeln!(text, "host:    {} ({})", after.status, after.reason);
    if let Some(message) = &after.message {
        let _ = writeln!(text, "why:     {message}");
    }
    text
}

/// The sync's options: `--lock-wait` when given, else the library's bound
/// ([`host_sync::DEFAULT_LOCK_WAIT`]).
fn options(pool: host_sync::Pool, after_boot: AfterBoot, lock: &LockWaitArgs) -> SyncOptions {
    SyncOptions::new(pool, after_boot).lock_wait(lock.wait())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn without_lock_wait_a_sync_waits_the_librarys_bound_and_with_it_the_value_given() {
        let pool = host_sync::Pool::Enabled;
        assert_eq!(
            options(pool, AfterBoot::No, &LockWaitArgs { lock_wait: None }).lock_wait,
            host_sync::DEFAULT_LOCK_WAIT
        );
        assert_eq!(
            options(
                pool,
                AfterBoot::No,
                &LockWaitArgs {
                    lock_wait: Some(Duration::from_secs(60))
                }
            )
            .lock_wait,
            Duration::from_secs(60)
        );
    }
}
