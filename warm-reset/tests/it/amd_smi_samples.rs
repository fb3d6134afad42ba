//! The `amd-smi` readers on published outputs (`tests/data/amd-smi/`, sources in its README), on
//! what they must refuse, and on those outputs mutated: a listing never reads a GPU a line does
//! not give, and a reset's output never reads as a success past a failure word.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::line_edits::{Edit, delete_duplicate_or_replace, edited_lines};
use proptest::prelude::*;
use warm_reset::amd::amd_smi::{AmdSmiGpu, parse_list, read_reset_output};
use warm_reset::amd::reset_args;

fn sample(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/amd-smi")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn addresses(gpus: &[AmdSmiGpu]) -> Vec<String> {
    gpus.iter()
        .map(|gpu| gpu.bdf.map(|bdf| bdf.to_string()).unwrap_or_default())
        .collect()
}

#[test]
fn the_published_listing_reads_each_gpus_id_address_uuid_and_partition() {
    let gpus = parse_list(&sample("list-2gpu-changelog.txt")).unwrap();
    assert_eq!(gpus.iter().map(|gpu| gpu.index).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(addresses(&gpus), ["0000:23:00.0", "0000:26:00.0"]);
    assert_eq!(gpus[0].uuid.as_deref(), Some("<redacted>"));
    assert_eq!(gpus[1].partition_id, Some(0));
}

#[test]
fn a_cpx_partition_is_listed_at_its_gpus_address_with_the_partition_as_function() {
    let gpus = parse_list(&sample("list-e-cpx-changelog.txt")).unwrap();
    assert_eq!(addresses(&gpus), ["0000:0c:00.0", "0000:0c:00.1"]);
    assert_eq!(gpus[1].partition_id, Some(1));
}

#[test]
fn two_gpus_may_print_the_same_uuid_and_both_still_read() {
    let gpus = parse_list(&sample("list-2xmi210-same-uuid.txt")).unwrap();
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0].uuid, gpus[1].uuid);
    let fixed = parse_list(&sample("list-2xmi210-distinct-uuids.txt")).unwrap();
    assert_ne!(fixed[0].uuid, fixed[1].uuid);
}

#[test]
fn a_value_amd_smi_cannot_tell_is_none_not_a_guess() {
    let gpus = parse_list("GPU: 0\n    BDF: N/A\n    UUID: N/A\n    PARTITION_ID: N/A\n").unwrap();
    assert_eq!(gpus, [AmdSmiGpu::new(0, None, None, None)]);
}

#[test]
fn what_a_listing_must_have_or_must_not_hold_is_an_error_naming_the_line() {
    for (text, why) in [
        ("", "no `GPU:` block"),
        (
            "WARNING: something\nGPU: 0\n    BDF: 0000:23:00.0\n    UUID: x\n",
            "line 1",
        ),
        ("    BDF: 0000:23:00.0\n", "before the first"),
        ("GPU: 0\n    UUID: x\n", "without a BDF"),
        ("GPU: 0\n    BDF: 0000:23:00.0\n", "without a UUID"),
        (
            "GPU: 0\n    BDF: 23:00.0\n    UUID: x\n",
            "not a PCI address",
        ),
        (
            "GPU: 0\n    BDF: 0000:23:00.0\n    UUID: x\nGPU: 0\n    BDF: 0000:26:00.0\n    UUID: y\n",
            "listed twice",
        ),
        (
            "GPU: 0\n    BDF: 0000:23:00.0\n    BDF: 0000:26:00.0\n    UUID: x\n",
            "second BDF",
        ),
        ("GPU: zero\n", "line 1"),
        ("GPU: 0\n    bdf 0000:23:00.0\n", "KEY: value"),
    ] {
        let error = parse_list(text).unwrap_err();
        assert!(error.to_string().contains(why), "{text:?}: {error}");
    }
}

#[test]
fn the_reset_is_issued_with_options_the_published_help_names() {
    let help = sample("reset-help.txt");
    let args = reset_args(&["0000:05:00.0".parse().unwrap()]);
    assert_eq!(args, ["reset", "--gpureset", "--gpu", "0000:05:00.0"]);
    assert!(help.contains("--gpureset           Reset the specified GPU"));
    assert!(help.contains("-g, --gpu GPU [GPU ...]     Select a GPU ID, BDF, or UUID"));
}

#[test]
fn a_library_exception_is_a_failed_reset() {
    let said = read_reset_output(&sample("library-exception-busy.txt"));
    assert_eq!(said.succeeded, 0);
    assert!(!said.failed.is_empty(), "{said:?}");
    assert!(!said.says_reset(1));
}

#[test]
fn the_success_and_failure_words_of_amd_smis_source_read_as_such() {
    let ok = read_reset_output("GPU: 0\n    GPU_RESET: Successfully reset GPU\n");
    assert!(ok.says_reset(1));
    for failed in [
        "GPU: 0\n    GPU_RESET: [AMDSMI_STATUS_BUSY] Unable to reset GPU\n",
        "GPU: 0\n    GPU_RESET: Failed to reset GPU\n",
        "GPU: 0\n    GPU_RESET: Unable to reset non-amd GPU\n",
        "PermissionError: Command requires elevation\n",
    ] {
        let said = read_reset_output(failed);
        assert_eq!(said.failed.len(), 1, "{failed:?}");
        assert!(!said.says_reset(1), "{failed:?}");
    }
}

#[test]
fn output_the_reader_does_not_know_is_named_apart_and_is_no_success() {
    for text in ["", "done\n", "GPU: 0\n    GPU_RESET: reset\n"] {
        let said = read_reset_output(text);
        assert!(said.failed.is_empty(), "{text:?}");
        assert!(!said.says_reset(1), "{text:?}");
    }
    let two = "GPU: 0\n    GPU_RESET: Successfully reset GPU\n";
    assert!(
        !read_reset_output(two).says_reset(2),
        "one success line for two GPUs is not both"
    );
}

const LISTINGS: [&str; 4] = [
    "list-2gpu-changelog.txt",
    "list-e-cpx-changelog.txt",
    "list-2xmi210-same-uuid.txt",
    "list-2xmi210-distinct-uuids.txt",
];

fn edit() -> impl Strategy<Value = Edit> {
    let line = prop_oneof![
        "[ -~]{0,60}",
        Just("GPU: 7".to_owned()),
        Just("    BDF: 0000:99:00.0".to_owned()),
        Just("    UUID: N/A".to_owned()),
        Just("    PARTITION_ID: x".to_owned()),
        Just("    GPU_RESET: Successfully reset GPU".to_owned()),
    ];
    delete_duplicate_or_replace(line)
}

fn apply(text: &str, edits: &[Edit]) -> String {
    edited_lines(text, edits).join("\n") + "\n"
}

proptest! {
    #[test]
    fn every_gpu_a_mutated_listing_reads_has_a_gpu_line_and_a_bdf_line_in_the_text(
        sample_index in 0..LISTINGS.len(),
        edits in proptest::collection::vec(edit(), 0..6),
    ) {
        let text = apply(&sample(LISTINGS[sample_index]), &edits);
        if let Ok(gpus) = parse_list(&text) {
            prop_assert!(!gpus.is_empty());
            for gpu in gpus {
                let id = gpu.index.to_string();
                prop_assert!(
                    text.lines().any(|line| line
                        .strip_prefix("GPU:")
                        .is_some_and(|rest| rest.trim() == id)),
                    "GPU {}", id
                );
                if let Some(bdf) = gpu.bdf {
                    let bdf = bdf.to_string();
                    prop_assert!(text.contains(&bdf), "{}", bdf);
                }
            }
        }
    }

    #[test]
    fn a_listing_reads_back_from_the_blocks_it_prints(
        gpus in proptest::collection::btree_map(
            0u32..64,
            (0u8..=255, proptest::option::of("[0-9a-f]{8}-[0-9a-f-]{4,27}"), proptest::option::of(0u32..8)),
            1..9,
        ),
    ) {
        let listed: Vec<AmdSmiGpu> = gpus
            .iter()
            .map(|(index, (bus, uuid, partition))| {
                let bdf = format!("0000:{bus:02x}:00.0").parse().ok();
                AmdSmiGpu::new(*index, bdf, uuid.as_deref(), *partition)
            })
            .collect();
        let text: Vec<String> = listed.iter().map(AmdSmiGpu::to_block).collect();
        prop_assert_eq!(parse_list(&text.join("\n")).unwrap(), listed);
    }

    #[test]
    fn no_output_with_a_failure_word_reads_as_a_reset(
        before in "[ -~\n]{0,80}",
        after in "[ -~\n]{0,80}",
        word in prop_oneof![
            Just("Unable to reset"),
            Just("Failed to reset"),
            Just("Traceback (most recent call last)"),
            Just("AmdSmiLibraryException"),
        ],
        count in 0usize..4,
    ) {
        let text = format!("{before}\n{word}\n{after}");
        let said = read_reset_output(&text);
        prop_assert!(!said.failed.is_empty());
        prop_assert!(!said.says_reset(count));
    }
}
