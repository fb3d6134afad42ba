//! `mxctl partition export`: the host's layout as a mig-parted v1 document (YAML, or JSON with
//! `--json`) that `partition apply` takes back as zero steps; reads only, under the host lock.

use crate::cli::PartitionExport;
use crate::config::Config;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use mig_layout::{export, host_gpus, to_json, to_yaml};

/// Prints the document; what the format cannot say goes to the log as warnings.
pub fn run(
    args: &PartitionExport,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<u8, Failure> {
    let gpus = host_gpus(host.sysfs_root())?;
    let helper = helper(&args.helper, config);
    let lock = host.lock(host_sync::DEFAULT_LOCK_WAIT)?;
    let format = helper
        .negotiate()
        .0
        .map_err(|failure| Failure::Usage(format!("the helper cannot read: {failure}")))?;
    let mut read = Vec::with_capacity(gpus.len());
    for gpu in gpus {
        match helper.read_reply(&lock, gpu.bdf, format) {
            Ok(reply) => read.push((gpu, reply)),
            Err(failure) => tracing::warn!("{gpu} is left out: {failure}"),
        }
    }
    drop(lock);
    let exported = export(&args.label, &read);
    for warning in &exported.warnings {
        tracing::warn!("{warning}");
    }
    output.emit(&to_json(&exported.document), &to_yaml(&exported.document))?;
    Ok(0)
}
