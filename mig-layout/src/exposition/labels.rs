//! The stored state as Kubernetes node labels, in the form of a node-feature-discovery local
//! feature file (nfd-worker's `features.d`): the host status, its reason, each GPU's partition
//! mode, the last layout apply and the declared layout, under the project's namespace, every
//! name and value within Kubernetes' label rules, with an expiry so stale labels vanish if
//! syncs stop.

use host_sync::HostState;
use std::fmt::Write as _;

/// The labels' namespace: a sub-namespace of `feature.node.kubernetes.io`, which nfd-master
/// always allows (no `extraLabelNs` needed).
pub const LABEL_NAMESPACE: &str = "mxctl.feature.node.kubernetes.io";

/// Whether `text` is a Kubernetes label name or value: at most 63 characters, alphanumeric at
/// both ends, `-`, `_`, `.` and alphanumerics inside (a value may also be empty).
fn is_label_text(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
    text.len() <= 63
        && edge(bytes.first())
        && edge(bytes.last())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A GPU's label name for `what`: the address with `:` as `-` (`gpu-0000-3b-00.0.mode`).
fn gpu_name(bdf: &str, what: &str) -> String {
    format!("gpu-{}.{what}", bdf.replace(':', "-"))
}

/// An RFC 3339 time in UTC (`2026-12-01T12:00:00Z`) from Unix seconds.
fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rest = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm, for the proleptic Gregorian calendar).
    let z = i64::try_from(days).unwrap_or(i64::MAX) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The feature file of `state` judged against `now` ([`Host::now`](gpu_host_probe::Host::now)),
/// expiring at `expires` (Unix seconds): what `mxctl labels` prints, byte for byte. A value
/// that is no valid label value (a layout label with a `+`, say) is left out, with a warning.
pub fn render_labels(state: &HostState, expires: u64, now: &gpu_host_probe::Now) -> String {
    let mut text = String::new();
    let _ = writeln!(text, "# mxctl: this host's GPU partitioning (mxctl labels)");
    let _ = writeln!(text, "# +expiry-time={}", rfc3339(expires));
    let mut label = |name: &str, value: &str| {
        if is_label_text(name) && (value.is_empty() || is_label_text(value)) {
            let _ = writeln!(text, "{LABEL_NAMESPACE}/{name}={value}");
        } else {
            tracing::warn!("label {name}={value:?} left out: not within Kubernetes' label rules");
        }
    };
    label("status", &state.status.to_string());
    let reason = state.reason.as_str();
    label("reason", if reason.is_empty() { "none" } else { reason });
    for (bdf, record) in &state.gpus {
        if record.is_nvidia() || record.is_amd() {
            label(
                &gpu_name(&bdf.to_string(), "mode"),
                &record.partition_mode.to_string(),
            );
        }
    }
    // A GPU that is not ours says who owns it (`gpu-0000-3b-00.0.ownership=dynamic`); one
    // with no such label is ours.
    for (bdf, ownership) in &state.not_ours() {
        label(
            &gpu_name(&bdf.to_string(), "ownership"),
            gpu_partition_types::Token::as_str(*ownership),
        );
    }
    if let Some(layout) = &state.layout {
        label("layout-outcome", layout.outcome.as_str());
    }
    // What the host is declared to be, and whether the cards hold it: never `holds` unless a
    // sync of this boot read every declared card and found it so, and nothing of ours wrote to
    // them since; with when they were last read (Unix seconds), so a scheduler sees the
    // observation's age.
    if let Some(declared) = &state.declared {
        label("layout", &declared.label);
        label(
            "layout-state",
            gpu_partition_types::Token::as_str(declared.holding(now).state()),
        );
        label("layout-generation", &declared.generation.to_string());
        if let Some(at) = declared.checked_at() {
            label("layout-checked", &at.to_string());
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_times_are_written_as_rfc3339_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_126_400), "2026-12-01T12:00:00Z");
    }

    #[test]
    fn label_text_is_at_most_63_characters_alphanumeric_at_both_ends() {
        assert!(is_label_text("gpu-0000-3b-00.0.mode"));
        assert!(is_label_text("enable_on_reboot"));
        assert!(!is_label_text("0000:3b:00.0"));
        assert!(!is_label_text("-a"));
        assert!(!is_label_text("a."));
        assert!(!is_label_text(&"a".repeat(64)));
        assert!(!is_label_text("1g.10gb+me"));
    }
}
