//! The `nvidia-smi` readers on published outputs (`tests/data/nvidia-smi/`, sources in its
//! README), and on what they must refuse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use warm_reset::nvidia::nvidia_smi::{
    device_minor, parse_compute_apps, parse_gpus, parse_nvlinks, read_reset_output,
};

fn sample(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/nvidia-smi")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn nvlink_bridges_in_pairs_join_only_their_pairs() {
    let links = parse_nvlinks(&sample("topo-m-4x3090-nvlink-pairs.txt")).unwrap();
    assert_eq!(links.gpus, [0, 1, 2, 3]);
    assert_eq!(
        links.links.iter().copied().collect::<Vec<_>>(),
        [(0, 2), (1, 3)]
    );
    assert_eq!(links.closure(&[0]), [0, 2]);
    assert_eq!(links.closure(&[3]), [1, 3]);
}

#[test]
fn nic_columns_and_rows_are_read_past_and_every_nv6_pair_is_linked() {
    let links = parse_nvlinks(&sample("topo-m-4xh100-nv6-nic-rows.txt")).unwrap();
    assert_eq!(links.gpus, [0, 1, 2, 3]);
    assert_eq!(links.links.len(), 6);
    assert_eq!(links.closure(&[1]), [0, 1, 2, 3]);
}

#[test]
fn a_tab_separated_matrix_without_nvlink_links_nothing() {
    let links = parse_nvlinks(&sample("topo-m-2x5090-tabs.txt")).unwrap();
    assert_eq!(links.gpus, [0, 1]);
    assert!(links.links.is_empty());
    assert_eq!(links.closure(&[1]), [1]);
}

#[test]
fn behind_an_nvswitch_every_gpu_is_the_peer_of_every_other() {
    let links = parse_nvlinks(&sample("topo-m-hgx-h100-nv18-tabs.txt")).unwrap();
    assert_eq!(links.links.len(), 28);
    assert_eq!(links.closure(&[5]), (0..8).collect::<Vec<_>>());
}

#[test]
fn a_matrix_cut_before_a_gpu_row_is_an_error() {
    let text = sample("topo-m-4x3090-nvlink-pairs.txt");
    let cut: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    let error = parse_nvlinks(&cut).unwrap_err();
    assert!(error.to_string().contains("has no row"), "{error}");
}

#[test]
fn a_cell_the_reader_does_not_know_is_an_error_naming_the_line() {
    let text = sample("topo-m-4x3090-nvlink-pairs.txt")
        .replace("NV4     NODE     X", "NVX     NODE     X");
    let error = parse_nvlinks(&text).unwrap_err();
    assert!(error.to_string().contains("line 4"), "{error}");
}

#[test]
fn a_short_gpu_row_is_an_error() {
    let text = sample("topo-m-2x5090-tabs.txt").replace("GPU1\tPHB\t X \t", "GPU1\t");
    assert!(parse_nvlinks(&text).is_err());
}

#[test]
fn the_published_query_line_reads_with_its_eight_digit_domain() {
    let gpus = parse_gpus(&sample("query-gpu-pg506.csv")).unwrap();
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].index, 0);
    assert_eq!(gpus[0].bdf.to_string(), "0000:de:00.0");
    assert_eq!(gpus[0].bus_id, "00000000:DE:00.0");
    assert_eq!(gpus[0].uuid, "GPU-737e2423-874a-23a4-1126-dfbe3e77c294");
    assert_eq!(gpus[0].name, "NVIDIA PG506-230");
    assert_eq!(gpus[0].to_line(), sample("query-gpu-pg506.csv").trim_end());
}

#[test]
fn a_query_line_that_does_not_read_is_an_error_and_empty_output_is_no_gpu() {
    assert!(parse_gpus("No devices were found\n").is_err());
    assert!(parse_gpus("0, 1A:00.0, GPU-1, x\n").is_err());
    assert_eq!(parse_gpus("").unwrap(), vec![]);
}

#[test]
fn compute_apps_read_pid_and_gpu_and_nothing_is_idle() {
    let apps = parse_compute_apps("4242, 00000000:1A:00.0\n").unwrap();
    assert_eq!(
        (apps[0].pid, apps[0].bdf.to_string().as_str()),
        (4242, "0000:1a:00.0")
    );
    assert!(parse_compute_apps("").unwrap().is_empty());
    assert!(parse_compute_apps("[Insufficient Permissions]\n").is_err());
}

#[test]
fn a_successful_reset_names_its_gpu() {
    let said = read_reset_output(&sample("gpu-reset-success.txt"));
    assert_eq!(said.reset.len(), 1);
    assert_eq!(said.reset[0].to_string(), "0000:1a:00.0");
    assert!(said.in_use.is_empty());
}

#[test]
fn the_look_alike_with_two_spaces_before_was_still_reads_as_a_success() {
    let said = read_reset_output("GPU 00000000:1A:00.0  was successfully reset.\n");
    assert_eq!(said.reset.len(), 1);
}

#[test]
fn the_busy_block_names_the_gpu_in_use_and_resets_nothing() {
    let said = read_reset_output(&sample("gpu-reset-busy.txt"));
    assert!(said.reset.is_empty());
    assert_eq!(
        said.in_use,
        ["GPU 00000000:1A:00.0: In use by another client"]
    );
}

#[test]
fn the_older_busy_line_is_in_use_too() {
    let said = read_reset_output(&sample("gpu-reset-busy-older.txt"));
    assert_eq!(said.in_use.len(), 1);
}

#[test]
fn the_primary_gpu_refusal_is_neither_a_reset_nor_in_use() {
    let said = read_reset_output(&sample("gpu-reset-primary.txt"));
    assert!(said.reset.is_empty() && said.in_use.is_empty());
}

#[test]
fn the_information_file_gives_the_device_minor() {
    assert_eq!(
        device_minor(&sample("proc-driver-nvidia-information-1080ti.txt")).unwrap(),
        0
    );
    assert!(device_minor("Model: x\n").is_err());
}

/// The error of `topo -m` read from the sample `name` with its first `from` made `to`.
fn nvlinks_error(name: &str, from: &str, to: &str) -> String {
    let text = sample(name).replacen(from, to, 1);
    parse_nvlinks(&text).unwrap_err().to_string()
}

/// Each way a published `topo -m` broken by one edit is an error, one named case an edit: the
/// sample, what is replaced and by what, and what the error must say.
#[test]
fn a_matrix_broken_by_one_edit_is_an_error_saying_why() {
    let cases = [
        (
            "a_gpu_joined_to_itself_is_an_error_not_a_link",
            "topo-m-2x5090-tabs.txt",
            (" X ", "NV18"),
            "diagonal",
        ),
        (
            "an_x_off_the_diagonal_is_an_error",
            "topo-m-4x3090-nvlink-pairs.txt",
            ("NV4", "X"),
            "diagonal",
        ),
        (
            "a_header_naming_a_gpu_twice_is_an_error",
            "topo-m-2x5090-tabs.txt",
            ("GPU1", "GPU0"),
            "twice",
        ),
    ];
    for (case, name, (from, to), says) in cases {
        let error = nvlinks_error(name, from, to);
        assert!(error.contains(says), "case {case}: {error}");
    }
}

#[test]
fn a_header_naming_one_gpu_in_two_spellings_is_an_error_not_a_gpu_linked_to_itself() {
    // Found by fuzzing: `GPU02` and `GPU2` are one GPU, compared as the index they mean.
    let text = "\tGPU02\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n\
                GPU1\tPHB\t X \tNODE\t0-23\t0\n\
                GPU2\tNV4\tNODE\t X \t0-23\t0\n";
    let error = parse_nvlinks(text).unwrap_err();
    assert!(error.to_string().contains("twice"), "{error}");
}

#[test]
fn a_gpu_with_two_rows_is_an_error() {
    let text = sample("topo-m-2x5090-tabs.txt");
    let header_and_gpu0: Vec<&str> = text.lines().take(2).collect();
    let doubled = format!(
        "{}\n{}\n{}\n",
        header_and_gpu0[0],
        header_and_gpu0[1],
        text.lines().skip(1).collect::<Vec<_>>().join("\n")
    );
    let error = parse_nvlinks(&doubled).unwrap_err();
    assert!(error.to_string().contains("second row"), "{error}");
}
