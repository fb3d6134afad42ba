//! `mxctl partition list`: every partition of the host's GPUs as the last sync read them
//! (`host_sync::partitions`), as `xe` lists records — one record per GPU, then one per
//! partition, each field `name ( RO): value` with the colons aligned —, or `--json`
//! (`host_sync::PartitionsReport`). An NVIDIA GPU's record says, besides, what a host restart
//! does to its division (`layout_model::AfterRestart`): its architecture, what becomes of its
//! MIG mode, whether the division comes back by itself, what the boot restore redoes and
//! whether that resets the GPU.

use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::{Clock, Host, SystemClock};
use host_sync::{FileStore, GpuPartitions, PartitionsReport, StateStore};
use layout_model::partition::Partition;
use std::fmt::Write as _;

/// Reads the stored state (no lock: the store's writes are atomic), judges each GPU's rows
/// against the boot and the record of writes now, and prints them.
pub fn run(host: &Host, output: Output) -> Result<Exit, Failure> {
    let state = FileStore::read_only(host.state_dir())
        .load()?
        .unwrap_or_default();
    let gpus = host_sync::partitions(&state, &host.now());
    let at = SystemClock::new().unix_s();
    output.emit(&PartitionsReport::new(&gpus, at), &text(&gpus, at))?;
    Ok(Exit::Done)
}

/// One `xe`-style record: the first field's name left-aligned, the others right-aligned, so
/// the colons line up.
fn record(text: &mut String, fields: &[(&str, String)]) {
    let width = fields.iter().map(|(name, _)| name.len()).max().unwrap_or(0) + " ( RO)".len();
    for (index, (name, value)) in fields.iter().enumerate() {
        let name = format!("{name} ( RO)");
        if index == 0 {
            let _ = writeln!(text, "{name:<width$}: {value}");
        } else {
            let _ = writeln!(text, "{name:>width$}: {value}");
        }
    }
    text.push('\n');
}

fn gpu_fields(gpu: &GpuPartitions, at: u64) -> Vec<(&'static str, String)> {
    let division = gpu.division.as_ref();
    let stale = match (gpu.because(), gpu.why()) {
        (Some(because), Some(why)) => format!("yes ({because}): {why}"),
        _ => "no".to_owned(),
    };
    let mut fields = vec![
        ("gpu", gpu.gpu.to_string()),
        (
            "generation",
            division.map_or_else(|| "unknown".to_owned(), |d| d.generation.to_string()),
        ),
        (
            "read",
            match (division, gpu.age(at)) {
                (Some(d), Some(age)) => format!("{} (Unix time), {age} s ago", d.read_at),
                _ => "never".to_owned(),
            },
        ),
        ("stale", stale),
        (
            "requires-reset",
            gpu.requires_reset
                .map_or_else(|| "unknown".to_owned(), |reset| reset.to_string()),
        ),
        (
            "partitions",
            division.map_or_else(|| "unknown".to_owned(), |d| d.partitions.len().to_string()),
        ),
    ];
    // What a host restart does to it (NVIDIA GPUs: the rule is NVIDIA's facts).
    if let Some(restart) = gpu.restart {
        let (facts, after) = (restart.keeps, restart.division);
        let yes_no = |known: Option<bool>, yes: &str, no: &str| match known {
            Some(true) => yes.to_owned(),
            Some(false) => no.to_owned(),
            None => "unknown".to_owned(),
        };
        fields.extend([
            (
                "architecture",
                facts
                    .architecture
                    .map_or_else(|| "unknown".to_owned(), |a| a.to_string()),
            ),
            ("restart-mig-mode", facts.mig_mode.to_string()),
            (
                "restart-keeps-division",
                yes_no(after.comes_back, "yes", "no"),
            ),
            ("boot-restore", after.restore.to_string()),
            (
                "boot-restore-resets",
                yes_no(after.needs_reset, "true", "false"),
            ),
        ]);
    }
    fields
}

fn partition_fields(gpu: &GpuPartitions, partition: &Partition) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        ("slot", partition.slot.to_string()),
        ("gpu", gpu.gpu.to_string()),
        ("profile", partition.profile.to_string()),
    ];
    if let Some(placement) = partition.placement {
        fields.push((
            "placement",
            format!("{}+{}", placement.start, placement.size),
        ));
    }
    if let Some(on) = partition.on {
        fields.push(("gpu-instance", on.to_string()));
    }
    if !partition.compute.is_empty() {
        let ids: Vec<String> = partition.compute.iter().map(ToString::to_string).collect();
        fields.push(("compute-instances", ids.join(", ")));
    }
    fields.push(("ordinal", partition.ordinal.to_string()));
    fields.push(("origin", partition.origin.to_string()));
    if let Some(owner) = &partition.owner {
        fields.push(("owner", owner.to_string()));
    }
    if gpu.because().is_some() {
        fields.push(("stale", "yes: see its GPU's record".to_owned()));
    }
    fields
}

/// Every GPU's record, then its partitions' (a GPU that never read says so: never an empty
/// list in place of rows not known).
fn text(gpus: &[GpuPartitions], at: u64) -> String {
    let mut text = String::new();
    if gpus.is_empty() {
        text.push_str("no GPU of the host partitions (NVIDIA or AMD)\n");
        return text;
    }
    for gpu in gpus {
        record(&mut text, &gpu_fields(gpu, at));
        for partition in gpu.division.iter().flat_map(|d| &d.partitions) {
            record(&mut text, &partition_fields(gpu, partition));
        }
    }
    text
}
