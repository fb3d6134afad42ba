//! The scenarios: every shipped one reads strictly; a member the fake does not know, or a
//! state the driver cannot hold, is refused with the member's path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::{Placement, Refusal, Scenario, ScenarioError, scenarios};

#[test]
fn every_shipped_scenario_reads() {
    for (name, text) in scenarios::ALL.iter().chain(scenarios::PARTS.iter()) {
        Scenario::from_json(text.as_bytes()).unwrap_or_else(|error| panic!("{name}: {error}"));
    }
}

#[test]
fn every_scenario_of_a_real_part_gives_its_memory_with_a_source() {
    for (name, text) in scenarios::ALL.iter().chain(scenarios::PARTS.iter()) {
        if name.starts_with("synthetic-") {
            continue;
        }
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        for device in value["devices"].as_array().unwrap() {
            assert!(
                device["memory_total_mib"]
                    .as_u64()
                    .is_some_and(|mib| mib > 0),
                "{name}: {} gives no memory_total_mib (nvmlDeviceGetMemoryInfo would answer NOT_SUPPORTED, as no real card does)",
                device["name"]
            );
        }
        let sources = value["sources"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for device in value["devices"].as_array().unwrap() {
            // The model, as a source names it: the driver's name without its vendor.
            let model = device["name"]
                .as_str()
                .unwrap()
                .trim_start_matches("NVIDIA ");
            assert!(
                sources.iter().any(|source| source
                    .as_str()
                    .is_some_and(|s| s.starts_with("memory_total_mib: ") && s.contains(model))),
                "{name}: no memory_total_mib source names {model}"
            );
        }
    }
}

fn refused(edit: impl FnOnce(&mut serde_json::Value)) -> ScenarioError {
    let mut value: serde_json::Value = serde_json::from_str(scenarios::A100_MIG_ON_CARVED).unwrap();
    edit(&mut value);
    Scenario::from_json(value.to_string().as_bytes()).unwrap_err()
}

/// The member and what is wrong with it, of a state the driver cannot hold.
fn refusal(error: ScenarioError) -> (String, Refusal) {
    match error {
        ScenarioError::Refused { at, why } => (at, why),
        other => panic!("not a refusal: {other:?}"),
    }
}

#[test]
fn a_member_the_fake_does_not_read_is_refused_with_its_path() {
    let error = refused(|v| v["devices"][0]["gpu_instance_profiles"][0]["remaining"] = 7.into());
    let ScenarioError::Shape { at, source } = &error else {
        panic!("not a fault of shape: {error:?}");
    };
    assert!(
        at.starts_with("devices[0].gpu_instance_profiles[0]"),
        "{at}"
    );
    assert!(source.to_string().contains("remaining"), "{source}");
}

#[test]
fn a_gpu_instance_off_its_profiles_placements_is_refused_with_its_path() {
    let (at, why) = refusal(refused(|v| {
        v["devices"][0]["gpu_instances"][0]["placement"]["start"] = 1.into()
    }));
    assert_eq!(at, "devices[0].gpu_instances[0].placement");
    assert!(
        matches!(
            why,
            Refusal::OffPlacements {
                placement: Placement { start: 1, .. },
                ..
            }
        ),
        "{why:?}"
    );
}

#[test]
fn a_compute_instance_on_a_profile_its_gpu_instance_does_not_offer_is_refused() {
    let (at, why) = refusal(refused(|v| {
        v["devices"][0]["gpu_instances"][0]["compute_instances"][0]["profile_id"] = 4.into();
    }));
    assert_eq!(
        at,
        "devices[0].gpu_instances[0].compute_instances[0].profile_id"
    );
    assert!(
        matches!(
            why,
            Refusal::ComputeProfileNotOffered {
                compute_profile: 4,
                ..
            }
        ),
        "{why:?}"
    );
}

#[test]
fn overlapping_gpu_instances_are_refused() {
    let (at, why) = refusal(refused(|v| {
        let first = v["devices"][0]["gpu_instances"][0].clone();
        let mut twin = first;
        twin["id"] = 99.into();
        v["devices"][0]["gpu_instances"]
            .as_array_mut()
            .unwrap()
            .push(twin);
    }));
    assert!(at.ends_with("].placement"), "{at}");
    assert!(matches!(why, Refusal::OverGpuInstance(_)), "{why:?}");
}

#[test]
fn a_driver_of_a_branch_whose_nvml_h_the_fake_has_not_read_is_refused() {
    let (at, why) = refusal(refused(|v| v["driver_version"] = "565.57.01".into()));
    assert_eq!(at, "driver_version");
    assert_eq!(why, Refusal::UnknownDriverBranch("565.57.01".to_owned()));
}

#[test]
fn a_profile_past_the_end_of_the_drivers_profile_enum_is_refused() {
    // R470's nvml.h ends the enum at 8: the A100's 1g.10gb (index 9) came with R525.
    let (at, why) = refusal(refused(|v| v["driver_version"] = "470.256.02".into()));
    assert!(
        at.starts_with("devices[0].gpu_instance_profiles[") && at.ends_with("].index"),
        "{at}"
    );
    assert_eq!(why, Refusal::PastProfileEnum { index: 9, count: 8 });
}

#[test]
fn every_part_gives_its_pci_device_id_with_nvidias_vendor_id() {
    for (name, text) in scenarios::PARTS {
        let scenario = Scenario::from_json(text.as_bytes()).unwrap();
        let id = scenario.devices[0].pci_device_id.unwrap_or_default();
        assert_eq!(id & 0xffff, 0x10de, "{name}: {id:#x}");
        assert_ne!(id >> 16, 0, "{name}: {id:#x}");
        assert!(
            scenario
                .sources
                .iter()
                .any(|s| s.starts_with("pci_device_id: ")
                    && s.to_ascii_lowercase().contains(&format!("{id:#010x}"))),
            "{name}: no pci_device_id source names {id:#010X}"
        );
    }
}
