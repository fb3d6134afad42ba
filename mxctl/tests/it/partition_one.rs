//! `mxctl partition create` and `partition destroy`: one partition at a time for an owner,
//! through the executor, writing only that partition; a destroy by another owner refused naming
//! the owner; an apply that would destroy an owned partition refused; the owners brought back
//! by a restore after a reboot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::partition_host::PartitionHost;
use common::partition_layouts::GPU0;
use serde_json::Value;

/// An H100 with MIG on and nothing carved, declared so.
fn mig_on_h100() -> PartitionHost {
    let host = PartitionHost::one_h100();
    let layout = "version: v1\nmig-configs:\n  on:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {}\n";
    let (code, report) = host.apply(layout, "on", &[]);
    assert_eq!(code, 0, "{report:#}");
    host.clear_calls();
    host
}

fn create(host: &PartitionHost, profile: &str, owner: &str) -> Value {
    let (code, report) = host.one(&["create", "--profile", profile, "--owner", owner], GPU0);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done", "{report:#}");
    report
}

/// Each row of the list: slot id, profile name, placement start, owner.
fn rows(host: &PartitionHost) -> Vec<(u64, String, u64, Option<String>)> {
    host.list()["gpus"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["slot"]["id"].as_u64().unwrap(),
                row["profile"]["name"].as_str().unwrap().to_owned(),
                row["placement"]["start"].as_u64().unwrap(),
                row["owner"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[test]
fn a_partition_created_for_an_owner_takes_the_lowest_placement_and_is_listed_with_its_owner() {
    let host = mig_on_h100();
    let report = create(&host, "3g.40gb", "vm-a");
    assert_eq!(report["partition"]["owner"], "vm-a", "{report:#}");
    assert_eq!(report["partition"]["placement"]["start"], 0);
    assert!(report["generation"].as_u64().is_some(), "{report:#}");
    assert_eq!(
        report.get("undone"),
        Some(&serde_json::Value::Null),
        "nothing taken back: {report:#}"
    );
    let writes = host.writes();
    assert!(
        writes.iter().all(
            |w| w.starts_with("nvmlDeviceCreateGpuInstanceWithPlacement")
                || w.starts_with("nvmlGpuInstanceCreateComputeInstance")
        ),
        "only the one partition's creates: {writes:?}"
    );
    assert_eq!(writes.len(), 2, "{writes:?}");
    create(&host, "1g.10gb", "vm-b");
    assert_eq!(
        rows(&host),
        [
            (1, "3g.40gb".to_owned(), 0, Some("vm-a".to_owned())),
            (2, "1g.10gb".to_owned(), 4, Some("vm-b".to_owned())),
        ]
    );
}

#[test]
fn a_destroy_by_another_owner_is_refused_naming_the_owner_and_writes_nothing() {
    let host = mig_on_h100();
    create(&host, "3g.40gb", "vm-a");
    host.clear_calls();
    let (code, refused) = host.one(&["destroy", "--slot", "1", "--owner", "vm-b"], GPU0);
    assert_eq!(code, 3, "{refused:#}");
    assert_eq!(
        (
            &refused["reason"],
            &refused["owner"],
            &refused["gpu_instance_id"]
        ),
        (
            &Value::from("partition_in_use"),
            &Value::from("vm-a"),
            &Value::from(1)
        ),
        "{refused:#}"
    );
    let (code, refused) = host.one(&["destroy", "--slot", "1"], GPU0);
    assert_eq!(
        (code, &refused["reason"]),
        (3, &Value::from("partition_in_use"))
    );
    assert_eq!(host.writes(), Vec::<String>::new());
}

#[test]
fn the_owners_destroy_writes_that_partitions_destroys_only_and_the_others_stay() {
    let host = mig_on_h100();
    create(&host, "3g.40gb", "vm-a");
    create(&host, "1g.10gb", "vm-b");
    host.clear_calls();
    let (code, report) = host.one(&["destroy", "--owner", "vm-a"], GPU0);
    assert_eq!(code, 0, "{report:#}");
    // Its compute instance, then its GPU instance: two writes, no more.
    let writes = host.writes();
    assert_eq!(writes.len(), 2, "{writes:?}");
    assert!(
        writes[0].starts_with("nvmlComputeInstanceDestroy"),
        "{writes:?}"
    );
    assert!(
        writes[1].starts_with("nvmlGpuInstanceDestroy"),
        "{writes:?}"
    );
    assert_eq!(
        rows(&host),
        [(2, "1g.10gb".to_owned(), 4, Some("vm-b".to_owned()))]
    );
}

#[test]
fn an_apply_that_would_destroy_an_owned_partition_is_refused_naming_its_owner() {
    let host = mig_on_h100();
    create(&host, "3g.40gb", "vm-a");
    host.clear_calls();
    let layout = "version: v1\nmig-configs:\n  sevens:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 7}\n";
    let (code, report) = host.apply(layout, "sevens", &[]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["reason"], "partition_owned", "{report:#}");
    assert!(
        report["detail"].as_str().unwrap().contains("vm-a"),
        "{report:#}"
    );
    assert_eq!(host.writes(), Vec::<String>::new());
}

#[test]
fn a_partition_found_not_made_through_us_is_never_destroyed_one_at_a_time() {
    let host = mig_on_h100();
    host.by_hand(
        GPU0,
        "[{\"op\": \"create_gpu_instance\", \"profile_id\": 19, \"placement\": {\"start\": 6, \"size\": 1}}]",
    );
    host.clear_calls();
    let (code, refused) = host.one(&["destroy", "--slot", "1"], GPU0);
    assert_eq!(
        (code, &refused["reason"]),
        (3, &Value::from("inferred")),
        "{refused:#}"
    );
    assert_eq!(host.writes(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn after_a_reboot_the_boot_restore_brings_each_owned_partition_back_at_its_placement() {
    common::require_root();
    let host = mig_on_h100();
    create(&host, "3g.40gb", "vm-a");
    create(&host, "1g.10gb", "vm-b");
    let before = rows(&host);
    let generation = host.list()["gpus"][0]["generation"].as_u64().unwrap();
    host.reboot("99999999-2222-3333-4444-555555555555");
    let (code, report) = host.restore(&["--at-boot"]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(rows(&host), before);
    assert!(host.list()["gpus"][0]["generation"].as_u64().unwrap() > generation);
}

#[test]
fn a_create_on_a_card_that_differs_from_its_declaration_is_refused_before_any_write() {
    let host = mig_on_h100();
    create(&host, "3g.40gb", "vm-a");
    // By hand: vm-a's partition destroyed, so a create would also make it again.
    host.by_hand(
        GPU0,
        "[{\"op\": \"destroy_compute_instance\", \"gpu_instance_id\": 1, \"compute_instance_id\": 0}, \
          {\"op\": \"destroy_gpu_instance\", \"gpu_instance_id\": 1}]",
    );
    host.clear_calls();
    let (code, refused) = host.one(&["create", "--profile", "1g.10gb", "--owner", "vm-b"], GPU0);
    assert_eq!(
        (code, &refused["reason"]),
        (3, &Value::from("card_differs")),
        "{refused:#}"
    );
    assert_eq!(host.writes(), Vec::<String>::new());
}

#[test]
fn an_adopting_apply_that_leaves_an_owned_partition_out_is_refused_for_its_owner_would_be_lost() {
    let host = mig_on_h100();
    create(&host, "3g.40gb", "vm-a");
    host.clear_calls();
    let layout = "version: v1\nmig-configs:\n  ones:\n    - devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.10gb\": 2}\n";
    let (code, report) = host.apply(layout, "ones", &["--unnamed-instances", "adopt"]);
    assert_eq!(
        (code, &report["reason"]),
        (3, &Value::from("partition_owned")),
        "{report:#}"
    );
    assert_eq!(host.writes(), Vec::<String>::new());
}

#[test]
fn a_leave_is_refused_over_an_owned_partition_until_its_owner_is_released() {
    let host = mig_on_h100();
    create(&host, "3g.40gb", "vm-a");
    host.clear_calls();
    let (code, report) = common::run_json(host.command(&["leave", "--pool", "enabled"]));
    assert_eq!(
        (code, &report["reason"]),
        (3, &Value::from("partition_owned")),
        "{report:#}"
    );
    assert!(
        report["detail"].as_str().unwrap().contains("vm-a"),
        "{report:#}"
    );
    assert_eq!(host.writes(), Vec::<String>::new());
    let (code, report) =
        common::run_json(host.command(&["leave", "--pool", "enabled", "--release", "vm-a"]));
    assert_eq!(code, 0, "{report:#}");
    assert!(!host.writes().is_empty());
}
