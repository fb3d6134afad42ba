//! What still fits (`layout_model::room::remaining`) over a pool of 1,024 GPUs, against decoding
//! the same GPUs' replies: a placement planner reads each GPU's reply, then asks what fits. The
//! replies are the real helper's, read through the fake NVML from every published part in MIG
//! mode (each carrying two GPU instances of its smallest profile) and the carved A100, repeated
//! to 1,024. The goal of issue 47: what fits costs at most what decoding costs (ratio ≤ 1).

use criterion::{Criterion, criterion_group, criterion_main};
use fake_nvml::support::{self, Build};
use gpu_partition_types::Reply;
use layout_model::Card;
use layout_model::room::{Geometry, remaining};
use std::hint::black_box;
use std::process::Command;

/// `template` in MIG mode, with two GPU instances of its first profile at its first two
/// placements.
fn carved(template: &str) -> Option<String> {
    let mut scenario: serde_json::Value = serde_json::from_str(template).ok()?;
    let card = scenario.get_mut("devices")?.get_mut(0)?;
    card["mig_mode"] = serde_json::json!({"current": 1, "pending": 1});
    let profile = card["gpu_instance_profiles"].get(0)?.clone();
    let instances: Vec<serde_json::Value> = (0..2)
        .filter_map(|n| {
            let placement = profile["placements"].get(n)?.clone();
            Some(serde_json::json!({
                "id": n + 1, "profile_id": profile["id"], "placement": placement,
                "compute_instances": []
            }))
        })
        .collect();
    card["gpu_instances"] = serde_json::Value::Array(instances);
    Some(scenario.to_string())
}

/// The helper's reply for the card of `scenario`, read through the fake NVML.
fn reply_text(scenario: &str) -> Option<String> {
    let dir = tempfile::tempdir().ok()?;
    let wrapper = support::helper_wrapper(dir.path(), scenario, Build::Current, None).ok()?;
    let parsed: serde_json::Value = serde_json::from_str(scenario).ok()?;
    let bus = parsed["devices"][0]["pci_bus_id"].as_str()?.to_lowercase();
    let device = bus.get(bus.len().checked_sub(12)?..)?.to_owned();
    let output = Command::new(wrapper)
        .args(["read", "--device", &device, "--format", "1"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8(output.stdout).ok())
        .flatten()
}

fn room(c: &mut Criterion) {
    let mut texts: Vec<String> = fake_nvml::scenarios::PARTS
        .iter()
        .filter_map(|(_, template)| carved(template))
        .chain([fake_nvml::scenarios::A100_MIG_ON_CARVED.to_owned()])
        .filter_map(|scenario| reply_text(&scenario))
        .collect();
    if texts.len() != fake_nvml::scenarios::PARTS.len() + 1 {
        eprintln!(
            "the helper did not read every part's card: {} replies",
            texts.len()
        );
        return;
    }
    let parts = texts.clone();
    texts = parts.iter().cycle().take(1024).cloned().collect();
    let replies: Vec<Reply> = texts
        .iter()
        .filter_map(|text| Reply::from_json(text.as_bytes(), None).ok())
        .collect();
    let geometries: Vec<Geometry> = replies
        .iter()
        .filter_map(|reply| Card::of(reply).ok())
        .map(|card| Geometry::of(&card))
        .collect();
    assert_eq!(geometries.len(), 1024);
    // The comparison measures real answers: most cards have room told for some profile (a
    // part whose table lacks its whole-card profile has its media-engine profiles unknown).
    let told = geometries[..parts.len()]
        .iter()
        .filter(|geometry| {
            remaining(geometry, &[]).is_ok_and(|rooms| {
                rooms
                    .iter()
                    .any(|room| room.fits.as_ref().is_some_and(|fits| fits.more > 0))
            })
        })
        .count();
    eprintln!("{told} of {} parts' cards have room told", parts.len());
    assert!(told * 10 >= parts.len() * 7);

    let mut group = c.benchmark_group("room_1024_gpus");
    group.bench_function("decode_replies", |b| {
        b.iter(|| {
            texts
                .iter()
                .filter_map(|text| Reply::from_json(black_box(text.as_bytes()), None).ok())
                .count()
        })
    });
    group.bench_function("card_geometry_and_remaining", |b| {
        b.iter(|| {
            replies
                .iter()
                .filter_map(|reply| Card::of(black_box(reply)).ok())
                .filter_map(|card| remaining(&Geometry::of(&card), &[]).ok())
                .map(|rooms| rooms.len())
                .sum::<usize>()
        })
    });
    group.bench_function("remaining", |b| {
        b.iter(|| {
            geometries
                .iter()
                .filter_map(|geometry| remaining(black_box(geometry), &[]).ok())
                .map(|rooms| rooms.len())
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, room);
criterion_main!(benches);
