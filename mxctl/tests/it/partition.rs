//! `mxctl partition` through the real helper and the fake NVML (its state file), with a fake
//! `nvidia-smi` that prints the published messages and resets through `fake-nvml reset`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::PartitionHost;
use common::partition_layouts::{
    BALANCED, GPU0, GPU1, SEVEN_ON_GPU0, balanced_h100, instances, mig,
};
use serde_json::Value;

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn seven_1g_5gb_on_gpu0_of_two_a100s_is_done_with_one_reset_naming_gpu0_alone() {
    common::require_root();
    let host = PartitionHost::two_a100s();
    let (code, report) = host.apply(SEVEN_ON_GPU0, "gpu0-1g.5gb", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done", "{report:#}");
    let resets = host.resets();
    assert_eq!(resets.len(), 1, "{resets:?}");
    assert_eq!(resets[0].0, "00000000:3B:00.0");
    let gpu0 = host.card(GPU0);
    assert_eq!(mig(&gpu0), (1, 1));
    assert_eq!(
        instances(&gpu0),
        (0..7).map(|start| (19, start, 1)).collect::<Vec<_>>()
    );
    // GPU 1 untouched: MIG off, nothing pending, no instance.
    let gpu1 = host.card(GPU1);
    assert_eq!(mig(&gpu1), (0, 0));
    assert!(instances(&gpu1).is_empty());
    assert_eq!(report["host"]["status"], "active", "{report:#}");
    assert_eq!(report["host"]["reason"], "ready");
}

#[test]
fn an_h100_from_mig_off_to_all_balanced_is_done_without_a_reset() {
    let host = PartitionHost::one_h100();
    let layout = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mig-layout/tests/data/mig-parted/gpu-operator-h100-excerpt.yaml"
    ))
    .unwrap();
    let (code, report) = host.apply(&layout, "all-balanced", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done");
    assert!(host.resets().is_empty());
    assert!(report["resets"].as_array().unwrap().is_empty());
    let card = host.card(GPU0);
    assert_eq!(mig(&card), (1, 1));
    // 1g.10gb ×2 (profile 19), 2g.20gb (14), 3g.40gb (9), each with its compute instance.
    assert_eq!(
        instances(&card),
        [(9, 4, 1), (14, 2, 1), (19, 0, 1), (19, 1, 1)]
    );
    assert_eq!(report["host"]["status"], "active");
}

#[test]
fn a_layout_already_applied_is_zero_steps_and_zero_writes() {
    let host = PartitionHost::one_h100();
    let layout = "version: v1\nmig-configs:\n  l:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 3, \"3g.40gb\": 1}\n";
    assert_eq!(host.apply(layout, "l", &[]).0, 0);
    host.clear_calls();
    let (code, report) = host.apply(layout, "l", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done");
    let gpu = &report["gpus"][0];
    assert!(gpu["plan"].as_array().unwrap().is_empty(), "{report:#}");
    assert!(gpu["steps"].as_array().unwrap().is_empty());
    assert_eq!(host.writes(), Vec::<String>::new());
    assert!(!host.calls().is_empty(), "the fake was read");
}

#[test]
fn one_gpu_instance_changed_among_several_is_the_only_one_destroyed_and_created() {
    let host = balanced_h100();
    let before = instances(&host.card(GPU0));
    assert_eq!(before, [(9, 4, 1), (14, 2, 1), (19, 0, 1), (19, 1, 1)]);
    let (code, report) = host.apply(BALANCED, "changed", &[]);
    assert_eq!(code, 0, "{report:#}");
    // The 3g.40gb at 4 (profile 9) gives way to two 1g.20gb (profile 15) at 4 and 6; the
    // others stay as they were.
    let writes = host.writes();
    assert_eq!(
        writes
            .iter()
            .filter(|w| w.starts_with("nvmlGpuInstanceDestroy"))
            .count(),
        1,
        "{writes:?}"
    );
    assert_eq!(
        writes
            .iter()
            .filter(|w| w.starts_with("nvmlComputeInstanceDestroy"))
            .count(),
        1
    );
    assert_eq!(
        writes
            .iter()
            .filter(|w| w.starts_with("nvmlDeviceCreateGpuInstanceWithPlacement"))
            .cloned()
            .collect::<Vec<_>>(),
        [
            "nvmlDeviceCreateGpuInstanceWithPlacement 15 4+2",
            "nvmlDeviceCreateGpuInstanceWithPlacement 15 6+2"
        ]
    );
    assert_eq!(
        instances(&host.card(GPU0)),
        [(14, 2, 1), (15, 4, 1), (15, 6, 1), (19, 0, 1), (19, 1, 1)]
    );
}

#[test]
fn a_vgpu_on_an_instance_to_destroy_blocks_with_gpu_busy_and_changes_nothing() {
    let host = balanced_h100();
    host.change_nvml(|state| {
        let card = &mut state["devices"][0];
        let gi = card["gpu_instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|gi| gi["profile_id"] == 9)
            .unwrap()["id"]
            .clone();
        card["vgpus"] = serde_json::json!([{"uuid": "4b1c6a86-7c3a-4c21-9f3e-1d2b3c4d5e6f",
            "type": "NVIDIA H100-3-40C", "type_id": 1123, "gpu_instance_id": gi,
            "vm": "2d5e8b1e-5a0b-4c31-b0a7-8c2b9c0d1e2f"}]);
    });
    let before = host.nvml();
    let (code, report) = host.apply(BALANCED, "changed", &[]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["outcome"], "blocked");
    assert_eq!(report["reason"], "gpu_busy");
    let detail = report["detail"].as_str().unwrap();
    assert!(
        detail.contains("4b1c6a86-7c3a-4c21-9f3e-1d2b3c4d5e6f"),
        "{detail}"
    );
    assert!(
        detail.contains("2d5e8b1e-5a0b-4c31-b0a7-8c2b9c0d1e2f"),
        "{detail}"
    );
    assert!(host.writes().is_empty(), "{:?}", host.writes());
    assert_eq!(host.nvml(), before);
}

#[test]
fn a_card_with_clients_blocks_with_gpu_busy_naming_them_and_changes_nothing() {
    let host = PartitionHost::one_h100();
    // The first read makes the fake's state file; then a process holds the card.
    host.sync("enabled");
    host.change_nvml(|state| {
        state["devices"][0]["clients"] = serde_json::json!([{"pid": 4242, "name": "python3"}]);
    });
    host.clear_calls();
    let (code, report) = host.apply(BALANCED, "balanced", &[]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["reason"], "gpu_busy");
    assert!(
        report["detail"]
            .as_str()
            .unwrap()
            .contains("pid 4242 (python3)"),
        "{report:#}"
    );
    assert!(host.writes().is_empty());
    assert_eq!(mig(&host.card(GPU0)), (0, 0));
}

#[test]
fn an_impossible_layout_is_refused_before_any_write_naming_gpu_and_profile() {
    let host = PartitionHost::one_h100();
    let (code, report) = host.apply(BALANCED, "too-many", &[]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["outcome"], "blocked");
    assert_eq!(report["reason"], "layout_impossible");
    assert_eq!(
        report["detail"],
        "0000:3b:00.0: 8 × 1g.10gb asked, and the card holds at most 7"
    );
    assert!(host.writes().is_empty(), "{:?}", host.writes());
    assert_eq!(mig(&host.card(GPU0)), (0, 0));
}

#[test]
fn a_failed_step_leaves_the_host_entering_with_layout_failed_and_its_message_until_an_apply_holds()
{
    let host = PartitionHost::one_h100();
    host.sync("enabled");
    host.change_nvml(|state| {
        state["devices"][0]["fail"] = serde_json::json!({
            "nvmlDeviceCreateGpuInstanceWithPlacement": "INSUFFICIENT_RESOURCES"
        });
    });
    let (code, report) = host.apply(BALANCED, "balanced", &[]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["outcome"], "failed");
    assert_eq!(report["reason"], "step_refused");
    let detail = report["detail"].as_str().unwrap().to_owned();
    assert!(
        detail.contains("NVML refused create_gpu_instance (insufficient_resources)"),
        "{detail}"
    );
    let failure = &report["gpus"][0]["failure"];
    assert_eq!(failure["by"], "nvml", "{report:#}");
    assert_eq!(failure["op"], "create_gpu_instance");
    assert_eq!(failure["kind"], "insufficient_resources");
    let status = host.status();
    assert_eq!(status["status"], "entering", "{status:#}");
    assert_eq!(status["reason"], "layout_failed");
    assert_eq!(status["message"], detail.as_str());
    assert_eq!(status["layout"]["outcome"], "failed");
    // A sync on its own keeps saying it.
    let synced = host.sync("enabled");
    assert_eq!(synced["reason"], "layout_failed", "{synced:#}");
    assert_eq!(synced["message"], detail.as_str());
    // The cause gone, the next apply heals it.
    host.change_nvml(|state| {
        state["devices"][0]["fail"] = serde_json::json!({});
    });
    let (code, report) = host.apply(BALANCED, "balanced", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["host"]["status"], "active");
    assert_eq!(report["host"]["reason"], "ready");
    assert_eq!(host.status()["message"], Value::Null);
}

#[test]
fn leave_destroys_the_instances_turns_mig_off_and_the_host_is_inactive_with_the_pool_off() {
    let host = balanced_h100();
    let (code, report) = common::run_json(host.command(&["leave", "--pool", "disabled"]));
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done");
    let card = host.card(GPU0);
    assert!(instances(&card).is_empty());
    assert_eq!(mig(&card), (0, 0));
    assert_eq!(report["host"]["status"], "inactive");
    assert_eq!(report["host"]["reason"], "pool_disabled");
    assert_eq!(host.sync("disabled")["reason"], "pool_disabled");
}

#[test]
fn leave_with_unnamed_instances_adopted_is_refused_before_any_write_naming_the_instance() {
    let host = balanced_h100();
    let before = host.card(GPU0);
    let (code, report) = common::run_json(host.command(&[
        "leave",
        "--pool",
        "enabled",
        "--unnamed-instances",
        "adopt",
    ]));
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["reason"], "layout_impossible", "{report:#}");
    assert_eq!(
        report["impossible"]["kind"], "adopted_in_the_way",
        "{report:#}"
    );
    assert_eq!(host.card(GPU0), before, "nothing written");
}

#[test]
fn config_after_apply_names_the_layout_while_mxctls_own_config_before_partition_still_counts() {
    let host = PartitionHost::one_h100();
    let own = host.path("mxctl.conf");
    std::fs::write(&own, "gpu-partitioning = enabled\n").unwrap();
    let layout = host.path("layout.yaml");
    std::fs::write(&layout, BALANCED).unwrap();
    let apply = [
        "apply",
        "--config",
        layout.to_str().unwrap(),
        "-c",
        "balanced",
    ];
    let (code, report) = common::run_json(host.command_configured(&own, &apply));
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done");
    // The pool switch came from mxctl's own config: no --pool was given.
    assert_eq!(report["host"]["status"], "active");
    assert_eq!(report["host"]["reason"], "ready");
    // Both spellings at once are one option given twice: a usage error.
    let twice = [&apply[..], &["--layout", layout.to_str().unwrap()]].concat();
    let out = host.command(&twice).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used multiple times"));
}

#[test]
fn assert_exits_0_after_apply_and_1_naming_the_difference_after_an_instance_is_destroyed_by_hand() {
    let host = balanced_h100();
    let file = host.path("layout.yaml");
    let assert = |host: &PartitionHost| {
        common::run_json(host.command(&[
            "assert",
            "--config",
            file.to_str().unwrap(),
            "--select",
            "balanced",
        ]))
    };
    let (code, report) = assert(&host);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["applied"], true);
    // By hand: the 2g.20gb's compute instance, then the instance itself.
    let gi = host.card(GPU0)["gpu_instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|gi| gi["profile_id"] == 14)
        .unwrap()["id"]
        .as_u64()
        .unwrap();
    host.by_hand(
        GPU0,
        &format!(
            "[{{\"op\": \"destroy_compute_instance\", \"gpu_instance_id\": {gi}, \"compute_instance_id\": 0}}]"
        ),
    );
    let (code, report) = assert(&host);
    assert_eq!(code, 1, "{report:#}");
    let differences = report["gpus"][0]["differences"].as_array().unwrap();
    assert_eq!(differences.len(), 1, "{report:#}");
    assert_eq!(differences[0]["kind"], "compute_instances");
    host.by_hand(
        GPU0,
        &format!("[{{\"op\": \"destroy_gpu_instance\", \"gpu_instance_id\": {gi}}}]"),
    );
    let (code, report) = assert(&host);
    assert_eq!(code, 1);
    let differences = report["gpus"][0]["differences"].as_array().unwrap();
    assert_eq!(differences[0]["kind"], "instance_count", "{report:#}");
    assert_eq!(
        (
            &differences[0]["profile"]["name"],
            &differences[0]["found"],
            &differences[0]["wanted"]
        ),
        (
            &serde_json::json!("2g.20gb"),
            &serde_json::json!(0),
            &serde_json::json!(1)
        )
    );
    assert_eq!(
        differences[0]["message"],
        "0 GPU instance(s) of 2g.20gb, the layout wants 1"
    );
}

#[test]
fn an_exported_layout_applies_back_as_zero_steps() {
    let host = balanced_h100();
    let (code, exported) = common::run_json(host.command(&["export", "--label", "here"]));
    assert_eq!(code, 0, "{exported:#}");
    assert_eq!(exported["warnings"], serde_json::json!([]), "{exported:#}");
    let document = &exported["document"];
    assert_eq!(
        document["mig-configs"]["here"][0]["mig-devices"]["1g.10gb"], 2,
        "{exported:#}"
    );
    let text = serde_json::to_string_pretty(document).unwrap();
    let (code, report) = host.apply(&text, "here", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert!(
        report["gpus"][0]["steps"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    assert!(host.writes().is_empty());
    // And as YAML, the text export.
    let mut command = common::mxctl_on(host.sysfs.root(), &host.path("state"), &host.path("locks"));
    command
        .args(["partition", "export", "--helper"])
        .arg(&host.helper);
    let yaml = command.output().unwrap();
    assert!(yaml.status.success());
    let yaml = String::from_utf8(yaml.stdout).unwrap();
    insta::assert_snapshot!(yaml);
    let (code, report) = host.apply(&yaml, "current", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert!(host.writes().is_empty());
}

#[test]
fn the_metrics_give_the_last_applys_outcome_and_reason() {
    let host = PartitionHost::one_h100();
    host.apply(BALANCED, "too-many", &[]);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_mxctl"));
    command
        .args(["--config", "/dev/null", "--state-dir"])
        .arg(host.path("state"))
        // On the real `/sys`: the test's own directory, named as the machine's (metrics only
        // reads there).
        .arg("--machine-lock-dir")
        .arg(host.path("locks"))
        .arg("metrics");
    let text = String::from_utf8(command.output().unwrap().stdout).unwrap();
    // A sample for CI's readers (promtool, prometheus_client, node_exporter).
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("metrics-samples");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("after-layout.prom"), &text).unwrap();
    let line = text
        .lines()
        .find(|line| line.starts_with("mxctl_layout_last_apply{"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.starts_with(
            "mxctl_layout_last_apply{label=\"too-many\",outcome=\"blocked\",reason=\"layout_impossible\"}"
        ),
        "{line}"
    );
}

#[test]
fn a_layout_file_that_does_not_read_is_a_usage_error_naming_line_and_member() {
    let host = PartitionHost::one_h100();
    let (code, report) = host.apply(
        "version: v1\nmig-configs:\n  l:\n    - devices: all\n      mig-enabled: maybe\n",
        "l",
        &[],
    );
    assert_eq!(code, 2);
    let message = report["error"]["message"].as_str().unwrap();
    assert!(
        message.ends_with("layout.yaml: line 5, column 20, /mig-configs/l/0/mig-enabled: `mig-enabled` must be true or false, not the string \"maybe\""),
        "{message}"
    );
}

#[test]
fn a_dry_run_plans_every_gpu_and_writes_nothing() {
    let host = PartitionHost::one_h100();
    let (code, report) = host.apply(BALANCED, "balanced", &["--dry-run"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "dry_run");
    assert_eq!(report["gpus"][0]["plan"].as_array().unwrap().len(), 5);
    assert!(host.writes().is_empty());
    assert_eq!(host.status()["status"], "not_reported");
}
