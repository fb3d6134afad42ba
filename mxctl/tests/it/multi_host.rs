//! A 3-host faulty-only reset run end to end on one machine: three state directories, three
//! fake `mx-smi` hosts, the phases run in order by the test as an orchestrator would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::pool::Pool;
use std::process::Command;

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_three_host_faulty_only_plan_runs_every_action_once_in_phase_order_and_reruns_change_nothing() {
    common::require_root();
    let pool = Pool::new();
    let plan_path = pool.plan();
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&plan_path).unwrap()).unwrap();
    let phases = plan["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 5);

    let mut seen = Vec::new();
    for phase in phases {
        let index = phase["index"].as_u64().unwrap() as usize;
        for action in phase["actions"].as_array().unwrap() {
            let host = action["host"].as_str().unwrap();
            let (code, report) = pool.step(&plan_path, host, index);
            assert_eq!(code, 0, "phase {index} on {host}: {report}");
            assert_eq!(report["repeated"], false);
            seen.push(format!(
                "{index}:{host}:{}",
                action["action"].as_str().unwrap()
            ));
        }
    }
    assert_eq!(
        seen,
        [
            "0:h2:preflight",
            "1:h2:reset",
            "2:h2:verify",
            "3:h1:disconnect_links",
            "3:h3:disconnect_links",
            "4:h1:connect_links",
            "4:h2:connect_links",
            "4:h3:connect_links",
        ]
    );

    let records = pool.assert_faulty_only_ran_once_in_phase_order();

    // An orchestrator that retries: every step again, and nothing changes.
    for phase in phases {
        let index = phase["index"].as_u64().unwrap() as usize;
        for action in phase["actions"].as_array().unwrap() {
            let (code, report) = pool.step(&plan_path, action["host"].as_str().unwrap(), index);
            assert_eq!(
                (code, &report["repeated"], &report["outcome"]),
                (
                    0,
                    &serde_json::json!(true),
                    &serde_json::json!(index_outcome(index))
                )
            );
        }
    }
    assert_eq!(pool.records(), records);
}

fn index_outcome(index: usize) -> &'static str {
    if index == 0 { "dry_run" } else { "done" }
}

#[test]
fn a_step_for_a_phase_the_plan_lacks_fails_clearly() {
    let pool = Pool::new();
    let plan = pool.plan();
    let (code, document) = pool.step(&plan, "h1", 9);
    assert_eq!(code, 1);
    assert!(
        document["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no phase 9"),
        "{document}"
    );
}

#[test]
fn a_bad_plan_file_is_refused_with_exit_1() {
    let pool = Pool::new();
    let path = pool.top.path().join("bad-plan.json");
    std::fs::write(&path, r#"{"strategy": "sideways"}"#).unwrap();
    let (code, document) = pool.step(&path, "h1", 0);
    assert_eq!(
        (code, document["error"]["kind"].as_str()),
        (1, Some("plan"))
    );
}

#[test]
fn a_bad_group_file_is_refused_with_exit_1_and_a_clear_message() {
    let pool = Pool::new();
    std::fs::write(
        pool.top.path().join("group.json"),
        r#"{"hosts": [{"name": "h1", "nodes": []}]}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args([
            "--config",
            "/dev/null",
            "reset",
            "plan",
            "--faulty",
            "h1",
            "--group",
        ])
        .arg(pool.top.path().join("group.json"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("host h1 has no node"));
}
