//! `--lock-dir` and `--machine-lock-dir` on the machine's own sysfs: one directory of the
//! machine's locks, another refused unless named as the machine's. Nothing here writes to the
//! machine's own directory of locks (a refusal only looks at it).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

/// `mxctl --json ARGS…` on the real `/sys` and `/proc`, with its state in `state`.
fn on_this_machine(state: &Path, args: &[&std::ffi::OsStr]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mxctl"));
    command
        .args(["--config", "/dev/null", "--json", "--state-dir"])
        .arg(state)
        .args(args);
    command
}

#[test]
fn a_lock_directory_that_is_not_the_machines_is_refused_naming_it_before_any_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    let locks = dir.path().join("locks");
    let state = dir.path().join("state");
    let (code, document) = crate::common::run_json(on_this_machine(
        &state,
        &["--lock-dir".as_ref(), locks.as_os_str(), "status".as_ref()],
    ));
    assert_eq!(code, 1, "{document:#}");
    assert_eq!(document["error"]["kind"], "lock", "{document:#}");
    let message = document["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("refusing the lock directory {}", locks.display())),
        "{message}"
    );
    assert!(!locks.exists() && !state.exists());
}

#[test]
fn a_lock_directory_named_as_the_machines_is_the_one_whose_lock_it_takes() {
    let dir = tempfile::tempdir().unwrap();
    let mounted = dir.path().join("host-run");
    // The host's processes hold the machine's lock in the directory this mxctl sees mounted.
    let _held = gpu_host_probe::test_util::machine_host(dir.path().join("host"), &mounted)
        .try_lock()
        .unwrap();
    let (code, document) = crate::common::run_json(on_this_machine(
        &dir.path().join("state"),
        &[
            "--machine-lock-dir".as_ref(),
            mounted.as_os_str(),
            "probe".as_ref(),
            "--device".as_ref(),
            "0000:3b:00.0".as_ref(),
            "--lock-wait".as_ref(),
            "1".as_ref(),
        ],
    ));
    assert_eq!(code, 1, "{document:#}");
    assert_eq!(document["error"]["kind"], "lock_busy", "{document:#}");
    let message = document["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&mounted.join("sys.lock").display().to_string()),
        "{message}"
    );
}

#[test]
fn a_lock_directory_and_one_named_as_the_machines_are_not_both_taken() {
    let dir = tempfile::tempdir().unwrap();
    let output = on_this_machine(
        &dir.path().join("state"),
        &[
            "--lock-dir".as_ref(),
            dir.path().join("a").as_os_str(),
            "--machine-lock-dir".as_ref(),
            dir.path().join("b").as_os_str(),
            "status".as_ref(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("cannot be used with"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
