//! The declared layout kept, through mxctl, the real helper and the fake NVML: what an apply
//! declares, the drift every sync with the pool on sees after a reboot or a hand edit, and
//! `partition restore`, with hooks around the writes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::{A100_OFF, ALL_BALANCED, H100_OFF, PartitionHost};
use serde_json::Value;

const A100_0: &str = "0000:3b:00.0";
const A100_1: &str = "0000:3c:00.0";
const H100: &str = "0000:3d:00.0";

/// Two A100-SXM4-40GB (Ampere: a mode change waits for a reset, and a reboot keeps the mode)
/// and one H100 80GB (Hopper: a mode change is immediate, and a reboot loses it), MIG off.
fn two_a100s_and_an_h100() -> PartitionHost {
    PartitionHost::new(&[
        (A100_0, A100_OFF, "0x20b0"),
        (A100_1, A100_OFF, "0x20b0"),
        (H100, H100_OFF, "0x2330"),
    ])
}

/// The host of [`two_a100s_and_an_h100`] with `all-balanced` applied.
fn balanced() -> PartitionHost {
    let host = two_a100s_and_an_h100();
    let (code, report) = host.apply(ALL_BALANCED, "all-balanced", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done", "{report:#}");
    host
}

fn messages(differences: &Value) -> Vec<String> {
    differences
        .as_array()
        .unwrap()
        .iter()
        .map(|d| format!("{} {}: {}", d["device"], d["kind"], d["message"]))
        .collect()
}

fn mig(card: &Value) -> (u64, u64) {
    (
        card["mig_mode"]["current"].as_u64().unwrap(),
        card["mig_mode"]["pending"].as_u64().unwrap(),
    )
}

fn instance_count(card: &Value) -> usize {
    card["gpu_instances"].as_array().map_or(0, Vec::len)
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn after_a_reboot_the_boot_sync_says_layout_drifted_and_a_restore_brings_it_back_with_no_reset() {
    common::require_root();
    let host = balanced();
    let status = host.status();
    assert_eq!(status["status"], "active", "{status:#}");
    assert_eq!(status["declared"]["label"], "all-balanced");
    assert_eq!(status["declared"]["holds"], "holds", "{status:#}");
    assert_eq!(status["declared"]["gpus"].as_array().unwrap().len(), 3);
    assert!(
        host.labels()
            .contains(&"mxctl.feature.node.kubernetes.io/layout-state=holds".to_owned())
    );

    // A reboot: every GPU instance gone, the A100s' MIG mode kept, the H100's lost.
    host.reboot("99999999-2222-3333-4444-555555555555");
    assert_eq!(mig(&host.card(A100_0)), (1, 1));
    assert_eq!(mig(&host.card(H100)), (0, 0));
    // Before any sync of this boot, nothing says the layout holds.
    assert_eq!(host.status()["declared"]["holds"], "unknown");
    assert!(
        host.labels()
            .contains(&"mxctl.feature.node.kubernetes.io/layout-state=unknown".to_owned())
    );

    let sync = host.boot_sync();
    assert_eq!(sync["after_boot"], true);
    assert_eq!(
        common::strings(&sync, ["status", "reason"]),
        ["entering", "layout_drifted"],
        "{sync:#}"
    );
    let drift = messages(&sync["drift"]);
    // Each A100: its four instances missing, named with their placements; the H100 the same,
    // and its lost mode.
    for gpu in [A100_0, A100_1] {
        let on_it: Vec<&String> = drift.iter().filter(|d| d.contains(gpu)).collect();
        assert_eq!(on_it.len(), 4, "{gpu}: {drift:#?}");
        assert!(
            on_it
                .iter()
                .all(|d| d.contains("\"instance_missing\"") && d.contains("no GPU instance of"))
        );
        assert!(
            on_it.iter().any(|d| d.contains("of 3g.20gb at")),
            "{on_it:?}"
        );
    }
    let on_h100: Vec<&String> = drift.iter().filter(|d| d.contains(H100)).collect();
    assert_eq!(on_h100.len(), 5, "{drift:#?}");
    assert!(
        on_h100
            .iter()
            .any(|d| d.contains("\"mode\"") && d.contains("MIG is off; the layout wants it on")),
        "{on_h100:?}"
    );
    let message = sync["message"].as_str().unwrap();
    assert!(message.contains("(13)"), "{message}");
    // The status, the labels and the metrics say the same.
    let status = host.status();
    assert_eq!(status["reason"], "layout_drifted");
    assert_eq!(status["declared"]["holds"], "drifted");
    assert_eq!(
        status["declared"]["differences"].as_array().unwrap().len(),
        13
    );
    let labels = host.labels();
    for line in [
        "mxctl.feature.node.kubernetes.io/status=entering",
        "mxctl.feature.node.kubernetes.io/reason=layout_drifted",
        "mxctl.feature.node.kubernetes.io/layout=all-balanced",
        "mxctl.feature.node.kubernetes.io/layout-state=drifted",
    ] {
        assert!(labels.contains(&line.to_owned()), "{line}: {labels:#?}");
    }
    let metrics = host.metrics();
    for line in [
        "mxctl_layout_declared{label=\"all-balanced\",state=\"drifted\"} 1",
        "mxctl_layout_declared{label=\"all-balanced\",state=\"holds\"} 0",
        "mxctl_layout_drift{kind=\"instance_missing\"} 12",
        "mxctl_layout_drift{kind=\"mode\"} 1",
        "mxctl_layout_drift{kind=\"instance_moved\"} 0",
    ] {
        assert!(metrics.contains(&line.to_owned()), "{line}: {metrics:#?}");
    }

    // The restore: no reset (no mode change waits for one: the A100s kept theirs, the H100's
    // is immediate), every instance back where it was declared.
    let resets = host.resets().len();
    host.clear_calls();
    let (code, report) = host.restore(&[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done", "{report:#}");
    assert_eq!(report["label"], "all-balanced");
    assert_eq!(host.resets().len(), resets, "{:?}", host.resets());
    assert!(report["resets"].as_array().unwrap().is_empty());
    assert!(host.calls().iter().all(|call| !call.starts_with("reset ")));
    assert_eq!(
        (
            report["host"]["status"].clone(),
            report["host"]["reason"].clone()
        ),
        (Value::from("active"), Value::from("ready"))
    );
    for gpu in [A100_0, A100_1, H100] {
        assert_eq!(instance_count(&host.card(gpu)), 4, "{gpu}");
    }
    let (code, assert) = host.assert(ALL_BALANCED, "all-balanced");
    assert_eq!(code, 0, "{assert:#}");
    assert_eq!(host.status()["declared"]["holds"], "holds");

    // Again: zero steps, zero writes.
    host.clear_calls();
    let (code, again) = host.restore(&[]);
    assert_eq!(code, 0, "{again:#}");
    for gpu in again["gpus"].as_array().unwrap() {
        assert!(gpu["steps"].as_array().unwrap().is_empty(), "{again:#}");
        assert!(gpu["plan"].as_array().unwrap().is_empty(), "{again:#}");
    }
    assert_eq!(host.writes(), Vec::<String>::new());
}

/// `[{"op": …}]` destroying GPU instance `gi` with its compute instance `ci`.
fn destroy(gi: u64, ci: u64) -> String {
    format!(
        r#"[{{"op": "destroy_compute_instance", "gpu_instance_id": {gi}, "compute_instance_id": {ci}}},
            {{"op": "destroy_gpu_instance", "gpu_instance_id": {gi}}}]"#
    )
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn one_instance_destroyed_by_hand_is_exactly_the_drift_and_exactly_what_a_restore_creates() {
    common::require_root();
    let host = balanced();
    // The 2g.10gb of the second A100 (profile 14), destroyed by hand through the helper.
    let card = host.card(A100_1);
    let gone = card["gpu_instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|gi| gi["profile_id"] == 14)
        .unwrap()
        .clone();
    let start = gone["placement"]["start"].as_u64().unwrap();
    host.by_hand(
        A100_1,
        &destroy(
            gone["id"].as_u64().unwrap(),
            gone["compute_instances"][0]["id"].as_u64().unwrap(),
        ),
    );
    let sync = host.sync("enabled");
    assert_eq!(sync["reason"], "layout_drifted", "{sync:#}");
    assert_eq!(
        messages(&sync["drift"]),
        [format!(
            "\"{A100_1}\" \"instance_missing\": \"no GPU instance of 2g.10gb at {start}+2, where the \
             layout places one\""
        )]
    );
    host.clear_calls();
    let (code, report) = host.restore(&[]);
    assert_eq!(code, 0, "{report:#}");
    // (The fake logs the GPU instance's handle and the compute profile; the handle is its own.)
    let writes: Vec<String> = host
        .writes()
        .into_iter()
        .map(
            |call| match call.strip_prefix("nvmlGpuInstanceCreateComputeInstance ") {
                Some(rest) => format!(
                    "nvmlGpuInstanceCreateComputeInstance {}",
                    rest.split_whitespace().last().unwrap_or_default()
                ),
                None => call,
            },
        )
        .collect();
    assert_eq!(
        writes,
        [
            format!("nvmlDeviceCreateGpuInstanceWithPlacement 14 {start}+2"),
            "nvmlGpuInstanceCreateComputeInstance 1".to_owned(),
        ]
    );
    assert_eq!(report["host"]["reason"], "ready");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn after_a_leave_mig_turned_on_by_hand_is_turned_off_again_with_a_reset_of_that_a100_alone() {
    common::require_root();
    let host = balanced();
    let (code, left) = super_leave(&host);
    assert_eq!(code, 0, "{left:#}");
    assert_eq!(host.status()["declared"]["label"], "leave");
    // By hand: MIG on again on the second A100 (after its reset) and on the H100.
    host.change_nvml(|state| {
        for card in state["devices"].as_array_mut().unwrap() {
            let bus = card["pci_bus_id"].as_str().unwrap().to_ascii_lowercase();
            if bus.ends_with("3c:00.0") || bus.ends_with("3d:00.0") {
                card["mig_mode"] = serde_json::json!({"current": 1, "pending": 1});
            }
        }
    });
    let resets = host.resets().len();
    let (code, report) = host.restore(&[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["label"], "leave");
    for gpu in [A100_0, A100_1, H100] {
        assert_eq!(mig(&host.card(gpu)), (0, 0), "{gpu}");
    }
    // The A100's change waited for a reset, of it alone; the H100's did not.
    let after: Vec<String> = host.resets()[resets..]
        .iter()
        .map(|(ids, _)| ids.clone())
        .collect();
    assert_eq!(after, ["00000000:3C:00.0"]);
}

fn super_leave(host: &PartitionHost) -> (i32, Value) {
    common::run_json(host.command(&["leave", "--pool", "enabled"]))
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_card_of_another_model_in_a_declared_slot_blocks_the_restore_and_nothing_is_written() {
    common::require_root();
    let host = balanced();
    host.reboot("99999999-2222-3333-4444-555555555555");
    // Another model in the first A100's slot (its catalogue aside: the model decides).
    host.change_nvml(|state| {
        state["devices"][0]["name"] = "NVIDIA A30".into();
    });
    let before = host.nvml();
    host.clear_calls();
    let report = common::blocked(host.restore(&[]), "card_changed");
    let detail = report["detail"].as_str().unwrap();
    for part in [A100_0, "NVIDIA A100-SXM4-40GB", "NVIDIA A30"] {
        assert!(detail.contains(part), "{part}: {detail}");
    }
    assert_eq!(host.writes(), Vec::<String>::new());
    assert_eq!(host.nvml(), before);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn another_board_of_the_same_model_is_restored_with_a_warning() {
    common::require_root();
    let host = balanced();
    host.reboot("99999999-2222-3333-4444-555555555555");
    // Another board: another UUID and another serial (a board's serial names it when both
    // sides have one).
    host.change_nvml(|state| {
        state["devices"][2]["uuid"] = "GPU-0badc0de-0000-4000-8000-000000000001".into();
        state["devices"][2]["serial"] = "0000000000001".into();
    });
    let (code, report) = host.restore(&[]);
    assert_eq!(code, 0, "{report:#}");
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("another board of the same model"),
        "{warnings:?}"
    );
    assert!(warnings[0].contains("serial 0000000000001"), "{warnings:?}");
    assert_eq!(instance_count(&host.card(H100)), 4);
}

/// A config with hooks: `pre-apply-mode` runs `fail` (exits 3 after a line on each stream),
/// `apply-exit` runs `exit`, which notes what it was told.
fn hooked(host: &PartitionHost) -> std::path::PathBuf {
    let dir = host.path("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    gpu_host_probe::test_util::write_executable(
        &dir.join("fail"),
        "#!/bin/sh\necho stopping dcgm\necho \"dcgm would not stop\" >&2\nexit 3\n",
    )
    .unwrap();
    let noted = host.path("exit-hook-ran");
    gpu_host_probe::test_util::write_executable(
        &dir.join("exit"),
        &format!(
            "#!/bin/sh\necho \"$MXCTL_HOOK $MXCTL_LABEL $MXCTL_OUTCOME $MXCTL_REASON $MXCTL_DEVICES\" > {}\n",
            noted.display()
        ),
    )
    .unwrap();
    let config = host.path("mxctl.conf");
    std::fs::write(
        &config,
        format!(
            "hook-pre-apply-mode = {}\nhook-apply-exit = {}\nhook-deadline = 10\n",
            dir.join("fail").display(),
            dir.join("exit").display()
        ),
    )
    .unwrap();
    config
}

fn apply_configured(host: &PartitionHost, config: &std::path::Path) -> (i32, Value) {
    let file = host.path("layout.yaml");
    std::fs::write(&file, ALL_BALANCED).unwrap();
    common::run_json(host.command_configured(
        config,
        &[
            "apply",
            "--config",
            file.to_str().unwrap(),
            "--select",
            "all-balanced",
            "--pool",
            "enabled",
        ],
    ))
}

#[test]
fn a_failing_pre_apply_mode_hook_blocks_before_any_write_and_apply_exit_still_runs() {
    let host = PartitionHost::one_h100();
    let config = hooked(&host);
    let (code, report) = apply_configured(&host, &config);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["reason"], "hook_failed", "{report:#}");
    let detail = report["detail"].as_str().unwrap();
    assert!(detail.contains("pre-apply-mode hook"), "{detail}");
    assert!(detail.contains("exited with code 3"), "{detail}");
    assert!(detail.contains("dcgm would not stop"), "{detail}");
    assert_eq!(host.writes(), Vec::<String>::new());
    assert_eq!(mig(&host.card("0000:3b:00.0")), (0, 0));
    // The hooks' output is in the report, in order.
    let hooks = report["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 2, "{report:#}");
    assert_eq!(hooks[0]["point"], "pre-apply-mode");
    assert_eq!(
        (&hooks[0]["end"], &hooks[0]["code"]),
        (&"exited".into(), &3.into())
    );
    assert_eq!(hooks[0]["stdout"], "stopping dcgm\n");
    assert_eq!(hooks[0]["stderr"], "dcgm would not stop\n");
    assert_eq!(hooks[1]["point"], "apply-exit");
    assert_eq!(
        (&hooks[1]["end"], &hooks[1]["code"]),
        (&"exited".into(), &0.into())
    );
    assert_eq!(
        std::fs::read_to_string(host.path("exit-hook-ran")).unwrap(),
        "apply-exit all-balanced blocked hook_failed 0000:3b:00.0\n"
    );
    // Nothing was declared: a blocked apply writes nothing.
    assert_eq!(host.status()["declared"], Value::Null);
}

#[test]
fn a_group_writable_hook_is_never_run_and_blocks_like_an_unsafe_helper() {
    use std::os::unix::fs::PermissionsExt;
    let host = PartitionHost::one_h100();
    let config = hooked(&host);
    let hook = host.path("hooks/fail");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o775)).unwrap();
    let (code, report) = apply_configured(&host, &config);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["reason"], "hook_failed");
    let hook = &report["hooks"][0];
    assert_eq!(
        common::strings(hook, ["end", "cause"]),
        ["not_started", "untrusted"]
    );
    let message = hook["message"].as_str().unwrap();
    assert!(message.contains("writable by its group"), "{message}");
    assert_eq!(host.writes(), Vec::<String>::new());
}

/// A config whose only hook is `pre-apply-mode = <dir>/hook`, a script of `body`, and whose
/// hooks may run `deadline` seconds.
fn one_hook(host: &PartitionHost, name: &str, body: &str, deadline: &str) -> std::path::PathBuf {
    let dir = host.path("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let hook = dir.join(name);
    gpu_host_probe::test_util::write_executable(&hook, &format!("#!/bin/sh\n{body}\n")).unwrap();
    let config = host.path(&format!("{name}.conf"));
    std::fs::write(
        &config,
        format!(
            "hook-pre-apply-mode = {}\nhook-deadline = {deadline}\n",
            hook.display()
        ),
    )
    .unwrap();
    config
}

#[test]
fn a_hook_that_times_out_one_that_exits_1_and_one_refused_as_unsafe_end_three_typed_ways() {
    use std::os::unix::fs::PermissionsExt;
    let host = PartitionHost::one_h100();
    let slow = one_hook(&host, "slow", "exec sleep 60", "0.2");
    let failing = one_hook(&host, "failing", "exit 1", "10");
    let unsafe_config = one_hook(&host, "unsafe", "exit 0", "10");
    std::fs::set_permissions(
        host.path("hooks/unsafe"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let mut ends = Vec::new();
    for config in [&slow, &failing, &unsafe_config] {
        let (code, report) = apply_configured(&host, config);
        assert_eq!(
            (code, &report["reason"]),
            (3, &"hook_failed".into()),
            "{report:#}"
        );
        let hook = &report["hooks"][0];
        ends.push((
            hook["end"].clone(),
            hook.get("code").cloned(),
            hook.get("cause").cloned(),
        ));
    }
    assert_eq!(
        ends,
        [
            ("timed_out".into(), None, None),
            ("exited".into(), Some(1.into()), None),
            ("not_started".into(), None, Some("untrusted".into())),
        ]
    );
    assert_eq!(host.writes(), Vec::<String>::new());
}

#[test]
fn a_hook_that_exits_0_leaving_a_child_on_its_output_lets_the_apply_run_with_a_warning() {
    let host = PartitionHost::one_h100();
    // A daemon restarted without redirecting its output, as such hooks are written.
    let config = one_hook(&host, "restart", "sleep 60 &\nexit 0", "10");
    let (code, report) = apply_configured(&host, &config);
    assert_eq!(
        (code, &report["outcome"]),
        (0, &"done".into()),
        "{report:#}"
    );
    let hook = &report["hooks"][0];
    assert_eq!(
        (&hook["end"], &hook["code"]),
        (&"pipes_held".into(), &0.into())
    );
    let warnings = report["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .is_some_and(|w| w.contains("pre-apply-mode hook") && w.contains("held its output"))),
        "{report:#}"
    );
    assert!(!host.writes().is_empty());
}

#[test]
fn a_relative_hook_path_is_refused_before_any_write_naming_its_key() {
    let host = PartitionHost::one_h100();
    let config = host.path("relative.conf");
    std::fs::write(&config, "hook-pre-apply-mode = hooks/drain.sh\n").unwrap();
    let (code, report) = apply_configured(&host, &config);
    assert_ne!(code, 0, "{report:#}");
    let message = report["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`hook-pre-apply-mode`")
            && message.contains("hooks/drain.sh is a relative path"),
        "{message}"
    );
    assert_eq!(host.writes(), Vec::<String>::new());
}
