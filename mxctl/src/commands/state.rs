//! `mxctl status`, and the state as `sync` and `status` print it for people (their `--json`
//! documents are `host-sync`'s own: `SyncReport` and `StatusReport`).

use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;
use gpu_partition_types::Bdf;
use host_sync::{
    FileStore, GpuRecord, HostStatus, LayoutOutcome, LayoutRecord, StateStore, StatusReport,
    StoredReason,
};
use layout_model::{Declaration, Difference, Holding, Remedy};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The host fields and GPU records, as text for people.
#[derive(Debug)]
pub struct StateReport<'a> {
    /// The host's status.
    pub status: HostStatus,
    /// Its reason.
    pub reason: &'a StoredReason,
    /// Why, for people.
    pub message: Option<&'a str>,
    /// `sync` only: whether it ran as the first after a boot.
    pub after_boot: Option<bool>,
    /// The GPUs.
    pub gpus: &'a BTreeMap<Bdf, GpuRecord>,
    /// Who owns each GPU that is not ours.
    pub ownership: &'a BTreeMap<Bdf, gpu_host_probe::Ownership>,
    /// What a person should know.
    pub warnings: &'a [String],
    /// `status` only: the last layout apply.
    pub layout: Option<&'a LayoutRecord>,
    /// `status` only: what the host is declared to be, and whether the cards hold it now.
    pub declared: Option<(&'a Declaration, Holding)>,
    /// `sync` only: how the declared GPUs it read differ.
    pub drift: &'a [Difference],
    /// When the declared GPUs were last read (`sync`: by it), when they were.
    pub checked_at: Option<u64>,
}

/// What brings the differences back, for people: the command of mxctl that does.
fn hint(differences: &[Difference]) -> Option<&'static str> {
    let remedies: Vec<Remedy> = differences.iter().map(Difference::remedy).collect();
    if remedies.contains(&Remedy::Restore) {
        Some("`mxctl partition restore` brings back what differs from the declaration")
    } else if remedies.contains(&Remedy::NewLayout) {
        Some("the declaration cannot be restored on what is there: apply a layout for it")
    } else {
        None
    }
}

/// An AMD GPU's partitions as last read, and a memory request of ours waiting for a reload.
fn amd_lines(text: &mut String, amd: &host_sync::AmdRecord) {
    match (amd.compute, amd.read_at) {
        (Some(compute), Some(at)) => {
            let memory = amd
                .memory
                .map_or_else(|| "no memory partition".to_owned(), |m| m.to_string());
            let _ = writeln!(
                text,
                "  partitions: {compute} {memory} (read at {at}, Unix time)"
            );
        }
        _ => {
            let _ = writeln!(text, "  partitions: not read");
        }
    }
    if let Some(request) = &amd.requested {
        let _ = writeln!(
            text,
            "  requested: {} at {} (Unix time), waiting for a driver reload (mxctl's record: \
             the kernel shows no request)",
            request.mode, request.at
        );
    }
}

impl StateReport<'_> {
    /// The text for people, in the habits of the `xe` CLI.
    pub fn text(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "gpu-partitioning-status ( RO): {}", self.status);
        let _ = writeln!(text, "gpu-partitioning-reason ( RO): {}", self.reason);
        if let Some(message) = self.message {
            let _ = writeln!(text, "why: {message}");
        }
        if let Some(after_boot) = self.after_boot {
            let _ = writeln!(text, "after boot: {after_boot}");
        }
        let driver_width = self
            .gpus
            .values()
            .map(|gpu| gpu.driver.as_deref().unwrap_or("-").len())
            .max()
            .unwrap_or(0);
        for (bdf, gpu) in self.gpus {
            let driver = gpu.driver.as_deref().unwrap_or("-");
            let reason = match &gpu.reason {
                None => String::new(),
                Some(reason) => format!(" ({reason})"),
            };
            let _ = writeln!(
                text,
                "{bdf}  {:04x}:{:04x}  {driver:<driver_width$}  partition-mode: {}{reason}",
                gpu.vendor, gpu.device, gpu.partition_mode
            );
            if let Some(ownership) = self.ownership.get(bdf) {
                let _ = writeln!(
                    text,
                    "  ownership: {ownership} (not ours: nothing is written, restored or reset on it)"
                );
            }
            if let Some(message) = &gpu.message {
                let _ = writeln!(text, "  why: {message}");
            }
            if let Some(amd) = &gpu.amd {
                amd_lines(&mut text, amd);
            }
        }
        if let Some(layout) = self.layout {
            let _ = writeln!(text, "last layout: {} {}", layout.label, layout.outcome);
            let blocked = matches!(layout.outcome, LayoutOutcome::Blocked(_));
            if let Some(failure) = layout.unhealed.as_ref().filter(|_| blocked) {
                let _ = writeln!(
                    text,
                    "  still unhealed: {} ({}): {}",
                    failure.label, failure.reason, failure.message
                );
            }
        }
        if let Some((declared, holding)) = &self.declared {
            let _ = writeln!(
                text,
                "declared layout: {} ({} GPU(s), generation {}): {holding}",
                declared.label,
                declared.gpus.len(),
                declared.generation
            );
            if let Holding::Drifted(found) = holding {
                for difference in found {
                    let _ = writeln!(text, "  differs: {difference}");
                }
                if let Some(hint) = hint(found) {
                    let _ = writeln!(text, "  {hint}");
                }
            }
            if let Some(check) = &declared.check {
                for adopted in &check.adopted {
                    let _ = writeln!(text, "  adopted: {} {adopted}", adopted.device);
                }
            }
        }
        for difference in self.drift {
            let _ = writeln!(text, "differs from the declared layout: {difference}");
        }
        if let Some(hint) = hint(self.drift) {
            let _ = writeln!(text, "{hint}");
        }
        match (&self.declared, self.checked_at) {
            (Some(_), at) => {
                let _ = writeln!(
                    text,
                    "cards last read: {}",
                    at.map_or_else(
                        || "not since the layout was declared".to_owned(),
                        |at| format!("{at} (Unix time)")
                    )
                );
            }
            (None, Some(at)) => {
                let _ = writeln!(text, "declared GPUs read: {at} (Unix time)");
            }
            (None, None) => {}
        }
        for warning in self.warnings {
            let _ = writeln!(text, "warning: {warning}");
        }
        text
    }
}

/// Prints the stored state; writes nothing (a state file that does not read is reported and
/// left for the next sync to keep aside).
pub fn run(host: &Host, output: Output) -> Result<Exit, Failure> {
    let state = FileStore::read_only(host.state_dir())
        .load()?
        .unwrap_or_default();
    let now = host.now();
    let not_ours = state.not_ours();
    let text = StateReport {
        status: state.status,
        reason: &state.reason,
        message: state.message.as_deref(),
        after_boot: None,
        gpus: &state.gpus,
        ownership: &not_ours,
        warnings: &[],
        layout: state.layout.as_ref(),
        declared: state
            .declared
            .as_ref()
            .map(|declared| (declared, declared.holding(&now))),
        drift: &[],
        checked_at: state.declared.as_ref().and_then(Declaration::checked_at),
    }
    .text();
    output.emit(&StatusReport::new(&state, &now), &text)?;
    Ok(Exit::Done)
}
