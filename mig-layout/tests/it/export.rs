//! What an export cannot say in a v1 document (mig-parted's or vgpu-device-manager's), as
//! typed warnings with their facts; what it writes reads back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{data, reply};
use gpu_host_probe::PciIdentity;
use gpu_partition_types::Reply;
use layout_model::VfsRead;
use mig_layout::vgpu::{VgpuExportWarning, export_vgpu};
use mig_layout::{ExportWarning, HostGpu, export};

fn gpu() -> HostGpu {
    HostGpu::new(
        0,
        "0000:3b:00.0".parse().unwrap(),
        PciIdentity::new(0x10de, 0x20b0, 0x030200),
    )
}

/// The carved A100 fixture, changed as `change` says, read back as a reply.
fn carved(change: impl FnOnce(&mut serde_json::Value)) -> Reply {
    let path = data("replies/a100-mig-on-carved.json");
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    change(&mut value);
    Reply::from_json(&serde_json::to_vec(&value).unwrap(), None).unwrap()
}

#[test]
fn an_unfilled_gpu_instance_is_a_typed_warning_with_its_instance_and_profile() {
    let reply = carved(|value| value["gpu_instances"][0]["compute_instances"] = [0; 0].into());
    let exported = export("here", &[(gpu(), reply)], 1);
    let [warning] = exported.warnings.as_slice() else {
        panic!("{:?}", exported.warnings);
    };
    assert!(
        matches!(
            warning,
            ExportWarning::Unfilled {
                gpu_instance_id: 1,
                ..
            }
        ),
        "{warning:?}"
    );
    let json = serde_json::to_value(warning).unwrap();
    assert_eq!(
        (
            json["kind"].as_str(),
            json["device"].as_str(),
            json["gpu_instance_id"].as_u64()
        ),
        (Some("unfilled"), Some("0000:3b:00.0"), Some(1))
    );
    assert_eq!(json["message"].as_str(), Some(warning.to_string().as_str()));
}

#[test]
fn a_pending_mode_change_is_exported_as_now_with_a_typed_warning() {
    let reply = carved(|value| value["mode"]["pending"] = "disabled".into());
    let exported = export("here", &[(gpu(), reply)], 1);
    assert_eq!(
        exported.warnings,
        [ExportWarning::PendingMode {
            gpu: gpu(),
            current: true,
            pending: false,
        }]
    );
}

#[test]
fn a_card_without_warnings_exports_none() {
    let exported = export("here", &[(gpu(), reply("a100-mig-on-carved"))], 1);
    assert!(exported.warnings.is_empty(), "{:?}", exported.warnings);
    let json = serde_json::to_value(&exported).unwrap();
    assert_eq!(json["document"]["version"], "v1");
}

#[test]
fn a_host_with_a_gpu_that_did_not_read_lists_the_others_rather_than_all() {
    let exported = export("here", &[(gpu(), reply("a100-mig-on-carved"))], 2);
    let json = mig_layout::to_json(&exported.document);
    assert_eq!(
        json["mig-configs"]["here"][0]["devices"],
        serde_json::json!([0])
    );
}

#[test]
fn a_label_with_a_character_yaml_admits_only_escaped_is_written_so_it_reads_back() {
    let text = "{\"version\": \"v1\", \"mig-configs\": {\"a\\u007fb\\u0085\": [{\"devices\": \"all\", \"mig-enabled\": false}]}}";
    let document = mig_layout::Document::from_text(text).unwrap();
    let yaml = mig_layout::to_yaml(&document);
    let again = mig_layout::Document::from_text(&yaml).unwrap();
    assert_eq!(
        again.labels().collect::<Vec<_>>(),
        ["a\u{7f}b\u{85}"],
        "{yaml}"
    );
}

/// The A100 fixture (MIG off, or carved) answering format 1.3 with one time-sliced type in its
/// catalogue: `A100-10C`, ID 471 (NVIDIA's vGPU user guide, A100 PCIe 40GB C-series types).
fn with_catalogue(name: &str) -> Reply {
    let path = data(&format!("replies/{name}.json"));
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    value["format"] = "1.3".into();
    value["vgpu_types"] = serde_json::json!([{
        "id": 471,
        "name": "NVIDIA A100-10C",
        "gpu_instance_profile_id": null,
        "framebuffer_mib": 10240,
        "max_instances": 4,
        "max_instances_per_gpu_instance": null
    }]);
    Reply::from_json(&serde_json::to_vec(&value).unwrap(), None).unwrap()
}

fn vfs(types: &[Option<u32>]) -> VfsRead {
    VfsRead::Read(
        (0u32..)
            .zip(types)
            .map(|(index, id)| {
                layout_model::VfFound::new(index, id.and_then(gpu_partition_types::VgpuTypeId::new))
            })
            .collect(),
    )
}

#[test]
fn a_gpu_s_vfs_are_exported_by_the_names_its_catalogue_gives() {
    let exported = export_vgpu(
        "here",
        &[(
            gpu(),
            with_catalogue("a100-mig-off"),
            vfs(&[Some(471), None, Some(471)]),
        )],
        1,
    );
    assert!(exported.warnings.is_empty(), "{:?}", exported.warnings);
    assert_eq!(
        exported.document.to_yaml(),
        "version: v1\nvgpu-configs:\n  \"here\":\n    - devices: all\n      vgpu-devices:\n        \"A100-10C\": 2\n"
    );
}

#[test]
fn a_gpu_without_vfs_or_with_a_type_its_catalogue_does_not_name_is_left_out_with_why() {
    let exported = export_vgpu(
        "here",
        &[
            (gpu(), with_catalogue("a100-mig-off"), vfs(&[])),
            (
                HostGpu::new(1, "0000:3c:00.0".parse().unwrap(), gpu().identity),
                with_catalogue("a100-mig-off"),
                vfs(&[Some(471), Some(999)]),
            ),
        ],
        2,
    );
    assert!(exported.document.configs.is_empty());
    let kinds: Vec<(&str, Option<u32>)> = exported
        .warnings
        .iter()
        .map(|warning| (warning.as_str(), warning.index()))
        .collect();
    assert_eq!(kinds, [("no_vfs", Some(0)), ("unnamed_type", Some(1))]);
    let json = serde_json::to_value(&exported.warnings[1]).unwrap();
    assert_eq!(
        (json["vf"].as_u64(), json["type_id"].as_u64()),
        (Some(1), Some(999))
    );
}

#[test]
fn time_sliced_vgpus_on_a_gpu_with_mig_on_are_exported_naming_what_applying_changes() {
    let exported = export_vgpu(
        "here",
        &[(
            gpu(),
            with_catalogue("a100-mig-on-carved"),
            vfs(&[Some(471)]),
        )],
        1,
    );
    let [VgpuExportWarning::MigDiffers { differences, .. }] = exported.warnings.as_slice() else {
        panic!("{:?}", exported.warnings);
    };
    assert!(!differences.is_empty());
    assert_eq!(exported.document.configs.len(), 1);
}

#[test]
fn a_declared_amd_gpu_is_left_out_of_a_declared_mig_layout_the_format_has_no_partitions_for() {
    use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
    use layout_model::amd::{AmdDeclared, AmdWant};
    use layout_model::{Board, Declaration, DeclaredGpu, NvidiaDeclared};
    let nvidia: gpu_partition_types::Bdf = "0000:3b:00.0".parse().unwrap();
    let amd: gpu_partition_types::Bdf = "0000:05:00.0".parse().unwrap();
    let declared = Declaration::new(
        "mixed",
        1,
        None,
        [
            (nvidia, NvidiaDeclared::disabled(Board::default()).into()),
            (
                amd,
                DeclaredGpu::Amd(AmdDeclared::new(
                    AmdWant::new(ComputePartition::Cpx, MemoryPartition::Nps4),
                    Vec::new(),
                )),
            ),
        ]
        .into_iter()
        .collect(),
    );
    let exported = mig_layout::export_declared(&declared);
    let yaml = mig_layout::to_yaml(&exported.document);
    assert!(
        yaml.contains("0000:3b:00.0") && !yaml.contains("0000:05:00.0"),
        "{yaml}"
    );
    let kinds: Vec<&str> = exported
        .warnings
        .iter()
        .map(ExportWarning::as_str)
        .collect();
    assert_eq!(kinds, ["amd_declared"]);
    assert_eq!(exported.warnings[0].device(), amd);
}
