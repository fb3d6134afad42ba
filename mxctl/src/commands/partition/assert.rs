//! `mxctl partition assert`: whether a layout is applied, every difference named (GPU
//! instances, compute instances and placements apart); reads only, under the host lock.

use super::layout;
use crate::cli::PartitionAssert;
use crate::config::Config;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::Output;
use gpu_host_probe::Host;
use gpu_partition_types::Bdf;
use host_sync::{Difference, DifferenceKind, differences};
use mig_layout::{host_gpus, select};
use serde::Serialize;
use std::fmt::Write as _;

/// One GPU of the layout and how it differs.
#[derive(Debug, Serialize)]
struct GpuAssert {
    device: String,
    index: u32,
    line: usize,
    differences: Vec<Difference>,
}

/// The `--json` document.
#[derive(Debug, Serialize)]
struct AssertReport {
    label: String,
    applied: bool,
    gpus: Vec<GpuAssert>,
    warnings: Vec<String>,
}

/// Exit 0 when every GPU the layout names is as it wants, 1 with the differences.
pub fn run(
    args: &PartitionAssert,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<u8, Failure> {
    let specs = layout(&args.layout)?;
    let selection = select(&specs, &host_gpus(host.sysfs_root())?)
        .map_err(|error| Failure::Usage(error.to_string()))?;
    let mut wanted = selection.wanted;
    for device in &args.devices {
        if !wanted.iter().any(|w| w.gpu.bdf == *device) {
            return Err(Failure::Usage(format!(
                "{device} is not a GPU the layout {:?} names on this host",
                args.layout.select
            )));
        }
    }
    if !args.devices.is_empty() {
        wanted.retain(|w| args.devices.contains(&w.gpu.bdf));
    }
    let helper = helper(&args.helper, config);
    let lock = host.lock(host_sync::DEFAULT_LOCK_WAIT)?;
    let format = helper.negotiate().0;
    let mut gpus = Vec::with_capacity(wanted.len());
    for w in &wanted {
        let unreadable = |device: Bdf, message: String| {
            Difference::new(device, DifferenceKind::Unreadable, message)
        };
        let found = match &format {
            Err(failure) => vec![unreadable(w.gpu.bdf, failure.to_string())],
            Ok(format) => match helper.read_reply(&lock, w.gpu.bdf, *format) {
                Ok(reply) => differences(&reply, &w.want),
                Err(failure) => vec![unreadable(w.gpu.bdf, failure.to_string())],
            },
        };
        gpus.push(GpuAssert {
            device: w.gpu.bdf.to_string(),
            index: w.gpu.index,
            line: w.line,
            differences: found,
        });
    }
    drop(lock);
    let applied = gpus.iter().all(|gpu| gpu.differences.is_empty());
    let report = AssertReport {
        label: args.layout.select.clone(),
        applied,
        gpus,
        warnings: selection.absent,
    };
    let mut text = String::new();
    for gpu in &report.gpus {
        for difference in &gpu.differences {
            let _ = writeln!(
                text,
                "GPU {}  {}  {}: {}",
                gpu.index, gpu.device, difference.kind, difference.message
            );
        }
    }
    for warning in &report.warnings {
        let _ = writeln!(text, "warning: {warning}");
    }
    let _ = writeln!(
        text,
        "{}",
        if applied {
            format!("the layout {:?} is applied", report.label)
        } else {
            format!("the layout {:?} is not applied", report.label)
        }
    );
    output.emit(&report, &text)?;
    Ok(u8::from(!applied))
}
