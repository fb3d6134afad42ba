//! `mxctl probe`: read NVIDIA GPUs through the helper, several at once; writes nothing.

use crate::cli::Probe;
use crate::config::Config;
use crate::failure::Failure;
use crate::helper::helper;
use crate::host::Host;
use crate::output::{Output, table};
use gpu_host_probe::helper::CardRead;
use gpu_host_probe::lock::HostLock;
use gpu_partition_types::{Case, PartitionMode};
use serde::Serialize;

/// The `--json` document.
#[derive(Debug, Serialize)]
pub struct ProbeReport {
    gpus: Vec<ProbedGpu>,
}

#[derive(Debug, Serialize)]
struct ProbedGpu {
    device: String,
    outcome: Case,
    partition_mode: PartitionMode,
    reason: String,
    elapsed_ms: u128,
    lost: Vec<String>,
    unknown: Vec<String>,
}

/// Reads the cards named with `--device`, or else every NVIDIA GPU bound to `nvidia`, under the
/// host lock (waiting as a sync does), so no card is read inside a warm reset's window.
pub fn run(args: &Probe, config: &Config, host: &Host, output: Output) -> Result<u8, Failure> {
    let _lock = HostLock::acquire(&host.state_dir, host_sync::DEFAULT_LOCK_WAIT)?;
    let devices = if args.devices.is_empty() {
        host_sync::scan_gpus(&host.sysfs_root)?
            .into_iter()
            .filter(|gpu| gpu.is_to_be_read())
            .map(|gpu| gpu.bdf)
            .collect()
    } else {
        args.devices.clone()
    };
    let reads = helper(&args.helper, config).probe(&devices);
    print(&reads, output)
}

/// Prints the reads; a probe that recorded failed reads is still done (exit 0).
pub fn print(reads: &[CardRead], output: Output) -> Result<u8, Failure> {
    let report = ProbeReport {
        gpus: reads.iter().map(probed).collect(),
    };
    let mut rows = vec![
        ["DEVICE", "OUTCOME", "PARTITION-MODE", "REASON", "ELAPSED"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for gpu in &report.gpus {
        rows.push(vec![
            gpu.device.clone(),
            gpu.outcome.to_string(),
            gpu.partition_mode.to_string(),
            if gpu.reason.is_empty() {
                "-".to_owned()
            } else {
                gpu.reason.clone()
            },
            format!("{} ms", gpu.elapsed_ms),
        ]);
    }
    let mut text = if report.gpus.is_empty() {
        "no NVIDIA GPU bound to nvidia to read\n".to_owned()
    } else {
        table(&rows)
    };
    for read in reads {
        for lost in &read.lost {
            text.push_str(&format!("{}: lost {lost}\n", read.device));
        }
    }
    output.emit(&report, &text)?;
    Ok(0)
}

fn probed(read: &CardRead) -> ProbedGpu {
    ProbedGpu {
        device: read.device.to_string(),
        outcome: read.outcome.case(),
        partition_mode: read.outcome.partition_mode(),
        reason: read
            .outcome
            .reason()
            .map(ToString::to_string)
            .unwrap_or_default(),
        elapsed_ms: read.elapsed.as_millis(),
        lost: read
            .lost
            .iter()
            .map(|lost| lost.pointer.to_string())
            .collect(),
        unknown: read.unknown.iter().map(ToString::to_string).collect(),
    }
}
