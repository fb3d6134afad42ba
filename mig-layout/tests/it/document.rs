//! The layout reader over the published mig-parted files, and its rules, each fault named by
//! line and member.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::document;
use layout_model::ProfileKey;
use mig_layout::{DeviceId, DeviceRef, Devices, Document, to_yaml};

fn name(text: &str) -> ProfileKey {
    ProfileKey::Name(text.to_owned())
}

#[test]
fn the_readme_example_reads_with_every_label_and_the_custom_per_index_list() {
    let doc = document("mig-parted-examples-config.yaml");
    let labels: Vec<&str> = doc.labels().collect();
    assert_eq!(
        labels,
        [
            "all-disabled",
            "all-enabled",
            "all-1g.5gb",
            "all-1g.5gb.me",
            "all-1g.10gb",
            "all-2g.10gb",
            "all-3g.20gb",
            "all-balanced",
            "custom-config"
        ]
    );
    let custom = doc.label("custom-config").unwrap();
    assert_eq!(custom.len(), 5);
    assert_eq!(
        custom[0].devices,
        Devices::Listed(vec![
            DeviceRef::Index(0),
            DeviceRef::Index(1),
            DeviceRef::Index(2),
            DeviceRef::Index(3)
        ])
    );
    assert!(!custom[0].mig_enabled);
    assert_eq!(
        custom[4].mig_devices,
        vec![
            (name("1g.5gb"), 2),
            (name("2g.10gb"), 1),
            (name("3g.20gb"), 1)
        ]
    );
    let enabled = doc.label("all-enabled").unwrap();
    assert!(enabled[0].mig_enabled && enabled[0].mig_devices.is_empty());
}

#[test]
fn the_operators_default_config_reads_device_filters_as_a_list_and_as_a_string() {
    let doc = document("gpu-operator-default-mig-parted-config.yaml");
    let balanced = doc.label("all-balanced").unwrap();
    assert_eq!(balanced.len(), 4);
    assert_eq!(
        balanced[0].device_filter,
        vec![
            DeviceId {
                device: 0x20b0,
                vendor: 0x10de,
                subsystem: None
            },
            DeviceId {
                device: 0x20b1,
                vendor: 0x10de,
                subsystem: None
            },
            DeviceId {
                device: 0x20f1,
                vendor: 0x10de,
                subsystem: None
            },
        ]
    );
    assert_eq!(balanced[2].device_filter.len(), 1);
    assert_eq!(balanced[2].device_filter[0].device, 0x20b7);
    assert_eq!(doc.labels().count(), 17);
}

#[test]
fn the_dgx_station_config_reads_with_its_comments_and_empty_mig_devices_when_off() {
    let doc = document("mig-parted-dgx-station-80gb-config.yaml");
    let k8s = doc.label("balanced-k8s-dgx-station-80").unwrap();
    assert_eq!(k8s.len(), 5);
    assert_eq!(k8s[4].devices, Devices::Listed(vec![DeviceRef::Index(3)]));
    assert_eq!(k8s[4].device_filter[0].device, 0x1fb0);
    assert!(!k8s[0].mig_enabled && k8s[0].mig_devices.is_empty());
}

#[test]
fn the_operators_h100_entries_read_with_their_filters() {
    let doc = document("gpu-operator-h100-excerpt.yaml");
    let balanced = doc.label("all-balanced").unwrap();
    let h100 = &balanced[1];
    assert_eq!(h100.device_filter[0].to_string(), "0x233010DE");
    assert_eq!(
        h100.mig_devices,
        vec![
            (name("1g.10gb"), 2),
            (name("2g.20gb"), 1),
            (name("3g.40gb"), 1)
        ]
    );
}

#[test]
fn the_published_copy_with_a_misindented_label_is_refused_naming_its_line() {
    let text = std::fs::read_to_string(common::data(
        "mig-parted/daocloud-custom-mig-parted-config.yaml",
    ))
    .unwrap();
    let error = Document::from_text(&text).unwrap_err();
    assert_eq!(error.line, Some(9), "{error}");
}

#[test]
fn the_same_document_in_json_reads_equal_to_the_yaml() {
    let yaml = document("mig-parted-examples-config.yaml");
    let json = document("mig-parted-examples-config.json");
    // What a spec says, without where it was.
    type Said = (Devices, bool, Vec<(ProfileKey, u32)>);
    let strip = |doc: &Document| -> Vec<(String, Vec<Said>)> {
        doc.configs
            .iter()
            .map(|(label, specs)| {
                (
                    label.clone(),
                    specs
                        .iter()
                        .map(|s| (s.devices.clone(), s.mig_enabled, s.mig_devices.clone()))
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(strip(&yaml), strip(&json));
    // JSON faults are named by line too.
    let error = Document::from_text("{\"version\": \"v1\",\n \"mig-configs\": {\"a\": [{\"devices\": \"all\",\n  \"mig-enabled\": \"yes\"}]}}").unwrap_err();
    assert_eq!(error.line, Some(3));
    assert_eq!(error.at.to_string(), "/mig-configs/a/0/mig-enabled");
}

#[test]
fn a_written_document_reads_back_equal() {
    for file in [
        "mig-parted-examples-config.yaml",
        "gpu-operator-default-mig-parted-config.yaml",
        "mig-parted-dgx-station-80gb-config.yaml",
    ] {
        let doc = document(file);
        let again = Document::from_text(&to_yaml(&doc)).unwrap();
        assert_eq!(again.configs.len(), doc.configs.len(), "{file}");
        for ((label, specs), (label_again, specs_again)) in doc.configs.iter().zip(&again.configs) {
            assert_eq!(label, label_again);
            for (spec, spec_again) in specs.iter().zip(specs_again) {
                assert_eq!(spec.devices, spec_again.devices, "{file} {label}");
                assert_eq!(spec.device_filter, spec_again.device_filter);
                assert_eq!(spec.mig_enabled, spec_again.mig_enabled);
                assert_eq!(spec.mig_devices, spec_again.mig_devices);
            }
        }
    }
}

#[test]
fn the_extension_reads_pci_addresses_beside_indices_and_profile_ids_as_keys() {
    let doc = Document::from_text(
        "version: v1\nmig-configs:\n  mixed:\n    - devices: [0, \"0000:3b:00.0\"]\n      mig-enabled: true\n      mig-devices:\n        19: 3\n        \"1g.10gb+me\": 1\n",
    )
    .unwrap();
    let spec = &doc.label("mixed").unwrap()[0];
    assert_eq!(
        spec.devices,
        Devices::Listed(vec![
            DeviceRef::Index(0),
            DeviceRef::Address("0000:3b:00.0".parse().unwrap())
        ])
    );
    assert_eq!(
        spec.mig_devices,
        vec![(ProfileKey::Id(19), 3), (name("1g.10gb+me"), 1)]
    );
}

/// Each rule broken once: the message, with its line and member.
#[test]
fn every_rule_broken_gives_its_line_member_and_why() {
    let base = |spec: &str| format!("version: v1\nmig-configs:\n  l:\n    - {spec}\n");
    let cases: Vec<(&str, String)> = vec![
        ("empty", String::new()),
        (
            "no version",
            "mig-configs:\n  l:\n    - devices: all\n      mig-enabled: false\n".to_owned(),
        ),
        ("version v2", "version: v2\nmig-configs: {}\n".to_owned()),
        ("version as a number", "version: 1\n".to_owned()),
        (
            "an unknown top member",
            "version: v1\nmig-config: {}\n".to_owned(),
        ),
        ("no label", "version: v1\nmig-configs: {}\n".to_owned()),
        (
            "a label with no entry",
            "version: v1\nmig-configs:\n  l: []\n".to_owned(),
        ),
        (
            "a label that is no list",
            "version: v1\nmig-configs:\n  l: {devices: all}\n".to_owned(),
        ),
        ("no devices", base("mig-enabled: false")),
        ("no mig-enabled", base("devices: all")),
        (
            "mig-enabled yes",
            base("devices: all\n      mig-enabled: yes"),
        ),
        (
            "devices some",
            base("devices: some\n      mig-enabled: false"),
        ),
        (
            "a negative index",
            base("devices: [-1]\n      mig-enabled: false"),
        ),
        (
            "a bad address",
            base("devices: [\"0000:zz:00.0\"]\n      mig-enabled: false"),
        ),
        (
            "on without mig-devices",
            base("devices: all\n      mig-enabled: true"),
        ),
        (
            "off with instances",
            base("devices: all\n      mig-enabled: false\n      mig-devices: {\"1g.5gb\": 1}"),
        ),
        (
            "a negative count",
            base("devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": -1}"),
        ),
        (
            "a fractional count",
            base("devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.5gb\": 1.5}"),
        ),
        (
            "a compute instance profile",
            base("devices: all\n      mig-enabled: true\n      mig-devices: {\"1c.3g.40gb\": 6}"),
        ),
        (
            "a profile named twice",
            base("devices: all\n      mig-enabled: true\n      mig-devices: {19: 1, \"19\": 2}"),
        ),
        (
            "a bad device filter",
            base("device-filter: H100\n      devices: all\n      mig-enabled: false"),
        ),
        (
            "an unknown entry member",
            base("devices: all\n      mig-enabled: false\n      mig-devcies: {}"),
        ),
        (
            "a duplicate key",
            base("devices: all\n      devices: all\n      mig-enabled: false"),
        ),
        (
            "two documents",
            "version: v1\n---\nversion: v1\n".to_owned(),
        ),
        (
            "a syntax error",
            "version: v1\nmig-configs:\n  l:\n    - devices: [0, 1\n".to_owned(),
        ),
        (
            "nesting too deep",
            format!("version: v1\nx: {}{}\n", "[".repeat(40), "]".repeat(40)),
        ),
    ];
    let mut lines = String::new();
    for (what, text) in &cases {
        let error = Document::from_text(text).expect_err(what);
        assert!(error.line.is_some(), "{what}: {error}");
        lines.push_str(&format!("{what}: {error}\n"));
    }
    insta::assert_snapshot!(lines);
}

#[test]
fn a_document_over_a_mebibyte_is_refused_before_it_is_parsed() {
    let text = format!("version: v1\n#{}\n", "x".repeat(mig_layout::MAX_DOCUMENT));
    let error = Document::from_text(&text).unwrap_err();
    assert_eq!(error.line, None);
    assert!(error.to_string().contains("bytes"), "{error}");
}

#[test]
fn a_character_yaml_does_not_admit_is_refused_naming_its_line_and_column() {
    // The fuzz target's find: a profile key of raw 0x1C bytes.
    let text = format!(
        "version: v1\nmig-configs:\n  l:\n    - devices: all\n      mig-enabled: true\n      \
         mig-devices:\n        \"{}\": 1\n",
        "\u{1c}".repeat(200)
    );
    let refused = Document::from_text(&text).unwrap_err();
    assert_eq!((refused.line, refused.column), (Some(7), Some(10)));
    assert!(refused.to_string().contains("U+001C"), "{refused}");
}

#[test]
fn a_profile_named_by_escaped_control_characters_is_not_a_profile_name() {
    let text = "version: v1\nmig-configs:\n  l:\n    - devices: all\n      mig-enabled: true\n      \
                mig-devices:\n        \"\\u001c\": 1\n";
    let refused = Document::from_text(text).unwrap_err();
    assert!(
        refused.to_string().contains("is not a profile name"),
        "{refused}"
    );
}

#[test]
fn a_key_too_long_to_be_implicit_is_written_explicitly_and_reads_back() {
    let label = "l".repeat(1100);
    let profile = format!("1g.{}gb", "9".repeat(1100));
    let text = format!(
        "version: v1\nmig-configs:\n  ? \"{label}\"\n  :\n    - devices: all\n      mig-enabled: \
         true\n      mig-devices:\n        ? \"{profile}\"\n        : 2\n"
    );
    let document = Document::from_text(&text).unwrap();
    let written = to_yaml(&document);
    assert!(written.contains(&format!("  ? \"{label}\"\n")), "{written}");
    let again = Document::from_text(&written).unwrap();
    assert_eq!(again.configs, document.configs);
    assert_eq!(
        again.label(&label).unwrap()[0].mig_devices,
        [(name(&profile), 2)]
    );
}
