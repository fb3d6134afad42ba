//! The call log (`FAKE_NVML_LOG`) as tests count from it: processes that call the fake at once
//! each leave their lines whole, never one run into another.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::scenarios::A100_MIG_ON_CARVED;
use fake_nvml::support::{Build, helper_wrapper};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const HELPERS: usize = 8;
/// Rounds of eight at once, each started together, into one log.
const ROUNDS: usize = 4;

/// A helper over the fake on a carved A100, logging to `dir/calls.log`, that starts once the
/// file its first argument names exists (so that helpers started together call the fake at the
/// same moments, where a line written in pieces would be cut by another's).
fn helper(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let log = dir.join("calls.log");
    let wrapper = helper_wrapper(dir, A100_MIG_ON_CARVED, Build::Current, Some(&log)).unwrap();
    let held = dir.join("held-helper");
    let script = format!(
        "#!/bin/sh\ngo=$1\nshift\nwhile [ ! -e \"$go\" ]; do :; done\nexec '{wrapper}' \"$@\"\n",
        wrapper = wrapper.display(),
    );
    gpu_host_probe::test_util::write_executable(&held, &script).unwrap();
    (held, log)
}

/// `helper read` of the card, started, to run once `go` exists (its output not read: nothing
/// to block on).
fn read(wrapper: &Path, go: &Path) -> std::process::Child {
    Command::new(wrapper)
        .arg(go)
        .args(["read", "--device", "0000:3b:00.0", "--format", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// One whole entry: an NVML function's name, then its arguments, none of them another call.
fn is_one_entry(line: &str) -> bool {
    let mut words = line.split(' ');
    let name = words.next().unwrap_or_default();
    name.strip_prefix("nvml").is_some_and(|rest| {
        !rest.is_empty()
            && !rest.contains("nvml")
            && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    }) && words.all(|word| !word.is_empty() && !word.contains("nvml"))
}

#[test]
fn eight_helpers_reading_at_once_leave_a_call_log_of_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let (alone, alone_log) = helper(&dir.path().join("alone"));
    let go = dir.path().join("go-alone");
    std::fs::write(&go, "").unwrap();
    assert!(read(&alone, &go).wait().unwrap().success());
    let one_read = lines(&alone_log);
    assert!(
        one_read.iter().all(|line| is_one_entry(line)),
        "{one_read:?}"
    );
    assert!(one_read.len() > 10, "{one_read:?}");

    let (wrapper, log) = helper(&dir.path().join("together"));
    for round in 0..ROUNDS {
        let go = dir.path().join(format!("go-{round}"));
        let children: Vec<_> = (0..HELPERS).map(|_| read(&wrapper, &go)).collect();
        std::fs::write(&go, "").unwrap();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
    }
    let mut together = lines(&log);
    let broken: Vec<&String> = together.iter().filter(|line| !is_one_entry(line)).collect();
    assert!(
        broken.is_empty(),
        "{} broken lines: {broken:?}",
        broken.len()
    );
    let mut expected: Vec<String> = std::iter::repeat_n(one_read, HELPERS * ROUNDS)
        .flatten()
        .collect();
    together.sort();
    expected.sort();
    assert_eq!(together, expected, "each read's lines, once a read");
}
