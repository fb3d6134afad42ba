//! The helper's real NVML path: the helper binary run against `libfake_nvml.so` installed as
//! `libnvidia-ml.so.1`, each reply read back with `mxctl reply check` as the probe reads it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use fake_nvml::support::{Build, helper_wrapper};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DEVICE: &str = "0000:3b:00.0";

fn scenario(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fake-nvml/scenarios")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A helper wrapper for `scenario`, in a directory of its own.
struct Card {
    dir: tempfile::TempDir,
    wrapper: PathBuf,
}

impl Card {
    fn new(name: &str, build: Build) -> Card {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.log");
        let wrapper = helper_wrapper(dir.path(), &scenario(name), build, Some(&log)).unwrap();
        Card { dir, wrapper }
    }

    fn read(&self, device: &str) -> Output {
        Command::new(&self.wrapper)
            .args(["read", "--device", device, "--format", "1"])
            .output()
            .unwrap()
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// What `mxctl reply check` says of the helper's output (made in-process, [`common::check`]).
fn check(output: &Output, device: &str) -> serde_json::Value {
    assert!(
        output.status.success(),
        "helper: {:?} {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    common::check(&output.stdout, device)
}

fn reply_json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap()
}

/// (accepted, outcome, partition mode, lost).
fn summary(check: &serde_json::Value) -> (bool, String, String, Vec<String>) {
    (
        check["accepted"].as_bool().unwrap(),
        check["outcome"].as_str().unwrap_or_default().to_owned(),
        check["partition_mode"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        check["lost"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_owned())
            .collect(),
    )
}

fn expect(name: &str, outcome: &str, mode: &str) -> serde_json::Value {
    let card = Card::new(name, Build::Current);
    let output = card.read(DEVICE);
    let checked = check(&output, DEVICE);
    assert_eq!(
        summary(&checked),
        (true, outcome.to_owned(), mode.to_owned(), vec![]),
        "{name}: {checked}"
    );
    reply_json(&output)
}

fn ids(list: &serde_json::Value, key: &str) -> Vec<u64> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| item[key].as_u64().unwrap())
        .collect()
}

#[test]
fn a_carved_a100_reads_as_partitions_with_profile_ids_and_free_instances() {
    let reply = expect("a100-mig-on-carved.json", "partitions", "enabled");
    insta::assert_json_snapshot!("a100_mig_on_carved", reply);
    // Profile IDs (not indices), in index order: 0, 1, 2, 3, 4, 7, 9.
    assert_eq!(ids(&reply["profiles"], "id"), [19, 14, 9, 5, 0, 20, 15]);
    assert_eq!(
        ids(&reply["profiles"], "free_instances"),
        [1, 0, 0, 0, 0, 1, 1]
    );
    assert_eq!(ids(&reply["gpu_instances"], "profile_id"), [9, 14]);
    assert_eq!(
        ids(
            &reply["gpu_instances"][0]["compute_instances"],
            "profile_id"
        ),
        [2]
    );
    assert_eq!(ids(&reply["vgpus"], "gpu_instance_id"), [1, 2]);
}

#[test]
fn an_a100_with_mig_on_and_no_instance_is_none_carved_and_enabled() {
    let reply = expect("a100-mig-on-none-carved.json", "none_carved", "enabled");
    assert_eq!(
        ids(&reply["profiles"], "free_instances"),
        [7, 3, 2, 1, 1, 1, 4]
    );
}

#[test]
fn an_a100_with_mig_off_is_none_carved_and_disabled() {
    expect("a100-mig-off.json", "none_carved", "disabled");
}

#[test]
fn a_change_pending_reads_as_on_reboot() {
    expect(
        "a100-mig-off-on-pending.json",
        "none_carved",
        "enable_on_reboot",
    );
    expect(
        "a100-mig-on-off-pending.json",
        "partitions",
        "disable_on_reboot",
    );
}

#[test]
fn a_card_without_mig_is_not_applicable() {
    expect("l40s-no-mig.json", "not_applicable", "not_supported");
}

#[test]
fn a_gpu_instance_on_a_profile_at_index_17_keeps_the_card_carved() {
    let card = Card::new("synthetic-profile-at-index-17.json", Build::Current);
    let output = card.read("0000:4c:00.0");
    let checked = check(&output, "0000:4c:00.0");
    assert_eq!(
        summary(&checked),
        (true, "partitions".into(), "enabled".into(), vec![])
    );
    let reply = reply_json(&output);
    assert_eq!(ids(&reply["gpu_instances"], "profile_id"), [47]);
    let gfx = &reply["profiles"].as_array().unwrap().last().unwrap()["signature"]["capabilities"];
    assert_eq!(gfx, &serde_json::json!(["gfx"]));
    // Indices up to the first INVALID_ARGUMENT (18), not up to the binding's bound.
    let asked: Vec<String> = card
        .calls()
        .into_iter()
        .filter(|call| call.starts_with("nvmlDeviceGetGpuInstanceProfileInfoV "))
        .collect();
    assert_eq!(asked.len(), 19, "{asked:?}");
}

#[test]
fn an_old_driver_without_the_v_call_reads_through_the_v1_call_with_names_from_counts() {
    let card = Card::new("a100-r470-carved.json", Build::WithoutProfileInfoV);
    let output = card.read(DEVICE);
    let checked = check(&output, DEVICE);
    assert_eq!(
        summary(&checked),
        (true, "partitions".into(), "enabled".into(), vec![])
    );
    let reply = reply_json(&output);
    let names: Vec<&str> = reply["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    // No 1g.10gb: it came with R525 (NVIDIA's MIG user guide).
    assert_eq!(
        names,
        [
            "1g.5gb",
            "2g.10gb",
            "3g.20gb",
            "4g.20gb",
            "7g.40gb",
            "1g.5gb+me"
        ]
    );
    assert!(
        !card
            .calls()
            .iter()
            .any(|c| c.starts_with("nvmlDeviceGetGpuInstanceProfileInfoV"))
    );
}

#[test]
fn a_v_call_the_driver_lacks_or_refuses_falls_back_to_the_v1_call() {
    for name in [
        "fail-profile-v-function-not-found.json",
        "fail-profile-v-not-supported.json",
    ] {
        let card = Card::new(name, Build::Current);
        let output = card.read(DEVICE);
        let checked = check(&output, DEVICE);
        assert_eq!(
            summary(&checked),
            (true, "partitions".into(), "enabled".into(), vec![]),
            "{name}"
        );
        assert_eq!(
            ids(&reply_json(&output)["profiles"], "id"),
            [19, 14, 9, 5, 0, 20, 15],
            "{name}"
        );
    }
}

fn unreadable(name: &str) -> (String, String) {
    let card = Card::new(name, Build::Current);
    let output = card.read(DEVICE);
    let checked = check(&output, DEVICE);
    let reply = reply_json(&output);
    (
        checked["outcome"].as_str().unwrap().to_owned(),
        reply["unreadable"]["kind"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn no_permission_is_unreadable_permission_denied() {
    assert_eq!(
        unreadable("fail-no-permission.json"),
        ("unreadable".into(), "permission_denied".into())
    );
}

#[test]
fn an_unknown_card_is_unreadable_not_found() {
    assert_eq!(
        unreadable("fail-not-found.json"),
        ("unreadable".into(), "not_found".into())
    );
}

#[test]
fn an_unknown_nvml_error_is_unreadable_driver_error() {
    assert_eq!(
        unreadable("fail-unknown.json"),
        ("unreadable".into(), "driver_error".into())
    );
}

#[test]
fn an_invalid_argument_on_the_mig_mode_is_driver_error_never_not_applicable() {
    assert_eq!(
        unreadable("fail-mig-mode-invalid-argument.json"),
        ("unreadable".into(), "driver_error".into())
    );
}

#[test]
fn a_card_in_use_by_another_client_exits_75() {
    let card = Card::new("fail-in-use.json", Build::Current);
    let output = card.read(DEVICE);
    assert_eq!(output.status.code(), Some(75));
}

#[test]
fn a_vgpu_whose_gpu_instance_cannot_be_read_is_lost_at_its_index() {
    let card = Card::new("fail-vgpu-gpu-instance-unknown.json", Build::Current);
    let output = card.read(DEVICE);
    let checked = check(&output, DEVICE);
    assert_eq!(
        summary(&checked),
        (
            true,
            "partitions".into(),
            "enabled".into(),
            vec!["/vgpus/0".into(), "/vgpus/1".into()]
        )
    );
}

#[test]
fn a_card_asked_by_its_short_bus_id_is_found_in_either_case() {
    let card = Card::new("a100-mig-on-carved.json", Build::Current);
    assert!(card.read(DEVICE).status.success());
    assert!(
        card.calls()
            .iter()
            .any(|call| call == "nvmlDeviceGetHandleByPciBusId_v2 0000:3b:00.0")
    );
}

#[test]
fn one_read_inits_nvml_once_and_asks_nothing_twice() {
    let card = Card::new("a100-mig-on-carved.json", Build::Current);
    assert!(card.read(DEVICE).status.success());
    let calls = card.calls();
    assert_eq!(calls.iter().filter(|c| *c == "nvmlInit_v2").count(), 1);
    assert_eq!(calls.last().map(String::as_str), Some("nvmlShutdown"));
    let mut seen = std::collections::BTreeSet::new();
    let repeated: Vec<&str> = calls
        .iter()
        .filter(|c| !seen.insert(*c))
        .map(String::as_str)
        .collect();
    // Two from nvml-wrapper: the driver version inside its init, and the count query before
    // the list of active vGPUs; and each profile's placements, asked for their number first,
    // then listed (once each, seven profiles).
    let placements =
        |call: &str| call.starts_with("nvmlDeviceGetGpuInstancePossiblePlacements_v2 ");
    assert_eq!(
        repeated
            .iter()
            .filter(|c| !placements(c))
            .copied()
            .collect::<Vec<_>>(),
        ["nvmlSystemGetDriverVersion", "nvmlDeviceGetActiveVgpus"]
    );
    assert_eq!(repeated.iter().filter(|c| placements(c)).count(), 7);
    for call in repeated.iter().filter(|c| placements(c)) {
        assert_eq!(calls.iter().filter(|c| c == call).count(), 2, "{call}");
    }
}

#[test]
fn a_missing_or_bad_scenario_fails_nvml_init_and_the_read_is_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = helper_wrapper(dir.path(), "not json", Build::Current, None).unwrap();
    let output = Command::new(wrapper)
        .args(["read", "--device", DEVICE, "--format", "1"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("fake-nvml: "));
    let reply = reply_json(&output);
    assert_eq!(reply["unreadable"]["kind"], "driver_error");
}

#[test]
fn a_published_a100_catalogue_reads_as_its_types_with_one_vgpu_per_gpu_instance() {
    let card = Card::new("parts/a100-pcie-40gb.json", Build::Current);
    let output = card.read(DEVICE);
    let checked = check(&output, DEVICE);
    assert_eq!(
        summary(&checked),
        (true, "none_carved".into(), "disabled".into(), Vec::new()),
        "{checked}"
    );
    let reply = reply_json(&output);
    let types = reply["vgpu_types"].as_array().unwrap();
    let rows: Vec<(u64, &str, Option<u64>)> = types
        .iter()
        .map(|t| {
            (
                t["id"].as_u64().unwrap(),
                t["name"].as_str().unwrap(),
                t["gpu_instance_profile_id"].as_u64(),
            )
        })
        .collect();
    // A MIG-backed vGPU takes a whole GPU instance on a part without MIG time-slicing (the
    // part's sources cite NVIDIA's rule); a time-sliced type has no such count.
    let per_instance = |id: u64| {
        types
            .iter()
            .find(|t| t["id"].as_u64() == Some(id))
            .map(|t| t["max_instances_per_gpu_instance"].clone())
    };
    assert_eq!(per_instance(474), Some(serde_json::json!(1)));
    assert_eq!(per_instance(468), Some(serde_json::Value::Null));
    // The IDs and names NVIDIA's driver gives this part (OpenForBC's NVML notebook); a
    // time-sliced type has no GPU-instance profile, and profile 0 (7g.40gb) is a real one.
    assert_eq!(rows.len(), 12, "{rows:?}");
    assert!(
        rows.contains(&(474, "GRID A100-1-5C", Some(19))),
        "{rows:?}"
    );
    assert!(
        rows.contains(&(478, "GRID A100-7-40C", Some(0))),
        "{rows:?}"
    );
    assert!(rows.contains(&(468, "GRID A100-4C", None)), "{rows:?}");
    assert!(
        rows.contains(&(706, "GRID A100-1-5CME", Some(20))),
        "{rows:?}"
    );
}

#[test]
fn every_published_part_answers_its_architecture_and_the_helper_writes_nvml_s_number() {
    let mut read = Vec::new();
    for (part, text) in fake_nvml::scenarios::PARTS {
        let dir = tempfile::tempdir().unwrap();
        let wrapper = helper_wrapper(dir.path(), text, Build::Current, None).unwrap();
        let output = Command::new(&wrapper)
            .args(["read", "--device", DEVICE, "--format", "1"])
            .output()
            .unwrap();
        let reply = gpu_partition_types::Reply::from_json(&output.stdout, None).unwrap();
        let architecture = reply.architecture().and_then(|a| a.known());
        read.push((part, architecture.map(|a| (a.to_string(), a.nvml()))));
    }
    let named = |name: &str, number| Some((name.to_owned(), number));
    assert_eq!(
        read,
        [
            ("a100-pcie-40gb", named("ampere", 7)),
            ("a100-sxm4-40gb", named("ampere", 7)),
            ("a100-sxm4-80gb", named("ampere", 7)),
            ("a30-24gb", named("ampere", 7)),
            ("b200-180gb", named("blackwell", 10)),
            ("gh200-144gb", named("hopper", 9)),
            ("h100-80gb", named("hopper", 9)),
            ("h100-nvl-94gb", named("hopper", 9)),
            ("h200-141gb", named("hopper", 9)),
        ]
    );
}
