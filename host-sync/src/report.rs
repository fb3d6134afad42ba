//! The documents of `mxctl --json sync` and `mxctl --json status`, so that an embedder prints
//! what `mxctl` prints: [`SyncReport`] serializes to the first, [`StatusReport`] to the second.
//!
//! ```json
//! {"status": "inactive", "reason": "helper_unavailable",
//!  "message": "helper_absent: /opt/xensource/libexec/gpu-partition-helper does not exist",
//!  "after_boot": true,
//!  "gpus": [{"device": "0000:3b:00.0", "vendor": "10de", "device_id": "2335",
//!            "driver": "nvidia", "partition_mode": "unknown", "reason": "helper_absent",
//!            "message": "/opt/xensource/libexec/gpu-partition-helper does not exist"}],
//!  "warnings": []}
//! ```
//!
//! `amd` is an AMD GPU's partitions as last read (`compute`, `memory`, `read_at`, and
//! `requested`: a memory partition of ours waiting for a driver reload, with `mode`, `at` and
//! its boot), `null` for any other GPU.
//!
//! `after_boot`, `drift` (how the declared GPUs read differ from the declaration, each with
//! `device`, `kind`, its facts and `message`), `checked_at` (when it read the declared GPUs) and
//! `warnings` are the sync's only; `synced_at`, `layout` (the last MIG layout apply, as the
//! state keeps it, `null` before the first), `declared` (what the host is declared to be and
//! whether the cards hold it now, with when they were last read; `null` before the first apply)
//! and `lost` (the state file that did not read, kept aside) are the status's only; `message`
//! is `null` when there is nothing to explain; `reason` is `""` when the mode needs none.

use crate::gpu::GpuRecord;
use crate::state::HostState;
use crate::sync::SyncReport;
use gpu_host_probe::Now;
use gpu_partition_types::{Bdf, Token};
use layout_model::Declaration;
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;

/// The stored state as `mxctl --json status` prints it, judged now (a check of the declared
/// layout made in an earlier boot, or followed by a write to the cards, says nothing).
#[derive(Debug, Clone, Copy)]
pub struct StatusReport<'a> {
    state: &'a HostState,
    now: &'a Now,
}

impl<'a> StatusReport<'a> {
    /// The report of `state` judged against `now` (the host's: [`crate::Host::now`]).
    pub fn new(state: &'a HostState, now: &'a Now) -> Self {
        Self { state, now }
    }
}

impl Serialize for StatusReport<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let state = self.state;
        let mut document = serializer.serialize_struct("StatusReport", 8)?;
        document.serialize_field("status", &state.status)?;
        document.serialize_field("reason", &state.reason)?;
        document.serialize_field("message", &state.message)?;
        document.serialize_field("synced_at", &state.synced_at)?;
        document.serialize_field("gpus", &Gpus(&state.gpus, &state.not_ours()))?;
        document.serialize_field("layout", &state.layout)?;
        document.serialize_field(
            "declared",
            &state
                .declared
                .as_ref()
                .map(|declared| Declared(declared, self.now)),
        )?;
        document.serialize_field("lost", &state.lost)?;
        document.end()
    }
}

/// The declaration as the status shows it: `label`, `declared_at`, `generation`, `holds`
/// (`holds`, `drifted` or `unknown`), `because` (why it is unknown, as a token; `null`
/// otherwise), `why` (for people), `written_since` (the writes that ended the check), `differences`,
/// `unread`, `adopted`, `checked_at` (when the cards were last read; `null` since it was declared
/// until a sync reads them), `lapsed` (a sync that did not read them since), and `gpus` (each
/// with its `device`).
struct Declared<'a>(&'a Declaration, &'a Now);

#[derive(Serialize)]
struct Written<'a> {
    device: Option<String>,
    /// What wrote and when, for people.
    message: String,
    /// `seq`, `by` (the writer's token), `method` (a reset's), `at_unix_ms`.
    #[serde(flatten)]
    write: &'a gpu_host_probe::CardWrite,
}

impl Serialize for Declared<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Declared(declared, now) = self;
        let holding = declared.holding(now);
        let check = declared.check.as_ref();
        let written: Vec<Written<'_>> = match holding.unchecked() {
            Some(layout_model::Unchecked::WrittenSince(writes)) => writes
                .iter()
                .map(|written| Written {
                    device: written.device.map(|device| device.to_string()),
                    message: written.to_string(),
                    write: &written.write,
                })
                .collect(),
            _ => Vec::new(),
        };
        let mut document = serializer.serialize_struct("Declared", 13)?;
        document.serialize_field("label", &declared.label)?;
        document.serialize_field("declared_at", &declared.declared_at)?;
        document.serialize_field("generation", &declared.generation)?;
        document.serialize_field("holds", holding.state().as_str())?;
        document.serialize_field(
            "because",
            &holding.unchecked().map(|why| why.kind().as_str()),
        )?;
        document.serialize_field("why", &holding.to_string())?;
        document.serialize_field("written_since", &written)?;
        document.serialize_field("differences", holding.differences())?;
        document.serialize_field(
            "unread",
            &check.map(|check| check.unread.clone()).unwrap_or_default(),
        )?;
        document.serialize_field(
            "adopted",
            &check.map(|check| check.adopted.clone()).unwrap_or_default(),
        )?;
        document.serialize_field("checked_at", &declared.checked_at())?;
        document.serialize_field("lapsed", &declared.lapsed)?;
        document.serialize_field("gpus", &DeclaredGpus(declared))?;
        document.end()
    }
}

struct DeclaredGpus<'a>(&'a Declaration);

impl Serialize for DeclaredGpus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut list = serializer.serialize_seq(Some(self.0.gpus.len()))?;
        for (bdf, gpu) in &self.0.gpus {
            #[derive(Serialize)]
            struct Gpu<'a> {
                device: String,
                #[serde(flatten)]
                gpu: &'a layout_model::DeclaredGpu,
            }
            list.serialize_element(&Gpu {
                device: bdf.to_string(),
                gpu,
            })?;
        }
        list.end()
    }
}

impl Serialize for SyncReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut document = serializer.serialize_struct("SyncReport", 8)?;
        document.serialize_field("status", &self.status)?;
        document.serialize_field("reason", &self.reason)?;
        document.serialize_field("message", &self.message)?;
        document.serialize_field("after_boot", &self.after_boot)?;
        document.serialize_field("gpus", &Gpus(&self.gpus, &self.ownership))?;
        document.serialize_field("drift", &self.drift)?;
        document.serialize_field("checked_at", &self.checked_at)?;
        document.serialize_field("warnings", &self.warnings)?;
        document.end()
    }
}

/// The GPUs, in address order, each with its address.
struct Gpus<'a>(
    &'a BTreeMap<Bdf, GpuRecord>,
    &'a BTreeMap<Bdf, gpu_host_probe::Ownership>,
);

impl Serialize for Gpus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut list = serializer.serialize_seq(Some(self.0.len()))?;
        for (bdf, record) in self.0 {
            let ownership = self.1.get(bdf).copied().unwrap_or_default();
            list.serialize_element(&Gpu(bdf, record, ownership))?;
        }
        list.end()
    }
}

struct Gpu<'a>(&'a Bdf, &'a GpuRecord, gpu_host_probe::Ownership);

impl Serialize for Gpu<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Gpu(bdf, record, ownership) = self;
        let reason = record.reason.as_ref().map(ToString::to_string);
        let mut gpu = serializer.serialize_struct("Gpu", 9)?;
        gpu.serialize_field("device", &bdf.to_string())?;
        gpu.serialize_field("vendor", &crate::gpu::hex_id::text(record.vendor))?;
        gpu.serialize_field("device_id", &crate::gpu::hex_id::text(record.device))?;
        gpu.serialize_field("driver", &record.driver)?;
        gpu.serialize_field("partition_mode", &record.partition_mode)?;
        gpu.serialize_field("reason", reason.as_deref().unwrap_or(""))?;
        gpu.serialize_field("message", &record.message)?;
        gpu.serialize_field("amd", &record.amd)?;
        gpu.serialize_field("ownership", ownership)?;
        gpu.end()
    }
}
