//! Test cards: an A100-SXM4-40GB's reply (the profiles and placements of NVIDIA's MIG user
//! guide, as the fake NVML's A100 scenario gives them) built from a list of GPU instances.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::{Bdf, Placement, Reply};
use serde_json::{Value, json};

/// The card's address.
pub fn device() -> Bdf {
    "0000:3b:00.0".parse().unwrap()
}

/// A profile: ID, name, compute slices, how many the card holds, the placements' starts and
/// their size in memory slices.
pub type Profile = (u32, &'static str, u32, u32, &'static [u32], u32);

/// The profiles.
pub const PROFILES: [Profile; 5] = [
    (19, "1g.5gb", 1, 7, &[0, 1, 2, 3, 4, 5, 6], 1),
    (14, "2g.10gb", 2, 3, &[0, 2, 4], 2),
    (9, "3g.20gb", 3, 2, &[0, 4], 4),
    (5, "4g.20gb", 4, 1, &[0], 4),
    (0, "7g.40gb", 7, 1, &[0], 8),
];

/// The compute instance profile that fills a GPU instance of this many slices (NVML's IDs).
pub fn filling(slices: u32) -> u32 {
    match slices {
        1 => 0,
        2 => 1,
        3 => 2,
        4 => 3,
        _ => 4,
    }
}

/// A GPU instance on the test card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gi {
    pub id: u32,
    pub profile: u32,
    pub start: u32,
    /// Its compute instances: `None` gives the filling one.
    pub compute: Option<Vec<(u32, u32, Placement)>>,
}

impl Gi {
    pub fn new(id: u32, profile: u32, start: u32) -> Self {
        Self {
            id,
            profile,
            start,
            compute: None,
        }
    }

    pub fn size(&self) -> u32 {
        PROFILES
            .iter()
            .find(|p| p.0 == self.profile)
            .map_or(1, |p| p.5)
    }

    pub fn slices(&self) -> u32 {
        PROFILES
            .iter()
            .find(|p| p.0 == self.profile)
            .map_or(1, |p| p.2)
    }

    pub fn placement(&self) -> Placement {
        Placement::new(self.start, self.size())
    }
}

/// The test card's board.
#[derive(Debug, Clone)]
pub struct Board {
    pub name: &'static str,
    pub serial: Option<&'static str>,
    pub uuid: &'static str,
}

pub const BOARD: Board = Board {
    name: "NVIDIA A100-SXM4-40GB",
    serial: Some("1564720004631"),
    uuid: "GPU-5a3c9f0e-8a1b-4c2d-9e7f-0a1b2c3d4e5f",
};

/// A card: MIG `current` (with `pending` after the next reset), these instances, this board.
#[derive(Debug, Clone)]
pub struct TestCard {
    pub current: bool,
    pub pending: Option<bool>,
    pub instances: Vec<Gi>,
    pub board: Board,
}

impl TestCard {
    pub fn on(instances: Vec<Gi>) -> Self {
        Self {
            current: true,
            pending: None,
            instances,
            board: BOARD,
        }
    }

    pub fn reply(&self) -> Reply {
        reply_of(&self.json())
    }

    pub fn json(&self) -> Value {
        let state = |on: bool| if on { "enabled" } else { "disabled" };
        let profiles: Vec<Value> = PROFILES
            .iter()
            .map(|(id, name, slices, count, starts, size)| {
                json!({
                    "id": id, "name": name,
                    "signature": {"slice_count": slices, "instance_count": count,
                        "multiprocessor_count": 14 * slices, "copy_engine_count": 1,
                        "decoder_count": 0, "encoder_count": 0, "jpeg_count": 0,
                        "ofa_count": 0, "memory_size_mb": 4864 * slices, "capabilities": []},
                    "placements": starts.iter().map(|s| json!({"start": s, "size": size}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        let instances: Vec<Value> = self
            .instances
            .iter()
            .map(|gi| {
                let compute = gi.compute.clone().unwrap_or_else(|| {
                    vec![(0, filling(gi.slices()), Placement::new(0, gi.slices()))]
                });
                json!({
                    "id": gi.id, "profile_id": gi.profile,
                    "placement": {"start": gi.start, "size": gi.size()},
                    "uuid": null,
                    "compute_instances": compute.iter().map(|(id, profile, at)| json!({
                        "id": id, "profile_id": profile,
                        "placement": {"start": at.start, "size": at.size}}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "format": "1.2",
            "device": device().to_string(),
            "mode": {"capable": true, "current": state(self.current),
                "pending": self.pending.map(state)},
            "case": if self.instances.is_empty() || !self.current { "none_carved" } else { "partitions" },
            "driver": {"version": "570.172.08", "nvml_version": "12.570.172.08"},
            "card": {"name": self.board.name, "serial": self.board.serial, "uuid": self.board.uuid},
            "profiles": profiles,
            "gpu_instances": instances,
            "vgpus": [],
            "processes": [],
        })
    }
}

/// A reply read from its JSON, as the probe reads one.
pub fn reply_of(json: &Value) -> Reply {
    Reply::from_json(json.to_string().as_bytes(), None).unwrap()
}

/// The balanced layout of these tests: two 1g.5gb at 0 and 1, a 2g.10gb at 2, a 3g.20gb at 4.
pub fn balanced() -> Vec<Gi> {
    vec![
        Gi::new(1, 19, 0),
        Gi::new(2, 19, 1),
        Gi::new(3, 14, 2),
        Gi::new(4, 9, 4),
    ]
}

/// The balanced layout by counts only (placements not decided).
pub fn balanced_counted() -> layout_model::Want {
    use layout_model::ProfileKey;
    layout_model::Want::enabled(vec![
        (ProfileKey::Name("1g.5gb".into()), 2),
        (ProfileKey::Name("2g.10gb".into()), 1),
        (ProfileKey::Name("3g.20gb".into()), 1),
    ])
}

/// The balanced layout as a declaration keeps it: counts and decided placements.
pub fn balanced_placed() -> layout_model::Want {
    balanced_counted().placed(
        balanced()
            .iter()
            .map(|gi| layout_model::Placed::new(gi.profile, gi.placement()))
            .collect(),
    )
}
