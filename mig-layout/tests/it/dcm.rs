//! ROCm Device Config Manager's configs read as they are, with its rules; a profile assigned
//! to a host's GPUs in order, as DCM assigns it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use mig_layout::amd::{AmdWant, AssignError, DcmDocument};

fn example() -> DcmDocument {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/dcm/configmap-example.json");
    DcmDocument::from_text(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn device_config_managers_own_example_reads_whole() {
    let document = example();
    let names: Vec<&str> = document.profiles.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["default", "profile-1"]);
    assert_eq!(
        document.client_services,
        ["amd-metrics-exporter", "gpuagent"]
    );
    let profile = document.profile("profile-1").unwrap();
    assert_eq!(profile.skipped, [0, 1, 2]);
    assert_eq!(
        (
            profile.entries[0].compute,
            profile.entries[0].memory,
            profile.entries[0].gpus
        ),
        (C::Cpx, M::Nps1, 5)
    );
}

#[test]
fn a_profile_gives_the_gpus_not_skipped_their_partitions_in_order() {
    let document = example();
    let default = document.profile("default").unwrap().assign(8).unwrap();
    let cpx = Some(AmdWant::new(C::Cpx, M::Nps1));
    let spx = Some(AmdWant::new(C::Spx, M::Nps1));
    assert_eq!(default, [cpx, cpx, cpx, cpx, cpx, cpx, spx, spx]);
    let skipping = document.profile("profile-1").unwrap().assign(8).unwrap();
    assert_eq!(skipping, [None, None, None, cpx, cpx, cpx, cpx, cpx]);
}

#[test]
fn a_profile_whose_counts_do_not_add_up_to_the_host_is_refused_with_both() {
    let error = example().profile("default").unwrap().assign(7).unwrap_err();
    assert!(
        matches!(
            error,
            AssignError::Count {
                assigned: 8,
                skipped: 0,
                host: 7,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "/gpu-config-profiles/default: the profile assigns 8 GPUs and skips 0, and the host has 7"
    );
}

fn refused(text: &str) -> (Option<usize>, String, String) {
    let error = DcmDocument::from_text(text).unwrap_err();
    (error.line, error.at.to_string(), error.message)
}

fn one(entry: &str) -> String {
    format!("{{\"gpu-config-profiles\": {{\"p\": {{\"profiles\": [\n{entry}\n]}}}}}}")
}

#[test]
fn each_rule_of_the_format_refuses_naming_the_line_and_member() {
    let (line, at, message) = refused(&one(
        r#"{"computePartition": "TPX", "memoryPartition": "NPS1", "numGPUsAssigned": 1}"#,
    ));
    assert_eq!(
        (line, at.as_str()),
        (
            Some(2),
            "/gpu-config-profiles/p/profiles/0/computePartition"
        )
    );
    assert!(message.contains("SPX, DPX, QPX, CPX"), "{message}");

    let (line, _, message) = refused(&one(
        r#"{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 1},
{"computePartition": "SPX", "memoryPartition": "NPS1", "numGPUsAssigned": 1}"#,
    ));
    assert_eq!(line, Some(1));
    assert!(message.contains("NPS4 and NPS1"), "{message}");

    let (_, at, message) = refused(&one(
        r#"{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUSAssigned": 1}"#,
    ));
    assert_eq!(at, "/gpu-config-profiles/p/profiles/0/numGPUSAssigned");
    assert!(message.starts_with("unexpected member"), "{message}");

    let (_, _, message) = refused(&one(
        r#"{"computePartition": "CPX", "memoryPartition": "NPS4"}"#,
    ));
    assert_eq!(message, "missing required member `numGPUsAssigned`");

    let (_, at, message) = refused(
        r#"{"gpu-config-profiles": {"p": {"skippedGPUs": {"ids": [1, 1]}, "profiles": [
{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 1}]}}}"#,
    );
    assert_eq!(
        (at.as_str(), message.as_str()),
        (
            "/gpu-config-profiles/p/skippedGPUs/ids/1",
            "GPU 1 is skipped twice"
        )
    );

    let (_, _, message) = refused(r#"{"gpuClientSystemdServices": {"names": []}}"#);
    assert_eq!(message, "missing `gpu-config-profiles`");
}
