//! The declared layout tells the truth through mxctl, the real helper and the fake NVML: our own
//! reset ends the check and the sync after it names what it took; a pool switched off, a lost
//! state file, a boot restore run twice; typed differences and every kind's series.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::{ALL_BALANCED, PartitionHost};
use gpu_partition_types::Token;
use serde_json::Value;
use std::path::PathBuf;

const H100: &str = "0000:3b:00.0";

/// One H100 80GB with `all-balanced` applied (Hopper: no reset), read back as holding.
fn balanced() -> PartitionHost {
    let host = PartitionHost::one_h100();
    let (code, report) = host.apply(ALL_BALANCED, "all-balanced", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(host.status()["declared"]["holds"], "holds");
    host
}

fn label(host: &PartitionHost, name: &str) -> Option<String> {
    let prefix = format!("mxctl.feature.node.kubernetes.io/{name}=");
    host.labels()
        .iter()
        .find_map(|line| line.strip_prefix(&prefix).map(str::to_owned))
}

fn metric(host: &PartitionHost, line: &str) -> bool {
    host.metrics().iter().any(|sample| sample == line)
}

/// mxctl's own config for a reset of this host: its helper, nvidia-smi and kernel log, the
/// pool on.
fn config(host: &PartitionHost) -> PathBuf {
    let path = host.path("reset.conf");
    std::fs::write(
        &path,
        format!(
            "gpu-partition-helper = {}\nnvidia-smi = {}\nkmsg = {}\ngpu-partitioning = enabled\nreset-window = 5\n",
            host.helper.display(),
            host.path("bin/nvidia-smi").display(),
            host.path("kmsg").display()
        ),
    )
    .unwrap();
    path
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn after_mxctl_resets_a_gpu_whose_layout_held_its_sync_names_the_lost_instances_and_restore_heals()
{
    common::require_root();
    let host = balanced();
    let mut reset = host.mxctl_configured(&config(&host));
    reset.args(["--json", "reset", "--method", "nvidia", "--device", "0"]);
    let (code, report) = common::run_json(reset);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done", "{report:#}");
    // The reset wrote to the card: mxctl read it again, and says what the reset took.
    assert_eq!(
        (
            &report["host_after"]["status"],
            &report["host_after"]["reason"]
        ),
        (&Value::from("entering"), &Value::from("layout_drifted")),
        "{report:#}"
    );
    let drift = report["host_after"]["drift"].as_array().unwrap();
    let missing: Vec<&Value> = drift
        .iter()
        .filter(|d| d["kind"] == "instance_missing")
        .collect();
    assert!(!missing.is_empty(), "{drift:#?}");
    assert!(
        missing
            .iter()
            .all(|d| d["profile"]["name"].is_string() && d["placement"]["size"].is_u64()),
        "{missing:#?}"
    );
    // No surface says the layout holds.
    assert_eq!(host.status()["declared"]["holds"], "drifted");
    assert_eq!(label(&host, "layout-state").as_deref(), Some("drifted"));
    assert!(metric(
        &host,
        "mxctl_layout_declared{label=\"all-balanced\",state=\"holds\"} 0"
    ));
    // The restore brings it back.
    let (code, restored) = host.restore(&[]);
    assert_eq!(code, 0, "{restored:#}");
    assert_eq!(restored["host"]["reason"], "ready", "{restored:#}");
    assert_eq!(label(&host, "layout-state").as_deref(), Some("holds"));
}

#[test]
fn with_the_pool_switched_off_after_a_check_no_surface_says_the_layout_holds() {
    let host = balanced();
    let sync = host.sync("disabled");
    assert_eq!(sync["reason"], "gpus_still_divided", "{sync:#}");
    let status = host.status();
    assert_eq!(status["declared"]["holds"], "unknown", "{status:#}");
    assert_eq!(status["declared"]["because"], "lapsed", "{status:#}");
    assert_eq!(label(&host, "layout-state").as_deref(), Some("unknown"));
    assert!(metric(
        &host,
        "mxctl_layout_declared{label=\"all-balanced\",state=\"unknown\"} 1"
    ));
}

fn truncate(path: &std::path::Path) {
    let text = std::fs::read(path).unwrap();
    std::fs::write(path, &text[..text.len() / 2]).unwrap();
}

#[test]
fn a_truncated_state_file_with_no_good_copy_is_said_by_every_sync_and_fails_the_boot_restore() {
    let host = balanced();
    truncate(&host.path("state/state.json"));
    std::fs::remove_file(host.path("state/state.json.last-good")).unwrap();
    for _ in 0..2 {
        let sync = host.sync("enabled");
        assert_eq!(
            common::strings(&sync, ["status", "reason"]),
            ["entering", "state_lost"],
            "{sync:#}"
        );
        assert!(
            sync["message"].as_str().unwrap().contains("kept aside as"),
            "{sync:#}"
        );
    }
    let status = host.status();
    assert_eq!(status["reason"], "state_lost", "{status:#}");
    let kept = status["lost"]["kept"].as_str().unwrap().to_owned();
    assert!(kept.contains("state.json.corrupt-"), "{kept}");
    assert_eq!(label(&host, "reason").as_deref(), Some("state_lost"));
    assert_eq!(label(&host, "layout"), None);
    // At boot the restore fails visibly rather than say nothing was ever declared.
    let (code, document) = host.restore(&["--at-boot"]);
    assert_eq!(code, 1, "{document:#}");
    assert_eq!(document["error"]["kind"], "state_lost", "{document:#}");
    assert!(
        document["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&kept),
        "{document:#}"
    );
}

#[test]
fn a_truncated_state_file_with_its_last_good_copy_gives_the_declaration_back() {
    let host = balanced();
    truncate(&host.path("state/state.json"));
    let sync = host.sync("enabled");
    assert_eq!(sync["reason"], "ready", "{sync:#}");
    assert!(
        sync["warnings"].to_string().contains("last good copy"),
        "{sync:#}"
    );
    let status = host.status();
    assert_eq!(status["declared"]["label"], "all-balanced", "{status:#}");
    assert_eq!(status["declared"]["holds"], "holds", "{status:#}");
}

#[test]
fn restore_at_boot_twice_in_one_boot_does_nothing_the_second_time() {
    let host = balanced();
    host.reboot("99999999-2222-3333-4444-555555555555");
    host.boot_sync();
    let (code, first) = host.restore(&["--at-boot"]);
    assert_eq!(code, 0, "{first:#}");
    assert_eq!(first["outcome"], "done", "{first:#}");
    assert!(
        first["gpus"][0]["steps"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
    host.clear_calls();
    let (code, second) = host.restore(&["--at-boot"]);
    assert_eq!(code, 0, "{second:#}");
    assert_eq!(second["restored"], false, "{second:#}");
    assert!(
        second["why"]
            .as_str()
            .unwrap()
            .contains("already ran in this boot"),
        "{second:#}"
    );
    assert!(host.writes().is_empty(), "{:?}", host.writes());
}

#[test]
fn a_drifted_hosts_json_carries_typed_differences_and_every_kind_has_its_series() {
    let host = balanced();
    let card = host.card(H100);
    let gone = card["gpu_instances"][0].clone();
    host.by_hand(
        H100,
        &format!(
            "[{{\"op\": \"destroy_compute_instance\", \"gpu_instance_id\": {gi}, \"compute_instance_id\": {ci}}}, {{\"op\": \"destroy_gpu_instance\", \"gpu_instance_id\": {gi}}}]",
            gi = gone["id"],
            ci = gone["compute_instances"][0]["id"]
        ),
    );
    let sync = host.sync("enabled");
    assert_eq!(sync["reason"], "layout_drifted", "{sync:#}");
    let status = host.status();
    let difference = &status["declared"]["differences"][0];
    assert_eq!(difference["kind"], "instance_missing", "{status:#}");
    assert_eq!(difference["placement"], gone["placement"], "{status:#}");
    assert_eq!(
        difference["profile"]["id"], gone["profile_id"],
        "{status:#}"
    );
    assert!(
        difference["message"]
            .as_str()
            .unwrap()
            .starts_with("no GPU instance of")
    );
    let checked = status["declared"]["checked_at"].as_u64().unwrap();
    assert_eq!(
        label(&host, "layout-checked"),
        Some(checked.to_string()),
        "{status:#}"
    );
    let metrics = host.metrics();
    for kind in layout_model::DifferenceKind::ALL {
        let count = usize::from(*kind == layout_model::DifferenceKind::InstanceMissing);
        let line = format!("mxctl_layout_drift{{kind=\"{}\"}} {count}", kind.as_str());
        assert!(metrics.contains(&line), "{line}: {metrics:#?}");
    }
    assert!(
        metrics.contains(&format!("mxctl_layout_checked_timestamp_seconds {checked}")),
        "{metrics:#?}"
    );
}
