//! The published profile table (`scenarios/captures/profile-tables.tsv`, which
//! `tests/profile_tables.rs` holds the fake's NVML answers to) against the sources each of its
//! rows names: the `nvidia-smi mig -lgip` captures kept beside it, the MIG device totals, NVIDIA's
//! MIG user guide (`guide-tables.tsv`); and the part scenarios' placements and slices against
//! what is published of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::profile_table::{Row, captures, documents, rows};
use fake_nvml::scenarios::PARTS;
use fake_nvml::{Profile, Scenario};

fn part(name: &str) -> Scenario {
    let (_, text) = PARTS.iter().find(|(known, _)| *known == name).unwrap();
    Scenario::from_json(text.as_bytes()).unwrap()
}

fn profile<'a>(scenario: &'a Scenario, name: &str) -> &'a Profile {
    scenario.devices[0]
        .gpu_instance_profiles
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no profile {name}"))
}

/// One profile row of `nvidia-smi mig -lgip`: the first line, and the second when published.
#[derive(Debug)]
struct LgipRow {
    name: String,
    id: u32,
    total: u32,
    /// The memory as printed: GiB to two decimals.
    gib: String,
    sm: u32,
    dec: u32,
    enc: u32,
    /// Copy engines, JPEG, OFA: the row's second line.
    second: Option<(u32, u32, u32)>,
}

fn fields(line: &str) -> Vec<String> {
    line.trim_matches(|c: char| c == '|' || c.is_whitespace())
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// The rows of a `-lgip` capture.
fn lgip(file: &str) -> Vec<LgipRow> {
    let text = std::fs::read_to_string(captures().join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let f = fields(line);
        // GPU, "MIG", name, ID, free/total, GiB, P2P, SM, DEC, ENC
        if f.len() != 10 || f[1] != "MIG" {
            continue;
        }
        let second = lines.get(at + 1).map(|next| fields(next)).and_then(|s| {
            (s.len() == 3).then(|| {
                (
                    s[0].parse().unwrap(),
                    s[1].parse().unwrap(),
                    s[2].parse().unwrap(),
                )
            })
        });
        assert_eq!(f[6], "No", "{file}: {line}");
        rows.push(LgipRow {
            name: f[2].clone(),
            id: f[3].parse().unwrap(),
            total: f[4].split('/').nth(1).unwrap().parse().unwrap(),
            gib: f[5].clone(),
            sm: f[7].parse().unwrap(),
            dec: f[8].parse().unwrap(),
            enc: f[9].parse().unwrap(),
            second,
        });
    }
    assert!(!rows.is_empty(), "{file}: no row");
    rows
}

fn lgip_row(file: &str, name: &str) -> LgipRow {
    lgip(file)
        .into_iter()
        .find(|row| row.name == name)
        .unwrap_or_else(|| panic!("{file}: no row {name}"))
}

/// Whether `text` holds `number` as a whole number (no digit beside it).
fn holds_number(text: &str, number: u64) -> bool {
    let wanted = number.to_string();
    text.match_indices(&wanted).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + wanted.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// The size of a placement of `name` on the part, in memory slices (`-lgipp`'s `:size`).
fn memory_slices(part_name: &str, name: &str) -> u32 {
    profile(&part(part_name), name).placements[0].size
}

#[test]
fn every_profiles_memory_is_that_its_sources_give() {
    let all = rows();
    let known = documents();
    for row in &all {
        let here = format!("{} {}", row.part, row.profile);
        let Some(numbers) = row.numbers else {
            assert!(
                row.memory_sources
                    .iter()
                    .all(|s| s.starts_with("unpublished: ")),
                "{here}: absent, yet {:?}",
                row.memory_sources
            );
            continue;
        };
        assert!(!row.memory_sources.is_empty(), "{here}: no source");
        for source in &row.memory_sources {
            if let Some(file) = source.strip_prefix("lgip=") {
                // nvidia-smi prints memorySizeMB / 1024 to two decimals.
                let printed = format!("{:.2}", numbers.memory_mib as f64 / 1024.0);
                assert_eq!(printed, lgip_row(file, &row.profile).gib, "{here}: {file}");
            } else if let Some(file) = source.strip_prefix("mib=") {
                let text = std::fs::read_to_string(captures().join(file)).unwrap();
                assert!(holds_number(&text, numbers.memory_mib), "{here}: {file}");
            } else if let Some(other) = source.strip_prefix("slices=") {
                let sibling = all
                    .iter()
                    .find(|r| r.part == row.part && r.profile == other)
                    .unwrap_or_else(|| panic!("{here}: no row {other}"));
                assert_eq!(
                    sibling.numbers.map(|n| n.memory_mib),
                    Some(numbers.memory_mib),
                    "{here}: {other}"
                );
                assert_eq!(
                    memory_slices(&row.part, &row.profile),
                    memory_slices(&row.part, other),
                    "{here}: {other} takes other memory slices"
                );
            } else if let Some(key) = source.strip_prefix("doc=") {
                assert!(known.iter().any(|k| k == key), "{here}: {key} unexplained");
            } else {
                panic!("{here}: {source} is no memory source");
            }
        }
        // A size of which only a GiB figure is published is the multiple of 64 MiB printing so.
        if row.memory_sources.iter().all(|s| s.starts_with("lgip=")) {
            assert_eq!(numbers.memory_mib % 64, 0, "{here}");
        }
    }
}

/// The guide's row of a profile: instances, copy engines, NVDEC, JPEG, OFA, and what the part
/// keeps of the driver's instead.
fn guide(row: &Row) -> ([u32; 5], String) {
    let text = std::fs::read_to_string(captures().join("guide-tables.tsv")).unwrap();
    let line = text
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split('\t').collect::<Vec<_>>())
        .find(|f| f[0] == row.part && f[1] == row.profile)
        .unwrap_or_else(|| panic!("{} {}: not in guide-tables.tsv", row.part, row.profile));
    let n = |at: usize| line[at].parse().unwrap();
    (
        [n(2), n(3), n(4), n(5), n(6)],
        line.get(7).copied().unwrap_or("").to_owned(),
    )
}

#[test]
fn every_profiles_counts_are_those_its_sources_give() {
    let known = documents();
    for row in rows() {
        let here = format!("{} {}", row.part, row.profile);
        let Some(n) = row.numbers else {
            continue;
        };
        assert!(!row.count_sources.is_empty(), "{here}: no source");
        for source in &row.count_sources {
            if let Some(file) = source.strip_prefix("lgip=") {
                let published = lgip_row(file, &row.profile);
                assert_eq!(
                    (n.id, n.instances, n.sm, n.dec, n.enc),
                    (
                        published.id,
                        published.total,
                        published.sm,
                        published.dec,
                        published.enc
                    ),
                    "{here}: {file}"
                );
                if let Some(second) = published.second {
                    assert_eq!((n.ce, n.jpeg, n.ofa), second, "{here}: {file}");
                }
            } else if source == "guide" {
                let (published, kept) = guide(&row);
                let ours = [n.instances, n.ce, n.dec, n.jpeg, n.ofa];
                for (at, field) in ["instances", "copy_engines", "nvdec", "jpeg", "ofa"]
                    .iter()
                    .enumerate()
                {
                    // Where the driver's capture says otherwise, the part keeps the driver's.
                    if !kept.contains(field) {
                        assert_eq!(ours[at], published[at], "{here}: the guide's {field}");
                    }
                }
            } else if let Some(key) = source.strip_prefix("doc=") {
                assert!(known.iter().any(|k| k == key), "{here}: {key} unexplained");
            } else {
                panic!("{here}: {source} is no source of counts");
            }
        }
    }
}

#[test]
fn every_part_names_its_sources_and_every_profile_its_row() {
    let all = rows();
    for (name, _) in PARTS {
        let scenario = part(name);
        assert!(!scenario.sources.is_empty(), "{name}: no sources");
        for p in &scenario.devices[0].gpu_instance_profiles {
            let row = all
                .iter()
                .find(|r| r.part == name && r.profile == p.name)
                .unwrap_or_else(|| panic!("{name} {}: no row", p.name));
            assert_eq!(row.index, p.index, "{name} {}", p.name);
        }
    }
}

/// The name NVIDIA's go-nvlib (and so mig-parted and the device plugin) makes of a profile:
/// its slices, and its memory as a fraction of the board's rounded up to an eighth, times the
/// board's GiB rounded up (`getMigMemorySizeGB`, pkg/nvlib/device/mig_profile.go). A size of 0
/// made `1g.0gb`, which names no profile a config asks for.
fn name_a_client_makes(slices: u32, memory_mib: u64, board_mib: u64) -> String {
    let fraction = (memory_mib as f64 / board_mib as f64 * 8.0).ceil() / 8.0;
    let board_gib = board_mib.div_ceil(1024) as f64;
    format!("{slices}g.{}gb", (fraction * board_gib).round())
}

#[test]
fn every_profiles_name_is_the_one_clients_make_of_its_memory() {
    for (name, _) in PARTS {
        let card = &part(name).devices[0];
        let board = card.memory_total_mib.unwrap();
        for p in &card.gpu_instance_profiles {
            let base = p.name.split('+').next().unwrap();
            assert_eq!(
                name_a_client_makes(p.slice_count, p.memory_size_mb, board),
                base,
                "{name} {}",
                p.name
            );
        }
    }
}

#[test]
fn slices_are_those_the_profile_names_say() {
    for (name, _) in PARTS {
        for profile in &part(name).devices[0].gpu_instance_profiles {
            let slices: u32 = profile.name.split('g').next().unwrap().parse().unwrap();
            assert_eq!(profile.slice_count, slices, "{name} {}", profile.name);
        }
    }
}

#[test]
fn placements_are_those_published_by_lgipp() {
    for (name, file) in [
        ("a30-24gb", "a30-24gb-lgipp.txt"),
        ("a30-24gb", "a30-24gb-r535-lgipp.txt"),
        ("a100-sxm4-40gb", "a100-sxm4-40gb-lgipp.txt"),
        ("a100-pcie-40gb", "a100-pcie-40gb-lgipp.txt"),
        ("h100-nvl-94gb", "h100-nvl-94gb-r560-lgipp.txt"),
    ] {
        let scenario = part(name);
        let text = std::fs::read_to_string(captures().join(file)).unwrap();
        for line in text.lines().filter(|line| line.starts_with("GPU ")) {
            // GPU  0 Profile ID 14 Placements: {0,1,2,3}:1
            let (head, tail) = line.split_once(':').unwrap();
            let id: u32 = head.split_whitespace().nth(4).unwrap().parse().unwrap();
            let (starts, size) = tail
                .trim()
                .trim_start_matches('{')
                .split_once("}:")
                .unwrap();
            // The size, before any note its publisher wrote after it.
            let size: u32 = size.split_whitespace().next().unwrap().parse().unwrap();
            let published: Vec<(u32, u32)> = starts
                .split(',')
                .map(|s| (s.parse().unwrap(), size))
                .collect();
            let profile = scenario.devices[0]
                .gpu_instance_profiles
                .iter()
                .find(|p| p.id == id)
                .unwrap();
            let ours: Vec<(u32, u32)> = profile
                .placements
                .iter()
                .map(|p| (p.start, p.size))
                .collect();
            assert_eq!(ours, published, "{name} profile {id}");
        }
    }
}
