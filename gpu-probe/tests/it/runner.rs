//! The process runner with real child programs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_host_probe::run::{
    OutputLimits, Run, RunResult, RunSpec, StartError, Stream, Termination, run,
};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

/// Runs a shell script of `body` under `deadline`; its directory goes once the run has ended.
fn run_script(body: &str, deadline: Duration) -> Run {
    let dir = tempfile::tempdir().unwrap();
    run(&RunSpec::new(script(dir.path(), "p", body), deadline))
}

/// The environment the child printed (`env`), one `NAME=value` a line, sorted.
fn sorted_env(run: Run) -> Vec<String> {
    let mut env: Vec<String> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    env.sort();
    env
}

#[test]
fn a_clean_exit_gives_its_output_and_code() {
    let run = run_script("echo out; echo err >&2; exit 3", SECOND);
    assert_eq!(run.result, RunResult::Exited(3));
    assert_eq!(
        (run.stdout.as_slice(), run.stderr.as_slice()),
        (&b"out\n"[..], &b"err\n"[..])
    );
}

#[test]
fn the_child_sees_only_path_and_lang() {
    let env = sorted_env(run(&RunSpec::new("/usr/bin/env", SECOND)));
    assert_eq!(env, ["LANG=C", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"]);
}

#[test]
fn variables_given_are_added_and_path_and_lang_stay_the_runners() {
    let spec = RunSpec::new("/usr/bin/env", SECOND)
        .env("MXCTL_HOOK", "pre-apply-mode")
        .env("PATH", "/tmp/evil")
        .env("LANG", "xx");
    let env = sorted_env(run(&spec));
    assert_eq!(
        env,
        [
            "LANG=C",
            "MXCTL_HOOK=pre-apply-mode",
            "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
        ]
    );
}

#[test]
fn the_child_runs_in_its_own_process_group() {
    let run = run_script("cut -d' ' -f5 /proc/$$/stat; echo $$", SECOND);
    let text = String::from_utf8(run.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], lines[1],
        "process group is not the child's own pid"
    );
}

#[test]
fn a_bare_name_is_looked_up_in_the_childs_path() {
    let run = run(&RunSpec::new("true", SECOND));
    assert_eq!(run.result, RunResult::Exited(0));
}

#[test]
fn a_program_that_does_not_exist_is_never_forked() {
    let run = run(&RunSpec::new("/nonexistent/helper", SECOND));
    assert!(matches!(
        run.result,
        RunResult::CouldNotStart(StartError::Absent { .. })
    ));
    assert_eq!(run.pid, None);
}

#[test]
fn a_file_without_the_execute_bit_is_never_forked() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let program = script(dir.path(), "p", &format!("touch {}", marker.display()));
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let run = run(&RunSpec::new(program, SECOND));
    assert!(matches!(
        run.result,
        RunResult::CouldNotStart(StartError::NotExecutable { .. })
    ));
    assert_eq!(run.pid, None);
    assert!(!marker.exists());
}

#[test]
fn a_directory_is_not_executable() {
    let run = run(&RunSpec::new("/usr/bin", SECOND));
    assert!(matches!(
        run.result,
        RunResult::CouldNotStart(StartError::NotExecutable { .. })
    ));
}

#[test]
fn a_file_that_exec_refuses_could_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("garbage");
    std::fs::write(&program, [0x7f, b'E', b'L', b'F', 0, 0, 0]).unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let run = run(&RunSpec::new(program, SECOND));
    assert!(
        matches!(
            run.result,
            RunResult::CouldNotStart(StartError::SpawnFailed { .. })
        ),
        "{:?}",
        run.result
    );
}

#[test]
fn a_hanging_child_times_out_within_its_deadline_plus_the_grace() {
    let run = run_script("exec sleep 60", Duration::from_millis(200));
    assert_eq!(run.result, RunResult::TimedOut);
    assert!(gone(run.pid.unwrap()));
}

#[test]
fn a_child_that_ignores_sigterm_is_killed_after_the_grace() {
    let run = run_script(
        // It ends by itself after 30 s, so a kill that never came fails the test (exited)
        // rather than hanging it.
        "trap '' TERM; i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        Duration::from_millis(200),
    );
    assert_eq!(run.result, RunResult::TimedOut);
    assert!(
        run.elapsed >= Duration::from_millis(700),
        "{:?}",
        run.elapsed
    );
}

#[test]
fn a_grandchild_holding_stdout_after_the_child_exits_is_a_leak_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild");
    let program = script(
        dir.path(),
        "p",
        &format!(
            "echo answer; sleep 60 & echo $! > {}; exit 0",
            pidfile.display()
        ),
    );
    let run = run(&RunSpec::new(program, Duration::from_secs(5)));
    assert_eq!(run.result, RunResult::LeakedPipes(Termination::Exited(0)));
    assert_eq!(run.stdout, b"answer\n");
    assert!(gone(pid_in(&pidfile)), "grandchild left behind");
}

#[test]
fn a_child_killed_by_a_signal_reports_the_signal() {
    assert_eq!(
        run_script("kill -SEGV $$", SECOND).result,
        RunResult::Signaled(11)
    );
}

#[test]
fn a_flood_on_stdout_is_stopped_at_the_cap() {
    let run = run(&RunSpec::new("/usr/bin/yes", Duration::from_secs(5))
        .limits(OutputLimits::new(1 << 20, 1024)));
    assert_eq!(run.result, RunResult::OutputTooLarge(Stream::Stdout));
    assert_eq!(run.stdout.len(), 1 << 20);
}

#[test]
fn a_flood_on_stderr_is_stopped_at_its_own_cap() {
    let run = run_script("exec yes >&2", Duration::from_secs(5));
    assert_eq!(run.result, RunResult::OutputTooLarge(Stream::Stderr));
    assert_eq!(run.stderr.len(), 64 << 10);
}

#[test]
fn both_pipes_are_drained_while_waiting_so_a_chatty_child_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    // 512 KiB on stderr before anything on stdout: more than a pipe holds.
    let program = script(
        dir.path(),
        "p",
        "head -c 524288 /dev/zero >&2; head -c 524288 /dev/zero; exit 0",
    );
    let spec =
        RunSpec::new(program, Duration::from_secs(5)).limits(OutputLimits::new(1 << 20, 1 << 20));
    let run = run(&spec);
    assert_eq!(run.result, RunResult::Exited(0));
    assert_eq!((run.stdout.len(), run.stderr.len()), (524_288, 524_288));
}

#[test]
fn a_child_that_closes_its_pipes_but_keeps_running_still_times_out() {
    let run = run_script("exec >&- 2>&-; sleep 60", Duration::from_millis(200));
    assert_eq!(run.result, RunResult::TimedOut);
}

#[test]
fn the_input_given_is_what_the_child_reads_on_stdin() {
    let run = run(&RunSpec::new("/bin/cat", SECOND).stdin(&b"{\"steps\": []}\n"[..]));
    assert_eq!(run.result, RunResult::Exited(0));
    assert_eq!(run.stdout, b"{\"steps\": []}\n");
}

#[test]
fn a_child_that_never_reads_its_large_input_does_not_hang_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let program = script(dir.path(), "p", "echo done");
    // Were the run to hang on the unread input, its deadline would end it: timed out.
    let run = run(&RunSpec::new(program, SECOND).stdin(vec![b'x'; 4 << 20]));
    assert_eq!(run.result, RunResult::Exited(0));
}

#[test]
fn without_input_stdin_is_empty() {
    let run = run(&RunSpec::new("/bin/cat", SECOND));
    assert_eq!((run.result, run.stdout), (RunResult::Exited(0), Vec::new()));
}

#[test]
fn a_run_cancelled_from_another_thread_is_ended_as_its_deadline_would_end_it() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let program = script(
        dir.path(),
        "p",
        &format!("touch '{}'; exec sleep 3600", started.display()),
    );
    let cancel = gpu_host_probe::Cancel::new();
    let spec = RunSpec::new(program, Duration::from_secs(3600)).cancel(cancel.clone());
    let ran = std::thread::scope(|scope| {
        let running = scope.spawn(|| run(&spec));
        while !started.exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
        cancel.cancel();
        running.join().unwrap()
    });
    assert_eq!(ran.result, RunResult::Cancelled);
}

#[test]
fn a_run_asked_for_once_cancelled_is_never_started() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let program = script(dir.path(), "p", &format!("touch '{}'", started.display()));
    let cancel = gpu_host_probe::Cancel::new();
    cancel.cancel();
    let ran = run(&RunSpec::new(program, SECOND).cancel(cancel));
    assert_eq!((ran.result, ran.pid), (RunResult::Cancelled, None));
    assert!(!started.exists());
}

#[test]
fn a_relative_program_path_is_never_run_whatever_the_working_directory_holds() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    script(
        dir.path(),
        "hook.sh",
        &format!("touch {}", marker.display()),
    );
    // The runner's working directory is this test's; a relative path is refused before any
    // lookup, whatever directory the process happens to be in.
    let run = run(&RunSpec::new("./hook.sh", SECOND));
    assert!(
        matches!(&run.result, RunResult::CouldNotStart(StartError::RelativePath { program }) if program.as_os_str() == "./hook.sh"),
        "{}",
        run.result
    );
    assert!(!marker.exists());
}

#[test]
fn each_end_of_a_run_is_a_typed_end_in_json() {
    let untrusted = RunResult::CouldNotStart(StartError::RelativePath {
        program: "bin/h".into(),
    });
    let ends = [
        RunResult::Exited(1),
        RunResult::TimedOut,
        RunResult::LeakedPipes(Termination::Exited(0)),
        untrusted,
    ];
    let json: Vec<serde_json::Value> = ends
        .iter()
        .map(|end| serde_json::to_value(end).unwrap())
        .collect();
    assert_eq!(json[0], serde_json::json!({"end": "exited", "code": 1}));
    assert_eq!(json[1], serde_json::json!({"end": "timed_out"}));
    assert_eq!(json[2], serde_json::json!({"end": "pipes_held", "code": 0}));
    assert_eq!(
        (json[3]["end"].as_str(), json[3]["cause"].as_str()),
        (Some("not_started"), Some("relative_path"))
    );
}
