//! mxctl's contract: its one table of exit codes, as the man page documents it, each code run (a
//! command that ends with it), and the error kinds a failure is reported with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::sync_host::SyncHost;

/// The man page's exit status (`Exit status: 0: done …; 1: …`) of `mxctl.1`, as
/// `(code, meaning)`.
fn documented() -> Vec<(i32, String)> {
    let dir = crate::generate::generate();
    let page = std::fs::read_to_string(dir.path().join("man/mxctl.1")).unwrap();
    let line = page
        .lines()
        .find_map(|line| line.strip_prefix("Exit status: "))
        .unwrap_or_else(|| panic!("no exit status in the man page:\n{page}"));
    line.trim_end_matches('.')
        .split("; ")
        .map(|entry| {
            let (code, meaning) = entry.split_once(": ").unwrap();
            (code.parse().unwrap(), meaning.to_owned())
        })
        .collect()
}

/// A layout file whose label `none` names GPU 7 alone, which a host of no GPU lacks.
fn nothing_here(host: &SyncHost) -> std::path::PathBuf {
    let layout = host.path("nothing.yaml");
    std::fs::write(
        &layout,
        "version: v1\nmig-configs:\n  none:\n    - devices: [7]\n      mig-enabled: false\n",
    )
    .unwrap();
    layout
}

/// `mxctl --json partition VERB --config LAYOUT --select none`, LAYOUT [`nothing_here`]'s.
fn partition_nothing_here(host: &SyncHost, verb: &str) -> (i32, serde_json::Value) {
    let layout = nothing_here(host);
    host.run(&[
        "partition",
        verb,
        "--config",
        layout.to_str().unwrap(),
        "--select",
        "none",
    ])
}

#[test]
fn every_documented_exit_code_is_what_a_command_ends_with() {
    let codes: Vec<i32> = documented().into_iter().map(|(code, _)| code).collect();
    assert_eq!(codes, [0, 1, 2, 3, 4], "{:?}", documented());
    let host = SyncHost::new();
    let layout = nothing_here(&host);
    let refused = host.path("refused.json");
    std::fs::write(&refused, "{\"format\": \"1.0\"}").unwrap();
    let layout = layout.to_str().unwrap();
    let cases: [(i32, &[&str]); 6] = [
        // done: a sync of a host without GPUs; an apply of a layout that names no GPU here.
        (0, &["sync"]),
        (
            0,
            &["partition", "apply", "--config", layout, "--select", "none"],
        ),
        // failed: a reply the reader refuses.
        (1, &["reply", "check", refused.to_str().unwrap()]),
        // the command line does not fit.
        (2, &["reset"]),
        // blocked, nothing changed: a process holds the simulated GPUs.
        (3, &["reset", "--device", "1", "--simulate", "busy"]),
        // a warm reset that did not work.
        (4, &["reset", "--device", "1", "--simulate", "error"]),
    ];
    for (code, args) in cases {
        let (ended, document) = host.run(args);
        assert_eq!(ended, code, "{args:?}: {document:#}");
    }
}

#[test]
fn an_assert_of_a_layout_that_names_no_gpu_here_says_so_and_never_that_it_is_applied() {
    let host = SyncHost::new();
    let (code, document) = partition_nothing_here(&host, "assert");
    assert_eq!(code, 0, "{document:#}");
    assert_eq!(
        (&document["outcome"], &document["applied"]),
        (&"nothing_named".into(), &false.into()),
        "{document:#}"
    );
}

#[test]
fn an_export_while_the_lock_is_held_fails_lock_busy_naming_the_holder() {
    let host = SyncHost::new();
    let _held = host.hold_lock();
    let (code, document) = host.run(&["partition", "export", "--lock-wait", "0.1"]);
    assert_eq!(code, 1, "{document:#}");
    assert_eq!(document["error"]["kind"], "lock_busy", "{document:#}");
    let message = document["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&std::process::id().to_string()),
        "{message}"
    );
}

#[test]
fn a_restore_that_did_not_run_prints_the_members_of_a_report_as_one_that_ran() {
    let host = SyncHost::new();
    let (_, applied) = partition_nothing_here(&host, "apply");
    let (code, restored) = host.run(&["partition", "restore"]);
    assert_eq!(
        (code, &restored["outcome"]),
        (3, &"nothing_declared".into()),
        "{restored:#}"
    );
    let keys = |document: &serde_json::Value| {
        let mut keys: Vec<String> = document.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let mut expected = keys(&applied);
    expected.extend(["restored".to_owned(), "why".to_owned()]);
    expected.sort();
    assert_eq!(keys(&restored), expected);
}
