//! `mxctl probe`: read NVIDIA GPUs through the helper, several at once; writes nothing.

use crate::cli::Probe;
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::helper::helper;
use crate::output::{Output, table};
use gpu_host_probe::Host;
use gpu_host_probe::helper::CardRead;
use serde::Serialize;

/// The `--json` document: each card as `gpu-host-probe` serializes a read.
#[derive(Debug, Serialize)]
pub struct ProbeReport<'a> {
    gpus: &'a [CardRead],
}

/// Reads the cards named with `--device`, or else every NVIDIA GPU bound to `nvidia`, under the
/// host lock (waiting as a sync does), so no card is read inside a warm reset's window.
pub fn run(args: &Probe, config: &Config, host: &Host, output: Output) -> Result<Exit, Failure> {
    let devices = if args.devices.is_empty() {
        host_sync::scan_gpus(host.sysfs_root())?
            .into_iter()
            .filter(|gpu| gpu.is_read_by(host_sync::ReadBy::Helper))
            .map(|gpu| gpu.bdf)
            .collect()
    } else {
        args.devices.clone()
    };
    let lock_wait = args.lock.wait();
    let reads = helper(&args.helper, config).probe(host, &devices, lock_wait)?;
    print(&reads, output)
}

/// Prints the reads; a probe that recorded failed reads is still done (exit 0).
pub fn print(reads: &[CardRead], output: Output) -> Result<Exit, Failure> {
    let mut rows = vec![
        ["DEVICE", "OUTCOME", "PARTITION-MODE", "REASON", "ELAPSED"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for read in reads {
        rows.push(vec![
            read.device.to_string(),
            read.outcome.case().to_string(),
            read.outcome.partition_mode().to_string(),
            read.outcome
                .reason()
                .map_or_else(|| "-".to_owned(), |reason| reason.to_string()),
            format!("{} ms", read.elapsed.as_millis()),
        ]);
    }
    let mut text = if reads.is_empty() {
        "no NVIDIA GPU bound to nvidia to read\n".to_owned()
    } else {
        table(&rows)
    };
    for read in reads {
        if let Some(message) = &read.message {
            text.push_str(&format!("{}: {message}\n", read.device));
        }
        for lost in &read.lost {
            text.push_str(&format!("{}: lost {lost}\n", read.device));
        }
    }
    output.emit(&ProbeReport { gpus: reads }, &text)?;
    Ok(Exit::Done)
}
