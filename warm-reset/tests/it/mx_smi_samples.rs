//! Every `mx-smi` parser on every published sample of what it reads (`tests/data/mx-smi/`,
//! sources in its README), and each sample cut short at every line: a cut never reads as
//! "idle" or as a whole answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use warm_reset::io::ParseError;
use warm_reset::metax::mx_smi::{
    GpuProcess, GpuState, Versions, check_versions, is_metax, parse_header, parse_listing,
    parse_processes, parse_topology,
};
use warm_reset::metax::{DriverUse, metax_use};

/// The four versions a header gives: mx-smi's, the kernel driver's, the BIOS's and MACA's.
fn four(versions: &Versions) -> [Option<&str>; 4] {
    [
        versions.mx_smi.as_deref(),
        versions.kernel_driver.as_deref(),
        versions.bios.as_deref(),
        versions.maca.as_deref(),
    ]
}

fn sample(name: &str) -> String {
    let path = format!("{}/tests/data/mx-smi/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

const PLAIN: [&str; 3] = [
    "plain-2.3.1-c500-idle.txt",
    "plain-2.2.4-c550-gpu-name-layout.txt",
    "plain-2.2.9-c500-no-banner.txt",
];

/// The first `count` lines of `text`.
fn cut(text: &str, count: usize) -> String {
    text.lines()
        .take(count)
        .map(|line| format!("{line}\n"))
        .collect()
}

/// Asserts, for each sample of `names`, that `parse` reads it cut to its first `whole` lines (as
/// `whole` counts them in the sample), and none of its shorter cuts.
fn reads_only_whole<T, E>(
    names: &[&str],
    whole: fn(&str) -> usize,
    parse: fn(&str) -> Result<T, E>,
) {
    for name in names {
        let text = sample(name);
        let whole = whole(&text);
        for count in 0..whole {
            assert!(
                parse(&cut(&text, count)).is_err(),
                "{name} cut to {count} lines"
            );
        }
        assert!(parse(&cut(&text, whole)).is_ok(), "{name} whole");
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).unwrap() + 1
}

#[test]
fn every_plain_sample_is_recognised_as_metaxs_tool() {
    for name in PLAIN {
        assert!(is_metax(&sample(name)), "{name}");
    }
    assert!(is_metax(&sample("list-2.2.9.txt")));
    assert!(is_metax(&sample("topo-m-2.2.9-8gpu-affinity.txt")));
}

#[test]
fn another_vendors_mx_smi_is_not_metaxs_and_has_no_header_to_read() {
    let text = sample("other-vendor-moffett-2.3.0-head.txt");
    assert!(!is_metax(&text));
    assert!(matches!(
        parse_header(&text),
        Err(ParseError::Missing { .. })
    ));
}

#[test]
fn the_versions_of_the_board_name_layout_read() {
    let versions = parse_header(&sample("plain-2.3.1-c500-idle.txt")).unwrap();
    assert_eq!(
        four(&versions),
        [
            Some("2.3.1"),
            Some("3.8.30"),
            Some("1.33.5.0"),
            Some("3.7.1.5")
        ]
    );
    let check = check_versions(&versions);
    assert!(
        check.too_old.is_empty() && check.unreadable.is_empty(),
        "{check:?}"
    );
}

#[test]
fn the_versions_of_the_gpu_name_layout_read() {
    let versions = parse_header(&sample("plain-2.2.4-c550-gpu-name-layout.txt")).unwrap();
    assert_eq!(
        four(&versions),
        [
            Some("2.2.4"),
            Some("2.15.9"),
            Some("1.25.1.0"),
            Some("2.32.0.6")
        ]
    );
}

#[test]
fn without_the_banner_the_header_cell_gives_the_mx_smi_version() {
    let versions = parse_header(&sample("plain-2.2.9-c500-no-banner.txt")).unwrap();
    assert_eq!(versions.mx_smi.as_deref(), Some("2.2.9"));
    assert_eq!(versions.kernel_driver.as_deref(), Some("3.4.4"));
}

#[test]
fn a_maca_version_of_unknown_is_kept_and_blocks_nothing() {
    // mx-smi 2.1.12 has been published printing `MACA Version: unknown`.
    let text = sample("plain-2.3.1-c500-idle.txt")
        .replace("MACA Version: 3.7.1.5", "MACA Version: unknown");
    let check = check_versions(&parse_header(&text).unwrap());
    assert_eq!(check.found.maca.as_deref(), Some("unknown"));
    assert!(check.too_old.is_empty() && check.unreadable.is_empty());
}

#[test]
fn a_vbios_key_is_not_the_bios_key_and_leaves_the_bios_version_unread() {
    let text = sample("plain-2.3.1-c500-idle.txt").replace("BIOS Version", "VBIOS Version");
    let check = check_versions(&parse_header(&text).unwrap());
    assert_eq!(check.found.bios, None);
    assert_eq!(check.unreadable.len(), 1, "{check:?}");
}

#[test]
fn a_kernel_driver_below_the_minimum_in_a_real_header_is_too_old() {
    let text = sample("plain-2.2.4-c550-gpu-name-layout.txt").replace(
        "Kernel Mode Driver Version: 2.15.9",
        "Kernel Mode Driver Version: 2.3.9 ",
    );
    let check = check_versions(&parse_header(&text).unwrap());
    assert_eq!(check.too_old, ["kernel driver 2.3.9 is older than 2.4.1"]);
}

#[test]
fn every_idle_plain_sample_reads_as_no_process() {
    for name in PLAIN {
        assert_eq!(parse_processes(&sample(name)), Ok(vec![]), "{name}");
    }
}

#[test]
fn the_busy_process_section_gives_every_row() {
    let processes = parse_processes(&sample("process-table-busy.txt")).unwrap();
    assert_eq!(
        processes,
        [
            GpuProcess::new(0, 3496691, "python3.10", 4066),
            GpuProcess::new(0, 3496692, "python3.10", 102),
            GpuProcess::new(0, 3496698, "python3.10", 170),
            GpuProcess::new(1, 3496692, "python3.10", 4154),
            GpuProcess::new(7, 3496698, "python3.10", 4154),
        ]
    );
}

#[test]
fn a_process_name_with_spaces_is_read_whole() {
    let text = sample("process-table-busy.txt").replace(
        "|  7                  3496698         python3.10                   4154           |",
        "|  7                  3496698         vllm serve qwen              4154           |",
    );
    let processes = parse_processes(&text).unwrap();
    assert_eq!(processes[4].name, "vllm serve qwen");
}

#[test]
fn any_unknown_line_inside_the_process_section_is_an_error_naming_it() {
    let text = sample("plain-2.3.1-c500-idle.txt");
    let start = line_of(&text, "| Process:");
    let closing = text
        .lines()
        .collect::<Vec<_>>()
        .iter()
        .rposition(|l| l.starts_with('+'));
    let odd = "| something this reader does not know                                             |";
    // Every place from just after `| Process:` to just before the closing rule.
    for at in start..=closing.unwrap() {
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(at, odd);
        let edited = lines.join("\n");
        match parse_processes(&edited) {
            Err(ParseError::Line { line, .. }) => assert_eq!(line, at + 1, "inserted at {at}"),
            other => panic!("inserted at {at}: {other:?}"),
        }
    }
}

#[test]
fn rows_beside_no_process_found_are_an_error_not_idle() {
    let text = sample("process-table-busy.txt").replace(
        "|  0                  3496692         python3.10                   102            |",
        "|  no process found                                                               |",
    );
    assert!(parse_processes(&text).is_err());
}

#[test]
fn output_without_a_process_section_is_an_error_not_idle() {
    let text = sample("plain-2.3.1-c500-idle.txt");
    let before = cut(&text, line_of(&text, "| Process:") - 2);
    assert!(matches!(
        parse_processes(&before),
        Err(ParseError::Missing { .. })
    ));
    assert!(parse_processes("").is_err());
}

#[test]
fn the_process_section_cut_at_any_line_before_its_end_never_reads() {
    // The section ends at its last `+---+` rule.
    let through_last_rule = |text: &str| {
        let lines: Vec<&str> = text.lines().collect();
        lines
            .iter()
            .rposition(|line| line.starts_with('+'))
            .unwrap()
            + 1
    };
    reads_only_whole(
        &["plain-2.3.1-c500-idle.txt", "process-table-busy.txt"],
        through_last_rule,
        parse_processes,
    );
}

#[test]
fn the_header_cut_inside_its_box_is_an_error() {
    let text = sample("plain-2.3.1-c500-idle.txt");
    let first_rule = line_of(&text, "|------------------+");
    for count in line_of(&text, "+----")..first_rule {
        assert!(
            parse_header(&cut(&text, count)).is_err(),
            "cut to {count} lines"
        );
    }
    assert!(parse_header(&cut(&text, first_rule)).is_ok());
}

#[test]
fn the_published_listing_reads_with_sparse_node_ids() {
    let rows = parse_listing(&sample("list-2.2.9.txt")).unwrap();
    let read: Vec<(u32, String, String, &GpuState, Option<&str>)> = rows
        .iter()
        .map(|row| {
            (
                row.node,
                row.model.clone(),
                row.bdf.to_string(),
                &row.state,
                row.uuid.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        read,
        [
            (
                0,
                "MXC500".into(),
                "0000:08:00.0".into(),
                &GpuState::Available,
                Some("GPU-e702f06b-bbd6-bc06-5196-90a5554a24ba")
            ),
            (
                7,
                "MXC500".into(),
                "0000:3c:00.0".into(),
                &GpuState::Available,
                Some("GPU-0e715b45-bcef-1500-e2db-752724095700")
            ),
        ]
    );
}

#[test]
fn a_not_available_row_without_a_uuid_is_present_but_not_available() {
    let text = sample("list-2.2.9.txt").replace(
        "Available (UUID: GPU-0e715b45-bcef-1500-e2db-752724095700)",
        "Not Available(GPU lost)",
    );
    let rows = parse_listing(&text).unwrap();
    assert_eq!(
        (&rows[1].state, rows[1].uuid.as_deref()),
        (&GpuState::NotAvailable("GPU lost".into()), None)
    );
}

#[test]
fn a_line_of_the_listing_that_is_not_a_row_is_an_error_naming_it() {
    let text = format!("{}Error: device busy\n", sample("list-2.2.9.txt"));
    assert!(matches!(
        parse_listing(&text),
        Err(ParseError::Line { line: 4, .. })
    ));
}

#[test]
fn the_listing_cut_at_any_line_gives_only_rows_it_holds_never_others() {
    let text = sample("list-2.2.9.txt");
    let whole = parse_listing(&text).unwrap();
    for count in 0..=text.lines().count() {
        match parse_listing(&cut(&text, count)) {
            Ok(rows) => assert!(rows.iter().all(|row| whole.contains(row))),
            Err(error) => assert!(matches!(error, ParseError::Missing { .. }), "{error}"),
        }
    }
}

#[test]
fn both_published_topologies_give_two_groups_of_four() {
    for name in ["topo-m-8gpu.txt", "topo-m-2.2.9-8gpu-affinity.txt"] {
        let topology = parse_topology(&sample(name)).unwrap();
        assert_eq!(topology.nodes, (0..8).collect::<Vec<_>>(), "{name}");
        assert_eq!(topology.links.len(), 12, "{name}");
        assert_eq!(topology.group_of(2), Some(vec![0, 1, 2, 3]), "{name}");
        assert_eq!(topology.group_of(5), Some(vec![4, 5, 6, 7]), "{name}");
    }
}

#[test]
fn a_link_seen_from_one_side_only_is_an_error() {
    let text = sample("topo-m-2.2.9-8gpu-affinity.txt").replacen(
        "GPU1    MX      X       MX",
        "GPU1    NODE    X       MX",
        1,
    );
    assert!(matches!(
        parse_topology(&text),
        Err(ParseError::Line { .. })
    ));
}

#[test]
fn an_attached_count_other_than_the_matrix_is_an_error() {
    let text = sample("topo-m-8gpu.txt").replace(": 8", ": 7");
    assert!(matches!(
        parse_topology(&text),
        Err(ParseError::Line { line: 3, .. })
    ));
}

#[test]
fn the_matrix_cut_at_any_line_before_its_last_row_never_reads() {
    let through_last_row = |text: &str| {
        text.lines()
            .position(|line| line.starts_with("GPU7"))
            .unwrap()
            + 1
    };
    reads_only_whole(
        &["topo-m-8gpu.txt", "topo-m-2.2.9-8gpu-affinity.txt"],
        through_last_row,
        parse_topology,
    );
}

#[test]
fn the_published_metax_module_line_has_a_use_count_of_zero() {
    assert_eq!(metax_use(&sample("proc-modules.txt")), DriverUse::Loaded(0));
}
