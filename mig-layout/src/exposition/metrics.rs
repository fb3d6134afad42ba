//! The stored state in the Prometheus text format (0.0.4, what node_exporter's textfile
//! collector reads): the host's status and reason, each GPU's partition mode, the last sync,
//! the last warm reset, the last layout apply, and the declared layout — whether the cards
//! hold it (judged against the host's boot and writes now), its generation, when it was last
//! read, and its drift by kind.

use gpu_host_probe::Now;
use gpu_partition_types::{PartitionMode, Token};
use host_sync::{HostState, HostStatus, StoredReason};
use layout_model::{DifferenceKind, HoldingState};
use prometheus::{Encoder, Gauge, GaugeVec, Opts, Registry, TextEncoder};
use warm_reset::LastReset;

/// Why the metrics could not be rendered (the encoder refused a family).
#[derive(Debug, thiserror::Error)]
#[error("cannot render the metrics")]
pub struct MetricsError(#[source] prometheus::Error);

impl From<prometheus::Error> for MetricsError {
    fn from(error: prometheus::Error) -> Self {
        Self(error)
    }
}

/// One gauge family with these label names, registered in `registry`.
fn family(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<GaugeVec, prometheus::Error> {
    let gauges = GaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(gauges.clone()))?;
    Ok(gauges)
}

fn one_if(is: bool) -> f64 {
    if is { 1.0 } else { 0.0 }
}

/// The metrics of `state` and `last` (the journal's last warm reset) judged against `now`
/// ([`Host::now`](gpu_host_probe::Host::now)), in the text format: what `mxctl metrics`
/// prints, byte for byte.
pub fn render_metrics(
    state: &HostState,
    last: Option<&LastReset>,
    now: &Now,
) -> Result<Vec<u8>, MetricsError> {
    let registry = Registry::new();
    let status = family(
        &registry,
        "mxctl_gpu_partitioning_status",
        "The host's GPU partitioning status: 1 for the current one, 0 for the others.",
        &["status"],
    )?;
    for value in HostStatus::ALL {
        status
            .with_label_values(&[value.as_str()])
            .set(one_if(*value == state.status));
    }
    family(
        &registry,
        "mxctl_gpu_partitioning_reason_info",
        "Why the host has its GPU partitioning status (empty when the status needs no reason).",
        &["reason"],
    )?
    .with_label_values(&[state.reason.as_str()])
    .set(1.0);
    let modes = family(
        &registry,
        "mxctl_gpu_partition_mode",
        "Each GPU's partition mode: 1 for its mode, 0 for the others.",
        &["device", "mode"],
    )?;
    for (bdf, record) in &state.gpus {
        let device = bdf.to_string();
        for mode in PartitionMode::ALL {
            modes
                .with_label_values(&[device.as_str(), mode.as_str()])
                .set(one_if(*mode == record.partition_mode));
        }
    }
    // Who owns each GPU that is not ours (a GPU absent is ours).
    let not_ours = state.not_ours();
    if !not_ours.is_empty() {
        let owners = family(
            &registry,
            "mxctl_gpu_ownership",
            "Who owns each GPU that is not the host's (dynamic: an allocator's; external: \
             another tool's): 1 for its ownership, 0 for the others. A GPU absent is the host's.",
            &["device", "ownership"],
        )?;
        for (bdf, owned) in &not_ours {
            let device = bdf.to_string();
            for ownership in gpu_host_probe::Ownership::ALL {
                owners
                    .with_label_values(&[device.as_str(), ownership.as_str()])
                    .set(one_if(ownership == owned));
            }
        }
    }
    if let Some(synced_at) = state.synced_at {
        let gauge = Gauge::with_opts(Opts::new(
            "mxctl_last_sync_timestamp_seconds",
            "When the last sync finished, in seconds since the Unix epoch.",
        ))?;
        registry.register(Box::new(gauge.clone()))?;
        gauge.set(seconds(synced_at));
    }
    if let Some(last) = last {
        let reason = last.outcome.reason_str();
        family(
            &registry,
            "mxctl_warm_reset_last",
            "When the last warm reset run ended (seconds since the Unix epoch), by its outcome \
             and reason.",
            &["outcome", "reason"],
        )?
        .with_label_values(&[last.outcome.as_str(), reason])
        .set(last.ended_unix_ms as f64 / 1000.0);
    }
    if let Some(layout) = &state.layout {
        family(
            &registry,
            "mxctl_layout_last_apply",
            "When the last MIG layout apply ended (seconds since the Unix epoch; when it started, \
             while it runs), by its label, outcome and reason.",
            &["label", "outcome", "reason"],
        )?
        .with_label_values(&[
            layout.label.as_str(),
            layout.outcome.as_str(),
            layout.outcome.reason().map_or("", StoredReason::as_str),
        ])
        .set(seconds(layout.finished_at.unwrap_or(layout.started_at)));
    }
    if let Some(declared) = &state.declared {
        let holding = declared.holding(now);
        let held = family(
            &registry,
            "mxctl_layout_declared",
            "Whether the cards hold the declared MIG layout, as the last sync that read them \
             found in this boot with nothing of ours written to them since: 1 for the state \
             (holds, drifted, unknown), 0 for the others.",
            &["label", "state"],
        )?;
        for value in HoldingState::ALL {
            held.with_label_values(&[declared.label.as_str(), value.as_str()])
                .set(one_if(*value == holding.state()));
        }
        family(
            &registry,
            "mxctl_layout_generation",
            "How many declarations this host has had, the one now included.",
            &["label"],
        )?
        .with_label_values(&[declared.label.as_str()])
        .set(declared.generation as f64);
        if let Some(at) = declared.checked_at() {
            let gauge = Gauge::with_opts(Opts::new(
                "mxctl_layout_checked_timestamp_seconds",
                "When a sync last read the declared GPUs, in seconds since the Unix epoch.",
            ))?;
            registry.register(Box::new(gauge.clone()))?;
            gauge.set(seconds(at));
        }
        let found = holding.differences();
        let drift = family(
            &registry,
            "mxctl_layout_drift",
            "How many differences from the declared MIG layout the last sync found, by kind \
             (0 for every kind when the cards hold it, or when it is not known).",
            &["kind"],
        )?;
        for kind in DifferenceKind::ALL {
            let count = found.iter().filter(|d| d.kind() == *kind).count();
            drift.with_label_values(&[kind.as_str()]).set(count as f64);
        }
    }
    let mut text = Vec::new();
    TextEncoder::new().encode(&registry.gather(), &mut text)?;
    Ok(text)
}

/// Seconds as a sample value (exact up to 2^53).
fn seconds(secs: u64) -> f64 {
    secs as f64
}
