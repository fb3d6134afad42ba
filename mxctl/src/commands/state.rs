//! `mxctl status`, and the state as `sync` and `status` print it.

use crate::failure::Failure;
use crate::output::Output;
use host_sync::{FileStore, GpuReason, GpuRecord, HostState, HostStatus, Reason, StateStore};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The `--json` document of `sync` (with `after_boot`) and `status` (without).
#[derive(Debug, Serialize)]
pub struct StateReport {
    status: HostStatus,
    reason: Reason,
    #[serde(skip_serializing_if = "Option::is_none")]
    after_boot: Option<bool>,
    gpus: Vec<GpuReport>,
}

#[derive(Debug, Serialize)]
struct GpuReport {
    device: String,
    vendor: String,
    device_id: String,
    driver: Option<String>,
    partition_mode: gpu_partition_types::PartitionMode,
    reason: GpuReason,
}

impl StateReport {
    /// The report of these host fields and GPU records.
    pub fn new(
        status: HostStatus,
        reason: &Reason,
        after_boot: Option<bool>,
        gpus: &BTreeMap<gpu_partition_types::Bdf, GpuRecord>,
    ) -> Self {
        Self {
            status,
            reason: reason.clone(),
            after_boot,
            gpus: gpus
                .iter()
                .map(|(bdf, record)| GpuReport {
                    device: bdf.to_string(),
                    vendor: record.vendor.clone(),
                    device_id: record.device.clone(),
                    driver: record.driver.clone(),
                    partition_mode: record.partition_mode,
                    reason: record.reason.clone(),
                })
                .collect(),
        }
    }

    /// The text for people, in the habits of the `xe` CLI.
    pub fn text(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "gpu-partitioning-status ( RO): {}", self.status);
        let _ = writeln!(text, "gpu-partitioning-reason ( RO): {}", self.reason);
        if let Some(after_boot) = self.after_boot {
            let _ = writeln!(text, "after boot: {after_boot}");
        }
        let driver_width = self
            .gpus
            .iter()
            .map(|gpu| gpu.driver.as_deref().unwrap_or("-").len())
            .max()
            .unwrap_or(0);
        for gpu in &self.gpus {
            let driver = gpu.driver.as_deref().unwrap_or("-");
            let reason = match &gpu.reason {
                GpuReason::None => String::new(),
                reason => format!(" ({reason})"),
            };
            let _ = writeln!(
                text,
                "{}  {}:{}  {driver:<driver_width$}  partition-mode: {}{reason}",
                gpu.device, gpu.vendor, gpu.device_id, gpu.partition_mode
            );
        }
        text
    }
}

/// Prints the stored state; writes nothing (a state file that does not read is reported and
/// left for the next sync to keep aside).
pub fn run(state_dir: &Path, output: Output) -> Result<u8, Failure> {
    let state = FileStore::read_only(state_dir).load()?.unwrap_or_default();
    let HostState {
        status,
        reason,
        gpus,
        ..
    } = state;
    let report = StateReport::new(status, &reason, None, &gpus);
    output.emit(&report, &report.text())?;
    Ok(0)
}
