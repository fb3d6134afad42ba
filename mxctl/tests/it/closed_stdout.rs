//! A reader that has gone (`mxctl --json gpus | head -c 100`): what it did not read is dropped
//! and mxctl ends quietly with the command's own exit status, never a panic (exit 101). Each
//! test hands mxctl a pipe whose read end is closed before mxctl starts, so its first write
//! fails (`EPIPE`) every time, whatever the timing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::machine::Machine;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The write end of a pipe nobody reads: the read end is closed before the child exists.
fn closed_pipe() -> OwnedFd {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    writer
}

/// Runs `command` with its stdout a pipe nobody reads; its stderr is kept.
fn with_stdout_closed(mut command: Command) -> Output {
    command
        .stdout(Stdio::from(closed_pipe()))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// Asserts that mxctl ended by itself with `code` and said nothing of a panic.
fn ended_quietly(output: &Output, code: i32) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{:?}: {stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("internal error"), "{stderr}");
}

/// A host with two NVIDIA GPUs, so `gpus` has rows to print.
fn two_gpus() -> Machine {
    let machine = Machine::new();
    machine
        .sysfs
        .nvidia("0000:3b:00.0", Some("nvidia"))
        .unwrap()
        .nvidia("0000:86:00.0", Some("nvidia"))
        .unwrap();
    machine
}

#[test]
fn gpus_as_json_to_a_reader_that_has_gone_exits_0_without_a_panic() {
    let machine = two_gpus();
    ended_quietly(&with_stdout_closed(machine.mxctl(&["gpus"])), 0);
}

#[test]
fn gpus_as_text_to_a_reader_that_has_gone_exits_0_without_a_panic() {
    let machine = two_gpus();
    let mut command = machine.mxctl_configured(Path::new("/dev/null"));
    command.arg("gpus");
    ended_quietly(&with_stdout_closed(command), 0);
}

#[test]
fn the_long_help_to_a_reader_that_has_gone_exits_0_without_a_panic() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mxctl"));
    command.arg("--help");
    ended_quietly(&with_stdout_closed(command), 0);
}

#[test]
fn a_failure_to_a_reader_that_has_gone_keeps_its_exit_code_and_its_message_on_stderr() {
    let machine = Machine::new();
    // `reset` without `--device`: a usage failure, whose JSON document cannot be written.
    let output = with_stdout_closed(machine.mxctl(&["reset"]));
    ended_quietly(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("reset needs --device"), "{stderr}");
}

#[test]
fn a_failure_with_stdout_and_stderr_both_gone_still_exits_with_its_own_code() {
    let machine = Machine::new();
    let writer = closed_pipe();
    let status = machine
        .mxctl(&["reset"])
        .stdout(Stdio::from(writer.try_clone().unwrap()))
        .stderr(Stdio::from(writer))
        .status()
        .unwrap();
    // A panic would exit 101 (or abort, with no code, on a panic inside the panic hook).
    assert_eq!(status.code(), Some(2), "{status:?}");
}

#[test]
fn a_reset_whose_progress_lines_find_no_reader_runs_to_its_end() {
    let machine = Machine::new();
    let mut command = machine.mxctl_configured(Path::new("/dev/null"));
    command.args(["reset", "--simulate", "ok", "--device", "1"]);
    ended_quietly(&with_stdout_closed(command), 0);
    let host = gpu_host_probe::Host::new(machine.path("state")).simulated();
    let journal = warm_reset::read_journal(&host).unwrap();
    assert!(journal.in_flight.is_none(), "the reset stopped half way");
    assert_eq!(
        journal.last.map(|last| last.outcome),
        Some(warm_reset::ResetOutcome::Done)
    );
}
