//! Root trusts nothing another user can change: a planted link never makes `mxctl` write or
//! read through it, a shared state directory is refused, and a config file or a program that
//! another user could have written is refused and never run. CI runs as root; the ownership
//! cases give files to `nobody` (uid 65534) and are skipped, saying so, without root.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::Host as MetaxHost;
use common::sync_host::SyncHost;
use gpu_host_probe::test_util::FakeHelper;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

const NOBODY: u32 = 65534;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn give_to_nobody(path: &Path) {
    nix::unistd::chown(path, Some(nix::unistd::Uid::from_raw(NOBODY)), None).unwrap();
}

/// A victim file outside the state directory, and a link to it planted at `link`.
fn plant(dir: &Path, link: &Path) -> std::path::PathBuf {
    let victim = dir.join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    symlink(&victim, link).unwrap();
    victim
}

/// Asserts that a victim of [`plant`] still holds what it held.
#[track_caller]
fn assert_untouched(victim: &Path) {
    assert_eq!(std::fs::read_to_string(victim).unwrap(), "precious\n");
}

fn error_of(stdout: &[u8]) -> (String, String) {
    let document: serde_json::Value = serde_json::from_slice(stdout).unwrap();
    (
        document["error"]["kind"].as_str().unwrap().to_owned(),
        document["error"]["message"].as_str().unwrap().to_owned(),
    )
}

/// Runs `command`, which must fail (exit 1), and answers its error's kind and message.
#[track_caller]
fn failure(command: &mut Command) -> (String, String) {
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    error_of(&output.stdout)
}

fn private_state(host: &SyncHost) -> std::path::PathBuf {
    let state = host.path("state");
    std::fs::create_dir(&state).unwrap();
    chmod(&state, 0o700);
    state
}

#[test]
fn a_link_planted_as_the_lock_file_leaves_its_target_untouched_and_fails_clearly() {
    let host = SyncHost::new();
    let state = private_state(&host);
    let victim = plant(host.dir.path(), &state.join("host-gpu.lock"));
    let (kind, message) = failure(&mut host.command(&["sync"]));
    assert_eq!(kind, "lock");
    assert!(
        message.contains("host-gpu.lock") && message.contains("symbolic link"),
        "{message}"
    );
    assert_untouched(&victim);
}

#[test]
fn a_link_planted_as_the_state_file_leaves_its_target_untouched_and_fails_clearly() {
    let host = SyncHost::new();
    let state = private_state(&host);
    let victim = plant(host.dir.path(), &state.join("state.json"));
    let (_, message) = failure(&mut host.command(&["sync"]));
    assert!(
        message.contains("state.json") && message.contains("symbolic link"),
        "{message}"
    );
    assert_untouched(&victim);
    assert!(
        std::fs::symlink_metadata(state.join("state.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_link_planted_as_the_reset_journal_leaves_its_target_untouched_and_fails_clearly() {
    let host = SyncHost::new();
    let state = private_state(&host);
    let simulated = state.join("simulated");
    std::fs::create_dir(&simulated).unwrap();
    chmod(&simulated, 0o700);
    let victim = plant(host.dir.path(), &simulated.join("warm-reset-journal.json"));
    let (kind, message) =
        failure(&mut host.command(&["reset", "--simulate", "ok", "--device", "1"]));
    assert_eq!(kind, "reset");
    assert!(message.contains("symbolic link"), "{message}");
    assert_untouched(&victim);
}

#[test]
fn a_link_planted_as_the_metrics_file_leaves_its_target_untouched_and_fails_clearly() {
    let host = SyncHost::new();
    private_state(&host);
    let out = host.path("out");
    std::fs::create_dir(&out).unwrap();
    let victim = plant(host.dir.path(), &out.join("mxctl.prom"));
    let output = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(["--config", "/dev/null", "--state-dir"])
        .arg(host.path("state"))
        // On the real `/sys`: the test's own directory, named as the machine's.
        .arg("--machine-lock-dir")
        .arg(host.path("locks"))
        .args(["metrics", "--output"])
        .arg(out.join("mxctl.prom"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_untouched(&victim);
}

#[test]
fn a_state_directory_writable_by_others_is_refused_and_nothing_is_written() {
    let host = SyncHost::new();
    let state = host.path("state");
    std::fs::create_dir(&state).unwrap();
    chmod(&state, 0o1777);
    for args in [
        &["sync"][..],
        &["status"],
        &["reset", "--simulate", "ok", "--device", "1"],
    ] {
        let output = host.command(args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let (kind, message) = error_of(&output.stdout);
        assert_eq!(kind, "unsafe_state_dir", "{args:?}");
        assert!(message.contains("writable by others"), "{message}");
    }
    assert_eq!(std::fs::read_dir(&state).unwrap().count(), 0);
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_state_directory_owned_by_another_user_is_refused() {
    common::require_root();
    let host = SyncHost::new();
    let state = private_state(&host);
    give_to_nobody(&state);
    let output = host.command(&["sync"]).output().unwrap();
    let (kind, message) = error_of(&output.stdout);
    assert_eq!(
        (output.status.code(), kind.as_str()),
        (Some(1), "unsafe_state_dir")
    );
    assert!(message.contains("owned by uid 65534"), "{message}");
}

#[test]
fn a_new_state_directory_is_private() {
    let host = SyncHost::new();
    let (code, _) = host.run(&["sync"]);
    assert_eq!(code, 0);
    let mode = std::fs::metadata(host.path("state"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn a_config_file_writable_by_others_is_refused_and_nothing_is_done() {
    let host = SyncHost::new();
    let config = host.path("mxctl.conf");
    std::fs::write(&config, "gpu-partitioning = enabled\n").unwrap();
    chmod(&config, 0o666);
    let (kind, message) = failure(
        Command::new(env!("CARGO_BIN_EXE_mxctl"))
            .arg("--config")
            .arg(&config)
            .args(["--json", "--state-dir"])
            .arg(host.path("state"))
            .arg("--lock-dir")
            .arg(host.path("locks"))
            .arg("sync"),
    );
    assert_eq!(kind, "unsafe_config");
    assert!(message.contains("writable by others"), "{message}");
    assert!(!host.path("state").exists());
}

/// Syncs with the pool on and one NVIDIA GPU, reading it with `helper`.
fn sync_with(host: &SyncHost, helper: &Path) -> serde_json::Value {
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    host.synced(helper)
}

/// A fake helper written in the host's directory `name`: the directory, and the helper.
fn helper_in(host: &SyncHost, name: &str) -> (PathBuf, PathBuf) {
    let dir = host.path(name);
    let helper = FakeHelper::new(&dir).write().unwrap();
    (dir, helper)
}

/// A sync through a fake helper in the host's directory `name`, once `spoil` (given the
/// directory and the helper) has made it unsafe: the host is helper_unavailable, the card
/// helper_unsafe, and the helper never ran.
fn assert_unsafe_helper_never_runs(name: &str, spoil: impl FnOnce(&Path, &Path)) {
    let host = SyncHost::new();
    let (dir, helper) = helper_in(&host, name);
    spoil(&dir, &helper);
    let sync = sync_with(&host, &helper);
    assert_eq!(sync["status"], "inactive", "{sync}");
    assert_eq!(sync["reason"], "helper_unavailable", "{sync}");
    assert_eq!(sync["gpus"][0]["reason"], "helper_unsafe", "{sync}");
    assert_eq!(FakeHelper::calls(&dir), Vec::<String>::new());
}

#[test]
fn a_helper_writable_by_others_is_never_run_and_is_helper_unsafe() {
    assert_unsafe_helper_never_runs("helper", |_, helper| chmod(helper, 0o777));
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_helper_owned_by_another_user_is_never_run_and_is_helper_unsafe() {
    common::require_root();
    assert_unsafe_helper_never_runs("helper", |_, helper| give_to_nobody(helper));
}

#[test]
fn a_helper_in_a_directory_writable_by_others_is_never_run_and_is_helper_unsafe() {
    assert_unsafe_helper_never_runs("open", |dir, _| chmod(dir, 0o777));
}

#[test]
fn the_probe_reports_an_unsafe_helper_as_helper_unsafe() {
    let host = SyncHost::new();
    let (dir, helper) = helper_in(&host, "helper");
    chmod(&helper, 0o777);
    let (code, probe) = host.probe(&helper, &[]);
    assert_eq!(code, 0);
    assert_eq!(probe["gpus"][0]["reason"], "helper_unsafe", "{probe}");
    assert_eq!(FakeHelper::calls(&dir), Vec::<String>::new());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_helper_in_a_root_owned_sticky_directory_runs() {
    common::require_root();
    let host = SyncHost::new();
    let (dir, helper) = helper_in(&host, "sticky");
    chmod(&dir, 0o1777);
    let sync = sync_with(&host, &helper);
    assert_eq!(sync["gpus"][0]["partition_mode"], "enabled", "{sync}");
    assert!(!FakeHelper::calls(&dir).is_empty());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_unsafe_mx_smi_blocks_the_reset_with_unsafe_program_and_is_never_run() {
    common::require_root();
    let host = MetaxHost::new();
    chmod(&host.path("bin/mx-smi"), 0o777);
    let document = common::blocked(host.reset(&["--device", "1"]), "unsafe_program");
    assert!(
        document["detail"]
            .as_str()
            .unwrap()
            .contains("writable by others"),
        "{document}"
    );
    assert!(host.calls().is_empty(), "{:?}", host.calls());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_unsafe_nvidia_smi_blocks_the_reset_with_unsafe_program_and_is_never_run() {
    common::require_root();
    let host = common::nvidia_host::NvidiaHost::new();
    give_to_nobody(&host.path("bin/nvidia-smi"));
    let (code, document) = host.reset(&["--device", "0"]);
    assert_eq!(code, 3, "{document}");
    assert_eq!(document["reason"], "unsafe_program", "{document}");
    assert!(!host.path("bin/calls").exists());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_unsafe_link_command_blocks_the_plan_step_with_unsafe_program_and_is_never_run() {
    common::require_root();
    let pool = common::pool::Pool::new();
    chmod(&pool.top.path().join("links"), 0o777);
    let plan = pool.plan();
    let (code, report) = pool.step(&plan, "h1", 3);
    assert_eq!(code, 3, "{report}");
    assert_eq!(report["actions"][0]["reason"], "unsafe_program", "{report}");
    assert!(
        report["actions"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("writable by others"),
        "{report}"
    );
    assert!(pool.records().iter().all(|(_, _, links)| links.is_empty()));
}
