//! Every `mx-smi` parser on arbitrary text and on real samples mutated line by line: none ever
//! panics, and none reads "idle" from text without `no process found`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::line_edits::{Edit, delete_duplicate_or_replace, edited_lines};
use proptest::prelude::*;
use warm_reset::metax::mx_smi::{
    is_metax, parse_header, parse_listing, parse_processes, parse_topology, reset_failure,
};

const SAMPLES: [&str; 7] = [
    include_str!("../data/mx-smi/plain-2.3.1-c500-idle.txt"),
    include_str!("../data/mx-smi/plain-2.2.4-c550-gpu-name-layout.txt"),
    include_str!("../data/mx-smi/plain-2.2.9-c500-no-banner.txt"),
    include_str!("../data/mx-smi/process-table-busy.txt"),
    include_str!("../data/mx-smi/list-2.2.9.txt"),
    include_str!("../data/mx-smi/topo-m-8gpu.txt"),
    include_str!("../data/mx-smi/topo-m-2.2.9-8gpu-affinity.txt"),
];

fn edit() -> impl Strategy<Value = Edit> {
    let line = prop_oneof![
        "[ -~]{0,90}",
        Just(
            "|  no process found                                                               |"
                .to_owned()
        ),
        Just(
            "+---------------------------------------------------------------------------------+"
                .to_owned()
        ),
        Just(
            "|=================================================================================|"
                .to_owned()
        ),
        Just(
            "|  1                  77         a b c                         12             |"
                .to_owned()
        ),
        Just("GPU9    MX      X       NODE".to_owned()),
        Just("GPU#9    MXC500      0000:09:00.0   Available".to_owned()),
    ];
    // Three kinds of edit in the first arm, so each of the five is as likely.
    prop_oneof![
        3 => delete_duplicate_or_replace(line),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(at, keep)| Edit::Truncate(at, keep)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    edited_lines(text, edits).join("\n")
}

/// What every parser must hold on any text.
fn check_all(text: &str) -> Result<(), TestCaseError> {
    let _ = is_metax(text);
    let _ = parse_header(text);
    let _ = reset_failure(text);
    if let Ok(processes) = parse_processes(text) {
        if processes.is_empty() {
            prop_assert!(
                text.to_ascii_lowercase().contains("no process found"),
                "idle read from text without `no process found`"
            );
        }
        for process in &processes {
            prop_assert!(
                text.contains(&process.pid.to_string()),
                "a pid the text does not hold"
            );
        }
    }
    if let Ok(rows) = parse_listing(text) {
        prop_assert!(!rows.is_empty());
        for row in &rows {
            prop_assert!(
                text.contains(&format!("GPU#{}", row.node)),
                "a row the text does not hold"
            );
        }
    }
    if let Ok(topology) = parse_topology(text) {
        for (a, b) in &topology.links {
            prop_assert!(a < b && topology.nodes.contains(a) && topology.nodes.contains(b));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_text_never_panics_a_parser_nor_reads_as_idle(text in "(?s).{0,600}") {
        check_all(&text)?;
    }

    #[test]
    fn arbitrary_lines_of_box_characters_never_panic_a_parser(
        lines in proptest::collection::vec("[|+=\\- a-zA-Z0-9#:.()]{0,90}", 0..40)
    ) {
        check_all(&lines.join("\n"))?;
    }

    #[test]
    fn real_samples_edited_line_by_line_never_panic_nor_read_as_idle_without_saying_so(
        pick in 0usize..SAMPLES.len(),
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let text = apply(SAMPLES[pick], &edits);
        check_all(&text)?;
        // With `no process found` gone, no edit of an idle sample reads as idle.
        let without = text
            .lines()
            .filter(|line| !line.to_ascii_lowercase().contains("no process found"))
            .collect::<Vec<_>>()
            .join("\n");
        prop_assert!(parse_processes(&without).is_ok_and(|p| !p.is_empty()) || parse_processes(&without).is_err());
    }
}
