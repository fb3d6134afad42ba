//! What the partition tests apply and read: the two cards' addresses, the layouts (seven
//! 1g.5gb on GPU 0; an H100 balanced, changed, too many), an H100 applied `balanced`, and a
//! card's GPU instances and MIG mode as its state file says them.

use super::partition_host::PartitionHost;
use serde_json::Value;

pub const GPU0: &str = "0000:3b:00.0";
pub const GPU1: &str = "0000:3c:00.0";

pub const SEVEN_ON_GPU0: &str = "version: v1
mig-configs:
  gpu0-1g.5gb:
    - devices: [0]
      mig-enabled: true
      mig-devices:
        \"1g.5gb\": 7
";

pub fn instances(card: &Value) -> Vec<(u64, u64, u64)> {
    let mut found: Vec<(u64, u64, u64)> = card["gpu_instances"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|gi| {
                    (
                        gi["profile_id"].as_u64().unwrap(),
                        gi["placement"]["start"].as_u64().unwrap(),
                        gi["compute_instances"].as_array().unwrap().len() as u64,
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort_unstable();
    found
}

pub fn mig(card: &Value) -> (u64, u64) {
    (
        card["mig_mode"]["current"].as_u64().unwrap(),
        card["mig_mode"]["pending"].as_u64().unwrap(),
    )
}

pub const BALANCED: &str = "version: v1
mig-configs:
  balanced:
    - devices: all
      mig-enabled: true
      mig-devices:
        \"1g.10gb\": 2
        \"2g.20gb\": 1
        \"3g.40gb\": 1
  changed:
    - devices: all
      mig-enabled: true
      mig-devices:
        \"1g.10gb\": 2
        \"2g.20gb\": 1
        \"1g.20gb\": 2
  too-many:
    - devices: all
      mig-enabled: true
      mig-devices:
        \"1g.10gb\": 8
";

/// An H100 applied `balanced`, its calls forgotten.
pub fn balanced_h100() -> PartitionHost {
    let host = PartitionHost::one_h100();
    let (code, report) = host.apply(BALANCED, "balanced", &[]);
    assert_eq!(code, 0, "{report:#}");
    host.clear_calls();
    host
}
