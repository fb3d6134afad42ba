//! `scenarios/captures/profile-tables.tsv`, read: every part's GPU-instance profile table with
//! the sources of each row. Shared by the test binaries that hold the fake to it and it to its
//! sources.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

/// The folder of the published captures.
pub fn captures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/captures")
}

/// A profile's numbers as NVML answers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numbers {
    pub id: u32,
    pub instances: u32,
    pub memory_mib: u64,
    pub sm: u32,
    pub ce: u32,
    pub dec: u32,
    pub enc: u32,
    pub jpeg: u32,
    pub ofa: u32,
}

/// One row: a profile of a part, its numbers (`None`: absent, no source gives its memory), and
/// the sources of its memory and of its counts, each a token (`lgip=FILE`, `mib=FILE`,
/// `slices=NAME`, `guide`, `doc=KEY`, `unpublished: why`).
#[derive(Debug, Clone)]
pub struct Row {
    pub part: String,
    pub profile: String,
    pub index: u32,
    pub slices: u32,
    pub numbers: Option<Numbers>,
    pub memory_sources: Vec<String>,
    pub count_sources: Vec<String>,
}

/// The table's rows, in its order.
pub fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string(captures().join("profile-tables.tsv")).unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 15, "{line}");
            let number = |at: usize| -> u32 { f[at].parse().unwrap_or_else(|_| panic!("{line}")) };
            let numbers = (f[6] != "absent").then(|| Numbers {
                id: number(3),
                instances: number(5),
                memory_mib: f[6].parse().unwrap(),
                sm: number(7),
                ce: number(8),
                dec: number(9),
                enc: number(10),
                jpeg: number(11),
                ofa: number(12),
            });
            let tokens = |text: &str| -> Vec<String> {
                text.split(" + ")
                    .filter(|t| *t != "-")
                    .map(str::to_owned)
                    .collect()
            };
            Row {
                part: f[0].to_owned(),
                profile: f[1].to_owned(),
                index: number(2),
                slices: number(4),
                numbers,
                memory_sources: tokens(f[13]),
                count_sources: tokens(f[14]),
            }
        })
        .collect()
}

/// The document keys the table's header explains (`doc=KEY`).
pub fn documents() -> Vec<String> {
    let text = std::fs::read_to_string(captures().join("profile-tables.tsv")).unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix('#'))
        .filter_map(|line| {
            let key = line.trim_start().split(':').next()?;
            (line.starts_with("                ")
                && !key.is_empty()
                && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
            .then(|| key.to_owned())
        })
        .collect()
}
