//! ROCm Device Config Manager's configs read as DCM reads them (whole, unless Go's reader would
//! fail or it is not DCM's shape), each profile judged by DCM's rules only when it is assigned,
//! and assigned to a host's GPUs in order, as DCM assigns it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use mig_layout::amd::{AmdWant, AssignError, DcmDocument, DcmMode, ProfileFault};

fn sample(name: &str) -> DcmDocument {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/dcm")
        .join(name);
    DcmDocument::from_text(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `configmap.md`'s example: two valid profiles.
fn configmap() -> DcmDocument {
    sample("configmap-example.json")
}

/// DCM's `example/partition.json`: its valid profiles and those its checks refuse.
fn partition() -> DcmDocument {
    sample("partition.json")
}

fn want(compute: C, memory: M) -> Option<AmdWant> {
    Some(AmdWant::new(compute, memory))
}

fn refused(document: &DcmDocument, profile: &str, host: usize) -> AssignError {
    document.profile(profile).unwrap().assign(host).unwrap_err()
}

#[test]
fn the_configmap_documents_example_reads_whole() {
    let document = configmap();
    let names: Vec<&str> = document.profiles.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["default", "profile-1"]);
    assert_eq!(
        document.client_services,
        ["amd-metrics-exporter", "gpuagent"]
    );
    let profile = document.profile("profile-1").unwrap();
    assert_eq!(profile.skipped, [0, 1, 2]);
    let entry = &profile.entries[0];
    assert_eq!(
        (&entry.compute, &entry.memory, entry.gpus),
        (&DcmMode::Valid(C::Cpx), &DcmMode::Valid(M::Nps1), Some(5))
    );
}

#[test]
fn a_profile_gives_the_gpus_not_skipped_their_partitions_in_order() {
    let document = configmap();
    let default = document.profile("default").unwrap().assign(8).unwrap();
    let (cpx, spx) = (want(C::Cpx, M::Nps1), want(C::Spx, M::Nps1));
    assert_eq!(default, [cpx, cpx, cpx, cpx, cpx, cpx, spx, spx]);
    let skipping = document.profile("profile-1").unwrap().assign(8).unwrap();
    assert_eq!(skipping, [None, None, None, cpx, cpx, cpx, cpx, cpx]);
}

#[test]
fn a_profile_whose_counts_do_not_add_up_to_the_host_is_refused_with_both() {
    let error = refused(&configmap(), "default", 7);
    assert_eq!(
        (error.name.as_str(), error.at.to_string(), error.line),
        (
            "default",
            "/gpu-config-profiles/default".to_owned(),
            Some(4)
        )
    );
    assert_eq!(
        error.faults,
        [ProfileFault::Count {
            assigned: 8,
            skipped: 0,
            host: 7
        }]
    );
    assert_eq!(
        error.to_string(),
        "the profile \"default\" (line 4): it assigns 8 GPUs and skips 0, and the host has 7"
    );
}

#[test]
fn dcms_published_example_reads_whole_although_half_its_profiles_are_invalid() {
    let document = partition();
    let names: Vec<&str> = document.profiles.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "default",
            "profile-1",
            "skipped_gpus",
            "heterogenous",
            "invalidgpucount",
            "invalcomputetype",
            "invalmemorytype",
            "invalmemorytypecombinationNPS1NPS4",
            "invalidmissingfields",
            "homogenous",
            "highgpucount_mostly_invalid",
            "nps2",
        ]
    );
    assert_eq!(
        document.client_services,
        ["amd-metrics-exporter", "gpuagent"]
    );
}

#[test]
fn every_valid_profile_of_dcms_example_assigns_an_eight_gpu_host_as_dcm_does() {
    let document = partition();
    let (spx, cpx) = (want(C::Spx, M::Nps1), want(C::Cpx, M::Nps1));
    let (dpx, qpx) = (want(C::Dpx, M::Nps1), want(C::Qpx, M::Nps1));
    let dpx2 = want(C::Dpx, M::Nps2);
    let cases = [
        // Skips 3 and 6; two CPX, then four SPX.
        ("default", [cpx, cpx, spx, None, spx, spx, None, spx]),
        ("profile-1", [None, None, cpx, cpx, None, cpx, cpx, cpx]),
        // The skipped IDs in any order.
        ("skipped_gpus", [dpx, None, dpx, dpx, None, None, None, dpx]),
        ("heterogenous", [dpx, dpx, cpx, None, cpx, cpx, qpx, qpx]),
        ("homogenous", [spx; 8]),
        ("nps2", [dpx2; 8]),
    ];
    for (name, expected) in cases {
        let assigned = document.profile(name).unwrap().assign(8);
        assert_eq!(assigned, Ok(expected.to_vec()), "{name}");
    }
}

#[test]
fn every_invalid_profile_of_dcms_example_is_refused_when_assigned_with_dcms_reason_first() {
    let document = partition();
    let count = |assigned, skipped| ProfileFault::Count {
        assigned,
        skipped,
        host: 8,
    };
    // DCM's validateProfile stops at its first fault: the skipped IDs, the count, then each
    // entry's modes and memory partition. Every fault is named here, DCM's first.
    assert_eq!(
        refused(&document, "invalidgpucount", 8).faults,
        [count(6, 3)]
    );
    assert_eq!(
        refused(&document, "highgpucount_mostly_invalid", 8).faults,
        [count(3543, 0)]
    );
    assert_eq!(
        refused(&document, "invalmemorytypecombinationNPS1NPS4", 8).faults,
        [ProfileFault::MixedMemory {
            entry: 1,
            memory: M::Nps1,
            first: M::Nps4
        }]
    );
    // DCM counts the entry without numGPUsAssigned as 0, so it reports the count.
    assert_eq!(
        refused(&document, "invalidmissingfields", 8).faults,
        [count(4, 2), ProfileFault::MissingGpus { entry: 0 }]
    );
    // Its counts (2 + 5, two skipped) are wrong too, and DCM checks them first.
    let faults = refused(&document, "invalcomputetype", 8).faults;
    assert!(
        matches!(
            faults.as_slice(),
            [first, ProfileFault::Compute { entry: 0, given }]
                if *first == count(7, 2) && given.given() == Some("invalid")
        ),
        "{faults:?}"
    );
    let faults = refused(&document, "invalmemorytype", 8).faults;
    assert!(
        matches!(
            faults.as_slice(),
            [ProfileFault::Memory { entry: 0, given }] if given.given() == Some("invalid")
        ),
        "{faults:?}"
    );
    let messages: Vec<String> = document
        .profiles
        .iter()
        .filter_map(|profile| profile.assign(8).err())
        .map(|error| error.to_string())
        .collect();
    insta::assert_snapshot!(messages.join("\n"));
}

/// A document of one valid profile, `ok`, beside `p`, whose one entry is `entry`.
fn beside_a_valid_one(entry: &str) -> String {
    format!(
        "{{\"gpu-config-profiles\": {{\n\
         \"ok\": {{\"profiles\": [{{\"computePartition\": \"SPX\", \"memoryPartition\": \"NPS1\", \"numGPUsAssigned\": 1}}]}},\n\
         \"p\": {{\"profiles\": [\n{entry}\n]}}}}}}"
    )
}

fn memory_given(error: &AssignError) -> Option<&str> {
    match error.faults.as_slice() {
        [ProfileFault::Memory { entry: 0, given }] => given.given(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn nps8_nps3_and_nps6_are_refused_when_selected_citing_dcms_valid_memory_partitions() {
    for mode in ["NPS8", "NPS3", "NPS6"] {
        let document = DcmDocument::from_text(&beside_a_valid_one(&format!(
            r#"{{"computePartition": "CPX", "memoryPartition": "{mode}", "numGPUsAssigned": 1}}"#
        )))
        .unwrap();
        assert_eq!(
            document.profile("ok").unwrap().assign(1),
            Ok(vec![want(C::Spx, M::Nps1)])
        );
        let error = refused(&document, "p", 1);
        assert_eq!(memory_given(&error), Some(mode));
        assert_eq!(
            error.to_string(),
            format!(
                "the profile \"p\" (line 3): entry 0: the memory partition \"{mode}\" is none \
                 of DCM's ValidMemoryPartitions (NPS1, NPS2, NPS4)"
            )
        );
    }
}

#[test]
fn a_mode_is_taken_only_as_dcm_spells_it() {
    let document = DcmDocument::from_text(&beside_a_valid_one(
        r#"{"computePartition": "cpx", "memoryPartition": "NPS1", "numGPUsAssigned": 1}"#,
    ))
    .unwrap();
    let error = refused(&document, "p", 1);
    assert!(
        matches!(
            error.faults.as_slice(),
            [ProfileFault::Compute { entry: 0, given }] if given.given() == Some("cpx")
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .ends_with("none of DCM's ValidComputePartitions (SPX, CPX, DPX, QPX)"),
        "{error}"
    );
}

#[test]
fn a_member_left_out_or_null_reads_as_go_reads_it_and_is_judged_with_its_profile() {
    let document = DcmDocument::from_text(&beside_a_valid_one(
        r#"{"computePartition": null, "numGPUsAssigned": null}"#,
    ))
    .unwrap();
    let error = refused(&document, "p", 1);
    assert!(
        error.to_string().contains(
            "entry 0 has no compute partition, and DCM's ValidComputePartitions are SPX, CPX, \
             DPX, QPX"
        ),
        "{error}"
    );
    let faults = error.faults;
    assert!(
        matches!(
            faults.as_slice(),
            [
                ProfileFault::Count { assigned: 0, .. },
                ProfileFault::Compute { entry: 0, given: compute },
                ProfileFault::Memory { entry: 0, given: memory },
                ProfileFault::MissingGpus { entry: 0 },
            ] if compute.given().is_none() && memory.given().is_none()
        ),
        "{faults:?}"
    );
}

#[test]
fn an_unknown_member_of_a_profile_refuses_that_profile_when_selected_naming_it() {
    // DCM would ignore the misspelt member and count the entry as 0.
    let document = DcmDocument::from_text(&beside_a_valid_one(
        r#"{"computePartition": "CPX", "memoryPartition": "NPS1", "numGPUSassigned": 1}"#,
    ))
    .unwrap();
    assert!(document.profile("ok").unwrap().assign(1).is_ok());
    let faults = refused(&document, "p", 1).faults;
    let [count, missing, ProfileFault::Unknown(member)] = faults.as_slice() else {
        panic!("{faults:?}");
    };
    assert_eq!(
        (count, missing),
        (
            &ProfileFault::Count {
                assigned: 0,
                skipped: 0,
                host: 1
            },
            &ProfileFault::MissingGpus { entry: 0 }
        )
    );
    assert_eq!(
        (member.name.as_str(), member.at.to_string(), member.line),
        (
            "numGPUSassigned",
            "/gpu-config-profiles/p/profiles/0/numGPUSassigned".to_owned(),
            4
        )
    );
}

#[test]
fn skipped_ids_are_judged_by_dcms_rules_then_a_repeat_by_this_projects() {
    let document = DcmDocument::from_text(
        r#"{"gpu-config-profiles": {
"out": {"skippedGPUs": {"ids": [1, 2, 3]}, "profiles": [
  {"computePartition": "SPX", "memoryPartition": "NPS1", "numGPUsAssigned": 0}]},
"twice": {"skippedGPUs": {"ids": [1, 1]}, "profiles": [
  {"computePartition": "SPX", "memoryPartition": "NPS1", "numGPUsAssigned": 2}]}}}"#,
    )
    .unwrap();
    assert_eq!(
        refused(&document, "out", 2).faults,
        [
            ProfileFault::TooManySkipped {
                skipped: 3,
                host: 2
            },
            ProfileFault::SkippedOutOfRange { id: 2, host: 2 },
            ProfileFault::SkippedOutOfRange { id: 3, host: 2 },
            ProfileFault::Count {
                assigned: 0,
                skipped: 3,
                host: 2
            },
        ]
    );
    // DCM would take it (2 + 2 = 4) and leave one GPU as it is.
    assert_eq!(
        refused(&document, "twice", 4).faults,
        [ProfileFault::SkippedTwice { id: 1 }]
    );
}

fn unread(text: &str) -> (Option<usize>, String, String) {
    let error = DcmDocument::from_text(text).unwrap_err();
    (error.line, error.at.to_string(), error.message)
}

#[test]
fn what_dcms_reader_would_fail_on_refuses_the_document_naming_the_line_and_member() {
    // Go's encoding/json fails the whole file on a member of the wrong type, in any profile.
    let (line, at, message) = unread(&beside_a_valid_one(
        r#"{"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": "1"}"#,
    ));
    assert_eq!(
        (line, at.as_str()),
        (Some(4), "/gpu-config-profiles/p/profiles/0/numGPUsAssigned")
    );
    assert!(message.contains("whole number"), "{message}");

    let (line, at, _) = unread(&beside_a_valid_one(
        r#"{"computePartition": 4, "memoryPartition": "NPS4", "numGPUsAssigned": 1}"#,
    ));
    assert_eq!(
        (line, at.as_str()),
        (
            Some(4),
            "/gpu-config-profiles/p/profiles/0/computePartition"
        )
    );

    let (_, at, message) =
        unread(r#"{"gpu-config-profiles": {"p": {"skippedGPUs": {"ids": [-1]}, "profiles": []}}}"#);
    assert_eq!(at, "/gpu-config-profiles/p/skippedGPUs/ids/0");
    assert!(message.contains("from 0 to"), "{message}");

    let (line, _, _) = unread("{\"gpu-config-profiles\": {\n\"p\": [}");
    assert_eq!(line, Some(2));

    // Go would read a null ID as GPU 0: refused rather than guessed.
    let (_, at, _) = unread(
        r#"{"gpu-config-profiles": {"p": {"skippedGPUs": {"ids": [null]}, "profiles": []}}}"#,
    );
    assert_eq!(at, "/gpu-config-profiles/p/skippedGPUs/ids/0");
}

#[test]
fn what_is_not_dcms_shape_refuses_the_document() {
    let (_, _, message) = unread(r#"{"gpuClientSystemdServices": {"names": []}}"#);
    assert_eq!(message, "missing `gpu-config-profiles`");

    let (_, at, message) =
        unread(r#"{"gpu-config-profile": {}, "gpu-config-profiles": {"p": {}}}"#);
    assert_eq!(at, "/gpu-config-profile");
    assert!(message.starts_with("unexpected member"), "{message}");

    // Go would keep the last; two readers of the file would not agree.
    let (line, _, message) = unread("{\"gpu-config-profiles\": {\"p\": {},\n\"p\": {}}}");
    assert_eq!(
        (line, message.as_str()),
        (Some(2), "duplicated key in mapping")
    );

    let (_, at, message) = unread(r#"{"gpu-config-profiles": {"p": []}}"#);
    assert_eq!(
        (at.as_str(), message.as_str()),
        (
            "/gpu-config-profiles/p",
            "a profile must be a mapping, not a list"
        )
    );
}
