//! vgpu-device-manager's config files read as they are, with that project's rules; vGPU type
//! names by its grammar; the MIG layout a spec of MIG-backed types needs, sized from the
//! catalogue.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::{Lenient, Nullable, VgpuType};
use layout_model::ProfileKey;
use mig_layout::Devices;
use mig_layout::vgpu::{
    DeriveError, MigAttribute, Series, VgpuDocument, VgpuKind, VgpuSpec, VgpuTypeName,
    per_gpu_instance_in,
};
use proptest::prelude::*;

fn example() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../host-sync/tests/samples/vgpu/vgpu-device-manager-config-example-excerpt.yaml");
    std::fs::read_to_string(path).unwrap()
}

fn name(text: &str) -> VgpuTypeName {
    text.parse().unwrap()
}

#[test]
fn vgpu_device_manager_s_own_example_config_reads_whole() {
    let document = VgpuDocument::from_text(&example()).unwrap();
    let spec = &document.config("A100-1-5C").expect("the A100-1-5C config")[0];
    assert_eq!(spec.devices, Devices::All);
    assert_eq!(spec.vgpu_devices, [(name("A100-1-5C"), 7)]);
    assert!(document.config("A30-2-12CME").is_some());
    assert!(document.configs.len() > 20, "{}", document.configs.len());
}

#[test]
fn type_names_read_by_vgpu_device_manager_s_grammar() {
    for (text, gpu, kind, series) in [
        (
            "A100-1-5C",
            "A100",
            VgpuKind::MigBacked {
                slices: 1,
                gb: 5,
                attribute: None,
            },
            Series::C,
        ),
        ("A100-4C", "A100", VgpuKind::TimeSliced { gb: 4 }, Series::C),
        (
            "A30-2-12CME",
            "A30",
            VgpuKind::MigBacked {
                slices: 2,
                gb: 12,
                attribute: Some(MigAttribute::Me),
            },
            Series::C,
        ),
        (
            "A100-1-5CNOME",
            "A100",
            VgpuKind::MigBacked {
                slices: 1,
                gb: 5,
                attribute: Some(MigAttribute::NoMe),
            },
            Series::C,
        ),
        (
            "DC-1-24QGFX",
            "DC",
            VgpuKind::MigBacked {
                slices: 1,
                gb: 24,
                attribute: Some(MigAttribute::Gfx),
            },
            Series::Q,
        ),
        (
            "RTX6000-Ada-2Q",
            "RTX6000-Ada",
            VgpuKind::TimeSliced { gb: 2 },
            Series::Q,
        ),
        ("M60-0Q", "M60", VgpuKind::TimeSliced { gb: 0 }, Series::Q),
    ] {
        let read = name(text);
        assert_eq!(
            (read.gpu.as_str(), read.kind, read.series),
            (gpu, kind, series),
            "{text}"
        );
        assert_eq!(read.to_string(), text);
    }
}

#[test]
fn a_name_outside_the_grammar_is_refused() {
    for text in [
        "",
        "A100",
        "A100-5c",
        "A100-1-5Cme",
        "A16-8E",
        " A100-4C",
        "A100-4C ",
        "A100-1-5Cab",
        "A100-01-5C",
        "A100-1-05C",
        "a100-4C",
        "A100-1-5CMEME",
    ] {
        assert!(text.parse::<VgpuTypeName>().is_err(), "{text:?}");
    }
}

#[test]
fn a_mig_backed_type_names_its_profile_with_the_attribute_mig_writes() {
    for (text, profile) in [
        ("A100-1-5C", "1g.5gb"),
        ("A100-1-5CME", "1g.5gb+me"),
        ("A100-1-5CNOME", "1g.5gb-me"),
        ("A100-7-40CMEALL", "7g.40gb+me.all"),
        ("DC-1-24QGFX", "1g.24gb+gfx"),
    ] {
        assert_eq!(name(text).mig_profile().as_deref(), Some(profile), "{text}");
    }
    assert_eq!(name("A100-4C").mig_profile(), None);
}

#[test]
fn the_short_name_of_a_driver_s_full_name_is_its_last_word() {
    assert_eq!(
        VgpuTypeName::short_name("NVIDIA A100-1-5C"),
        Some("A100-1-5C")
    );
    assert_eq!(
        VgpuTypeName::short_name("GRID A100-1-5C"),
        Some("A100-1-5C")
    );
    assert_eq!(
        VgpuTypeName::short_name("NVIDIA RTX Pro 6000 Blackwell DC-48C"),
        Some("DC-48C")
    );
    assert_eq!(VgpuTypeName::short_name("  "), None);
}

/// The reader's message and member for a document.
fn refused(text: &str) -> (Option<usize>, String, String) {
    let error = VgpuDocument::from_text(text).unwrap_err();
    (error.line, error.at.to_string(), error.message)
}

#[test]
fn each_rule_of_the_format_refuses_naming_the_line_and_member() {
    let cases: [(&str, &str, &str); 8] = [
        ("vgpu-configs: {}\n", "", "missing `version`"),
        (
            "version: v2\nvgpu-configs: {a: [{devices: all, vgpu-devices: {}}]}\n",
            "/version",
            "unknown version",
        ),
        ("version: v1\nbogus: 1\n", "/bogus", "unexpected member"),
        (
            "version: v1\nvgpu-configs: {}\n",
            "/vgpu-configs",
            "at least one config",
        ),
        (
            "version: v1\nvgpu-configs:\n  a: []\n",
            "/vgpu-configs/a",
            "at least one entry",
        ),
        (
            "version: v1\nvgpu-configs:\n  a:\n    - devices: all\n",
            "/vgpu-configs/a/0",
            "missing required member `vgpu-devices`",
        ),
        (
            "version: v1\nvgpu-configs:\n  a:\n    - devices: all\n      vgpu-devices:\n        A100-1-5C: 0\n",
            "/vgpu-configs/a/0/vgpu-devices/A100-1-5C",
            "is 0",
        ),
        (
            "version: v1\nvgpu-configs:\n  a:\n    - devices: all\n      vgpu-devices:\n        A100-4C: 2\n        A100-1-5C: 1\n",
            "/vgpu-configs/a/0",
            "mixes time-sliced and MIG-backed",
        ),
    ];
    for (text, at, said) in cases {
        let (line, member, message) = refused(text);
        assert!(line.is_some(), "{text:?}");
        assert_eq!(member, at, "{text:?}: {message}");
        assert!(message.contains(said), "{text:?}: {message}");
    }
}

#[test]
fn a_type_name_that_does_not_read_is_refused_at_its_key() {
    let (line, at, message) = refused(
        "version: v1\nvgpu-configs:\n  a:\n    - devices: all\n      vgpu-devices:\n        A100-5c: 1\n",
    );
    assert_eq!(
        (line, at.as_str()),
        (Some(6), "/vgpu-configs/a/0/vgpu-devices/A100-5c")
    );
    assert!(message.contains("series"), "{message}");
}

#[test]
fn no_vgpu_is_an_empty_mapping_and_leaves_mig_off() {
    let document = VgpuDocument::from_text(
        "version: v1\nvgpu-configs:\n  none:\n    - devices: all\n      vgpu-devices: {}\n",
    )
    .unwrap();
    let spec = &document.config("none").unwrap()[0];
    assert!(spec.vgpu_devices.is_empty());
    let layout = spec.mig_layout(|_| None).unwrap();
    assert!(!layout.mig_enabled);
}

fn mixed() -> VgpuSpec {
    let document = VgpuDocument::from_text(
        "version: v1\nvgpu-configs:\n  mixed:\n    - devices: [0, \"0000:3b:00.0\"]\n      device-filter: \"0x20B010DE\"\n      vgpu-devices:\n        A100-1-5C: 3\n        A100-2-10C: 1\n        A100-1-5CME: 1\n",
    )
    .unwrap();
    document.config("mixed").unwrap()[0].clone()
}

/// The mixed spec's MIG layout at one vGPU per GPU instance.
fn one_instance_per_vgpu() -> [(ProfileKey, u32); 3] {
    [
        (ProfileKey::Name("1g.5gb".to_owned()), 3),
        (ProfileKey::Name("2g.10gb".to_owned()), 1),
        (ProfileKey::Name("1g.5gb+me".to_owned()), 1),
    ]
}

#[test]
fn one_gpu_instance_per_vgpu_where_the_catalogue_says_one_fits() {
    let spec = mixed();
    let layout = spec.mig_layout(|_| Some(1)).unwrap();
    assert!(layout.mig_enabled);
    assert_eq!(layout.device_filter, spec.device_filter);
    assert_eq!(layout.devices, spec.devices);
    assert_eq!(layout.mig_devices, one_instance_per_vgpu());
}

#[test]
fn a_gpu_instance_holds_as_many_vgpus_as_the_catalogue_says() {
    let spec = mixed();
    // Say two A100-1-5C fit one GPU instance: three need two instances, not three.
    let layout = spec
        .mig_layout(|name| {
            Some(if name.to_string() == "A100-1-5C" {
                2
            } else {
                1
            })
        })
        .unwrap();
    assert_eq!(
        layout.mig_devices[0],
        (ProfileKey::Name("1g.5gb".to_owned()), 2)
    );
}

#[test]
fn a_type_the_catalogue_does_not_size_is_refused_naming_it() {
    let spec = mixed();
    let error = spec
        .mig_layout(|name| (name.to_string() != "A100-2-10C").then_some(1))
        .unwrap_err();
    let DeriveError::NotInCatalogue { name, at } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        (name.to_string().as_str(), at.to_string().as_str()),
        ("A100-2-10C", "/vgpu-configs/mixed/0")
    );
}

/// A catalogue entry as the helper reads it; `per` left out when `None` (the driver did not
/// give it).
fn listed(id: u32, full_name: &str, per: Option<Nullable<u32>>) -> VgpuType {
    let mut kind = VgpuType::new(id);
    kind.name = Lenient::Read(full_name.to_owned());
    if let Some(per) = per {
        kind.max_instances_per_gpu_instance = Lenient::Read(per);
    }
    kind
}

#[test]
fn the_catalogue_sizes_a_type_by_its_short_name_and_never_guesses_a_count_it_does_not_give() {
    let catalogue = [
        listed(474, "NVIDIA A100-1-5C", Some(Nullable::Value(2))),
        listed(475, "NVIDIA A100-2-10C", None),
        listed(468, "NVIDIA A100-4C", Some(Nullable::Null)),
    ];
    let per = per_gpu_instance_in(&catalogue);
    assert_eq!(
        [
            per(&name("A100-1-5C")),
            per(&name("A100-2-10C")),
            per(&name("A100-4C")),
            per(&name("A100-7-40C")),
        ],
        [Some(2), None, None, None]
    );
    let error = mixed()
        .mig_layout(per_gpu_instance_in(&catalogue))
        .unwrap_err();
    assert!(
        matches!(&error, DeriveError::NotInCatalogue { name, .. } if name.to_string() == "A100-2-10C"),
        "{error:?}"
    );
}

/// The published A100 PCIe 40GB types the mixed spec names, each said to fit one per GPU
/// instance (a count NVIDIA does not publish: given here as a driver would give it).
fn a100_catalogue() -> Vec<VgpuType> {
    [
        (474, "NVIDIA A100-1-5C", 7),
        (475, "NVIDIA A100-2-10C", 3),
        (706, "NVIDIA A100-1-5CME", 1),
    ]
    .into_iter()
    .map(|(id, full_name, max)| {
        let mut kind = listed(id, full_name, Some(Nullable::Value(1)));
        kind.max_instances = Lenient::Read(max);
        kind
    })
    .collect()
}

#[test]
fn a_spec_the_card_can_hold_is_sized_from_its_catalogue() {
    let layout = mixed().sized_by(&a100_catalogue()).unwrap();
    assert_eq!(layout.mig_devices, one_instance_per_vgpu());
}

#[test]
fn a_type_the_card_does_not_list_is_refused_before_any_sizing() {
    let catalogue: Vec<VgpuType> = a100_catalogue().into_iter().skip(1).collect();
    let error = mixed().sized_by(&catalogue).unwrap_err();
    assert_eq!(
        error.to_string(),
        "/vgpu-configs/mixed/0: the card supports no A100-1-5C vGPU (its catalogue lists no type of that name)"
    );
}

#[test]
fn more_vgpus_of_a_type_than_the_card_holds_are_refused_naming_both_counts() {
    let mut catalogue = a100_catalogue();
    catalogue[0].max_instances = Lenient::Read(2);
    let error = mixed().sized_by(&catalogue).unwrap_err();
    let DeriveError::MoreThanTheCardHolds {
        name: refused,
        count,
        max,
        at,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(
        (refused, *count, *max, at.to_string().as_str()),
        (&name("A100-1-5C"), 3, 2, "/vgpu-configs/mixed/0")
    );
}

proptest! {
    /// Every MIG-backed name the grammar admits reads back as written, and its profile says
    /// its slices and memory.
    #[test]
    fn a_mig_backed_name_round_trips_and_names_its_profile(
        gpu in "[A-Z][A-Z0-9]{0,6}",
        slices in 1u8..=9,
        gb in 0u32..200,
        series in prop_oneof![Just("A"), Just("B"), Just("C"), Just("Q")],
        attribute in prop_oneof![Just(""), Just("ME"), Just("NOME"), Just("MEALL"), Just("GFX")],
    ) {
        let text = format!("{gpu}-{slices}-{gb}{series}{attribute}");
        let read: VgpuTypeName = text.parse().unwrap();
        prop_assert_eq!(read.to_string(), text);
        let profile = read.mig_profile().unwrap();
        let suffix = match attribute {
            "ME" => "+me",
            "NOME" => "-me",
            "MEALL" => "+me.all",
            "GFX" => "+gfx",
            _ => "",
        };
        prop_assert_eq!(profile, format!("{slices}g.{gb}gb{suffix}"));
    }

    /// The layout's instances are enough for every vGPU and no more than needed.
    #[test]
    fn the_derived_instances_hold_every_vgpu_and_no_more(count in 1u32..64, per in 1u32..8) {
        let text = format!("version: v1\nvgpu-configs:\n  a:\n    - devices: all\n      vgpu-devices:\n        A100-1-5C: {count}\n");
        let document = VgpuDocument::from_text(&text).unwrap();
        let layout = document.config("a").unwrap()[0].mig_layout(|_| Some(per)).unwrap();
        let instances = layout.mig_devices[0].1;
        prop_assert!(instances * per >= count);
        prop_assert!((instances - 1) * per < count);
    }
}

/// A spec of one kind of type (one spec mixes no time-sliced with MIG-backed), on all GPUs or
/// some by index or address.
fn vgpu_spec() -> impl Strategy<Value = VgpuSpec> {
    let devices = prop_oneof![
        Just(Devices::All),
        prop::collection::btree_set(
            prop_oneof![
                (0u32..8).prop_map(mig_layout::DeviceRef::Index),
                (0u8..4).prop_map(|bus| mig_layout::DeviceRef::Address(
                    format!("0000:{bus:02x}:00.0").parse().unwrap()
                )),
            ],
            0..4
        )
        .prop_map(|set| Devices::Listed(set.into_iter().collect())),
    ];
    let series = prop_oneof![Just("A"), Just("B"), Just("C"), Just("Q")];
    let time_sliced = ("[A-Z][A-Z0-9]{0,6}", 0u32..100, series.clone())
        .prop_map(|(gpu, gb, series)| format!("{gpu}-{gb}{series}"));
    let attribute = prop_oneof![
        Just(""),
        Just("ME"),
        Just("NOME"),
        Just("MEALL"),
        Just("GFX")
    ];
    let mig_backed = ("[A-Z][A-Z0-9]{0,6}", 1u8..=9, 0u32..200, series, attribute).prop_map(
        |(gpu, slices, gb, series, attribute)| format!("{gpu}-{slices}-{gb}{series}{attribute}"),
    );
    let names = prop_oneof![
        prop::collection::vec(time_sliced, 0..4),
        prop::collection::vec(mig_backed, 0..4)
    ];
    (devices, names, prop::collection::vec(1u32..64, 4)).prop_map(|(devices, names, counts)| {
        let mut listed: Vec<(VgpuTypeName, u32)> = Vec::new();
        for (text, count) in names.iter().zip(counts) {
            let name = name(text);
            if !listed.iter().any(|(known, _)| *known == name) {
                listed.push((name, count));
            }
        }
        VgpuSpec::new(devices, listed)
    })
}

/// The same configs, specs, devices and types (compared as a set where `by_name`: JSON's
/// members are ordered by name).
fn same_configs(a: &VgpuDocument, b: &VgpuDocument, by_name: bool) -> bool {
    let types = |spec: &VgpuSpec| {
        let mut types: Vec<(String, u32)> = spec
            .vgpu_devices
            .iter()
            .map(|(name, count)| (name.to_string(), *count))
            .collect();
        if by_name {
            types.sort();
        }
        types
    };
    a.configs.len() == b.configs.len()
        && a.configs
            .iter()
            .zip(&b.configs)
            .all(|((na, sa), (nb, sb))| {
                na == nb
                    && sa.len() == sb.len()
                    && sa.iter().zip(sb).all(|(x, y)| {
                        x.devices == y.devices
                            && types(x) == types(y)
                            && x.device_filter == y.device_filter
                    })
            })
}

proptest! {
    /// What `vgpu export` writes, YAML or JSON, reads back as the same configs, whatever the
    /// config names (any characters) and types.
    #[test]
    fn a_written_vgpu_document_reads_back_equal_as_yaml_and_as_json(
        configs in prop::collection::vec(
            (prop::collection::vec(any::<char>(), 1..40).prop_map(String::from_iter),
             prop::collection::vec(vgpu_spec(), 1..4)),
            1..4,
        ),
    ) {
        let mut named: Vec<(String, Vec<VgpuSpec>)> = Vec::new();
        for (config, specs) in configs {
            if !named.iter().any(|(known, _)| *known == config) {
                named.push((config, specs));
            }
        }
        let document = VgpuDocument::new(named);
        let yaml = document.to_yaml();
        let again = VgpuDocument::from_text(&yaml)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{yaml}")))?;
        prop_assert!(same_configs(&document, &again, false), "{}", yaml);
        let json = document.to_json().to_string();
        // The reader takes JSON as the YAML it also is, which admits no raw DEL or C1 control
        // (serde_json writes them raw): such a name is for the YAML.
        if json.chars().any(|c| matches!(c, '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}')) {
            return Ok(());
        }
        let again = VgpuDocument::from_text(&json)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{json}")))?;
        // JSON's members are ordered by name: configs and types are compared as sets (a VF
        // keeps the type it holds whatever the order, so an apply writes nothing either way).
        prop_assert_eq!(again.configs.len(), document.configs.len());
        for (config, _) in &document.configs {
            let one = |d: &VgpuDocument| {
                VgpuDocument::new(vec![(config.clone(), d.config(config).unwrap_or_default().to_vec())])
            };
            prop_assert!(same_configs(&one(&document), &one(&again), true), "{}", json);
        }
    }
}
