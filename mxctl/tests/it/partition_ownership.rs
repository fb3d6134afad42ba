//! Who owns a GPU (`partition own`): a GPU `dynamic` (an allocator's) or `external` (another
//! tool's) is left alone by every write of mxctl — an apply, a restore, a leave skip it with a
//! warning, one that names it, a create and a reset are blocked (`gpu_not_ours`) — with no
//! write to it (the fake's call log), and status, labels and metrics say who owns it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::PartitionHost;
use common::partition_layouts::GPU0;
use serde_json::Value;

const MIG_ON: &str = "version: v1\nmig-configs:\n  on:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 2}\n";

/// An H100 with a layout applied, then declared `ownership`'s, its calls forgotten.
fn owned_by(ownership: &str) -> PartitionHost {
    let host = PartitionHost::one_h100();
    let (code, report) = host.apply(MIG_ON, "on", &[]);
    assert_eq!(code, 0, "{report:#}");
    let (code, said) =
        common::run_json(host.mxctl(&["partition", "own", "--device", GPU0, "--as", ownership]));
    assert_eq!(code, 0, "{said:#}");
    assert_eq!(said["ownership"], ownership);
    host.clear_calls();
    host
}

fn warned_not_ours(report: &Value) -> bool {
    report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("is not ours (ownership"))
}

#[test]
fn a_gpu_not_ours_is_skipped_by_an_apply_a_restore_a_boot_restore_and_a_leave_with_no_write_to_it()
{
    for ownership in ["dynamic", "external"] {
        let host = owned_by(ownership);
        let seven = "version: v1\nmig-configs:\n  seven:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 7}\n";
        let (code, report) = host.apply(seven, "seven", &[]);
        assert_eq!(code, 0, "{ownership}: {report:#}");
        assert!(warned_not_ours(&report), "{ownership}: {report:#}");
        // The host's one GPU is not ours: the layout names none of ours, and says why.
        assert_eq!(report["outcome"], "nothing_named", "{report:#}");
        let detail = report["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("every GPU it names is not ours (0000:3b:00.0"),
            "{detail}"
        );
        for restore in [&[][..], &["--at-boot"][..]] {
            let (code, report) = host.restore(restore);
            assert_eq!(code, 0, "{ownership} {restore:?}: {report:#}");
            assert!(
                warned_not_ours(&report),
                "{ownership} {restore:?}: {report:#}"
            );
        }
        let (code, report) = common::run_json(host.command(&["leave", "--pool", "enabled"]));
        assert_eq!(code, 0, "{ownership}: {report:#}");
        assert!(warned_not_ours(&report), "{ownership}: {report:#}");
        assert_eq!(
            host.writes(),
            Vec::<String>::new(),
            "{ownership}: no write to the GPU"
        );
    }
}

#[test]
fn a_gpu_another_agent_divides_is_written_by_nobody_of_ours_and_never_drift() {
    let host = PartitionHost::new(&[
        (GPU0, common::partition_host::H100_OFF, "0x2330"),
        ("0000:3c:00.0", common::partition_host::H100_OFF, "0x2330"),
    ]);
    let (code, report) = host.apply(MIG_ON, "on", &[]);
    assert_eq!(code, 0, "{report:#}");
    let (code, _) =
        common::run_json(host.mxctl(&["partition", "own", "--device", GPU0, "--as", "dynamic"]));
    assert_eq!(code, 0);
    // The allocator divides its GPU as it likes.
    host.by_hand(
        GPU0,
        "[{\"op\": \"create_gpu_instance\", \"profile_id\": 19, \"placement\": {\"start\": 6, \"size\": 1}}]",
    );
    let sync = host.sync("enabled");
    assert_eq!(
        (&sync["status"], &sync["reason"]),
        (&Value::from("active"), &Value::from("ready")),
        "{sync:#}"
    );
    let list = host.list();
    let origins: Vec<&str> = list["gpus"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["origin"].as_str().unwrap())
        .collect();
    assert!(
        origins.iter().all(|origin| *origin == "inferred"),
        "{list:#}"
    );
    host.clear_calls();
    let (code, report) = host.apply(MIG_ON, "on", &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        host.writes(),
        Vec::<String>::new(),
        "the GPU ours holds the layout already"
    );
}

#[test]
fn a_write_that_names_a_gpu_not_ours_is_blocked_before_any_write() {
    for ownership in ["dynamic", "external"] {
        let host = owned_by(ownership);
        let (code, report) = host.apply(MIG_ON, "on", &["--device", GPU0]);
        assert_eq!(
            (code, &report["reason"]),
            (3, &Value::from("gpu_not_ours")),
            "{ownership}: {report:#}"
        );
        let (code, refused) =
            host.one(&["create", "--profile", "1g.10gb", "--owner", "vm-a"], GPU0);
        assert_eq!(
            (code, &refused["reason"]),
            (3, &Value::from("gpu_not_ours")),
            "{ownership}: {refused:#}"
        );
        for target in [GPU0, "all"] {
            let (code, reset) =
                common::run_json(host.mxctl(&["reset", "--method", "nvidia", "--device", target]));
            assert_eq!(
                (code, &reset["reason"]),
                (3, &Value::from("gpu_not_ours")),
                "{ownership} {target}: {reset:#}"
            );
        }
        assert_eq!(host.writes(), Vec::<String>::new(), "{ownership}: no write");
        assert!(host.resets().is_empty(), "{ownership}: no reset");
    }
}

#[test]
fn status_labels_and_metrics_say_who_owns_a_gpu_not_ours_and_host_undoes_it() {
    let host = owned_by("external");
    let status = host.status();
    assert_eq!(status["gpus"][0]["ownership"], "external", "{status:#}");
    assert!(
        host.labels().contains(
            &"mxctl.feature.node.kubernetes.io/gpu-0000-3b-00.0.ownership=external".to_owned()
        ),
        "{:?}",
        host.labels()
    );
    assert!(
        host.metrics().contains(
            &"mxctl_gpu_ownership{device=\"0000:3b:00.0\",ownership=\"external\"} 1".to_owned()
        ),
        "{:?}",
        host.metrics()
    );
    let (code, _) =
        common::run_json(host.mxctl(&["partition", "own", "--device", GPU0, "--as", "host"]));
    assert_eq!(code, 0);
    assert_eq!(host.status()["gpus"][0]["ownership"], "host");
    assert!(
        !host
            .metrics()
            .iter()
            .any(|line| line.starts_with("mxctl_gpu_ownership"))
    );
}
