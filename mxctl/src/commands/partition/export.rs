//! `mxctl partition export`: the host's layout as a mig-parted v1 document (YAML) that
//! `partition apply` takes back as zero steps, read from the cards under the host lock
//! (`mig_layout::export_host`); with `--declared`, what the host is declared to be
//! (`mig_layout::export_declared`), read from the state. With `--json`, `{"document",
//! "warnings"}`: the same document as JSON, and what it cannot say, typed.

use super::layout_failure;
use crate::cli::PartitionExport;
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use host_sync::{FileStore, StateStore};
use mig_layout::to_yaml;

/// What the host is declared to be, read from the state: a usage failure where nothing is
/// (`partition export --declared`, `vgpu export --declared`).
pub fn declared(host: &Host) -> Result<layout_model::Declaration, Failure> {
    let state = FileStore::read_only(host.state_dir()).load()?;
    state.and_then(|state| state.declared).ok_or_else(|| {
        Failure::Usage(
            "nothing is declared on this host: no partition or vgpu apply or leave has written"
                .to_owned(),
        )
    })
}

/// Prints the document; what the format cannot say goes to the log as warnings (and with
/// `--json` beside the document).
pub fn run(
    args: &PartitionExport,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let exported = if args.declared {
        mig_layout::export_declared(&declared(host)?)
    } else {
        let label = args.label.as_deref().unwrap_or("current");
        mig_layout::export_host(host, &helper(&args.helper, config), label, args.lock.wait())
            .map_err(layout_failure)?
    };
    for warning in &exported.warnings {
        tracing::warn!("{warning}");
    }
    output.emit(&exported, &to_yaml(&exported.document))?;
    Ok(Exit::Done)
}
