//! What an export cannot say in a v1 document, as typed warnings with their facts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{data, reply};
use gpu_host_probe::PciIdentity;
use gpu_partition_types::Reply;
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
    let exported = export("here", &[(gpu(), reply)]);
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
    let exported = export("here", &[(gpu(), reply)]);
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
    let exported = export("here", &[(gpu(), reply("a100-mig-on-carved"))]);
    assert!(exported.warnings.is_empty(), "{:?}", exported.warnings);
    let json = serde_json::to_value(&exported).unwrap();
    assert_eq!(json["document"]["version"], "v1");
}
