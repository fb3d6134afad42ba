//! The rules of a sync that a crash, a boot, a lock or a missing boot id put to the test, each
//! through `mxctl` (`docs/sync.md`, "The rules of one sync").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use gpu_host_probe::test_util::Act;

use common::sync_host::SyncHost as Host;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Waits for `done` (up to two minutes: a bound for a test that would otherwise hang, not a
/// measure of speed).
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(120), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn mode_in_state_file(host: &Host, bdf: &str) -> Option<String> {
    let text = std::fs::read_to_string(host.path("state/state.json")).ok()?;
    let state: serde_json::Value = serde_json::from_str(&text).ok()?;
    state["gpus"][bdf]["partition_mode"]
        .as_str()
        .map(str::to_owned)
}

/// A helper that answers `--version`, then hangs on every read after noting its pid.
fn hanging_helper(host: &Host) -> String {
    host.helper(|h| {
        h.every_read(Act::Shell(
            r#"echo $$ > "$(dirname "$0")/read-pid"; exec sleep 60"#.to_owned(),
        ))
    })
    .to_str()
    .unwrap()
    .to_owned()
}

fn spawn(host: &Host, args: &[&str]) -> Child {
    host.command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn kill_reader(host: &Host) {
    if let Ok(pid) = std::fs::read_to_string(host.path("read-pid")) {
        let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    }
}

/// A sync with the pool on, once its helper is reading a card and hangs there.
fn sync_stuck_in_a_read(host: &Host) -> Child {
    let helper = hanging_helper(host);
    let sync = spawn(
        host,
        &[
            "sync",
            "--pool",
            "enabled",
            "--deadline",
            "60",
            "--helper",
            &helper,
        ],
    );
    wait_for("the helper to read", || host.path("read-pid").exists());
    sync
}

/// `kill -9` of `sync` in the middle of its read, and of the reader it leaves behind.
fn kill_mid_read(host: &Host, mut sync: Child) {
    sync.kill().unwrap();
    sync.wait().unwrap();
    kill_reader(host);
}

#[test]
fn every_card_to_read_is_written_unknown_before_the_helper_reads_it() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    host.sysfs.nvidia("0000:3c:00.0", Some("nvidia")).unwrap();
    let good = host.nvml_helper(&["0000:3b:00.0", "0000:3c:00.0"]);
    host.sync_enabled(&good);
    assert_eq!(
        mode_in_state_file(&host, "0000:3c:00.0").as_deref(),
        Some("enabled")
    );
    let sync = sync_stuck_in_a_read(&host);
    let modes: Vec<Option<String>> = ["0000:3b:00.0", "0000:3c:00.0"]
        .iter()
        .map(|bdf| mode_in_state_file(&host, bdf))
        .collect();
    kill_mid_read(&host, sync);
    assert_eq!(modes, [Some("unknown".into()), Some("unknown".into())]);
}

#[test]
fn a_crash_during_a_read_then_a_boot_with_the_pool_off_never_clears_a_divided_gpu() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let good = host.nvml_helper(&["0000:3b:00.0"]);
    let (_, first) = host.sync_enabled(&good);
    assert_eq!(first["gpus"][0]["partition_mode"], "enabled");
    // kill -9 while the card is being read: the state holds the `unknown` written before it.
    let sync = sync_stuck_in_a_read(&host);
    kill_mid_read(&host, sync);
    assert_eq!(
        mode_in_state_file(&host, "0000:3b:00.0").as_deref(),
        Some("unknown")
    );
    host.reboot();
    let (code, after) = host.run(&["sync", "--pool", "disabled"]);
    assert_eq!(code, 0);
    assert_eq!(after["after_boot"], true);
    assert_eq!(
        (
            after["gpus"][0]["partition_mode"].as_str(),
            after["gpus"][0]["reason"].as_str()
        ),
        (Some("possibly_enabled"), Some("read_interrupted"))
    );
    assert_eq!(
        (after["status"].as_str(), after["reason"].as_str()),
        (Some("leaving"), Some("gpus_still_divided"))
    );
}

fn without_boot_id(host: &Host) {
    std::fs::remove_file(host.path("proc/sys/kernel/random/boot_id")).unwrap();
}

fn boot_time(host: &Host, btime: u64) {
    std::fs::write(
        host.path("proc/stat"),
        format!("cpu  10 0 20 3000 0 0 0 0 0 0\nintr 1\nctxt 9\nbtime {btime}\nprocesses 77\n"),
    )
    .unwrap();
}

#[test]
fn without_a_boot_id_the_boot_time_tells_the_first_start_after_a_boot() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    without_boot_id(&host);
    boot_time(&host, 1_767_225_600);
    let after_boot = |host: &Host| host.run(&["sync"]).1["after_boot"].clone();
    assert_eq!(after_boot(&host), true);
    assert_eq!(after_boot(&host), false);
    assert_eq!(after_boot(&host), false);
    let state = std::fs::read_to_string(host.path("state/state.json")).unwrap();
    assert!(
        state.contains("\"boot_time\": 1767225600") && !state.contains("boot_id"),
        "{state}"
    );
    boot_time(&host, 1_767_312_000);
    assert_eq!(after_boot(&host), true);
    assert_eq!(after_boot(&host), false);
}

#[test]
fn with_neither_boot_id_nor_boot_time_a_start_is_the_same_boot_and_says_so() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    without_boot_id(&host);
    for _ in 0..2 {
        let output = host.command(&["sync"]).output().unwrap();
        let sync: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(sync["after_boot"], false);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("taken as the same boot"), "{stderr}");
    }
}

#[test]
fn a_host_with_no_gpu_to_read_forks_no_helper_and_is_ready() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("vfio-pci")).unwrap();
    host.sysfs.nvidia("0000:3c:00.0", None).unwrap();
    let helper = host.helper(|h| h);
    let sync = host.synced(&helper);
    assert_eq!(host.helper_calls(), Vec::<String>::new());
    assert_eq!(
        (sync["status"].as_str(), sync["reason"].as_str()),
        (Some("active"), Some("ready"))
    );
    // An absent helper does not matter either: it is not used.
    let (_, absent) = host.run(&[
        "sync",
        "--pool",
        "enabled",
        "--helper",
        "/nonexistent/helper",
    ]);
    assert_eq!(absent["reason"], "ready");
}

#[test]
fn with_the_pool_off_no_helper_is_forked() {
    let host = Host::new();
    host.sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let helper = host.helper(|h| h);
    let (code, sync) = host.sync_pool("disabled", &helper);
    assert_eq!(code, 0);
    assert_eq!(sync["reason"], "pool_disabled");
    assert_eq!(host.helper_calls(), Vec::<String>::new());
}

#[test]
fn the_probe_waits_for_a_held_host_lock_before_it_reads_any_card() {
    let host = Host::new();
    let helper = host.helper(|h| h);
    let held = host.hold_lock();
    let probe = host
        .probe_command(&helper, &[])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        host.helper_calls(),
        Vec::<String>::new(),
        "read under a held lock"
    );
    drop(held);
    let output = probe.wait_with_output().unwrap();
    assert!(output.status.success());
    assert_eq!(host.helper_calls().len(), 2);
}

#[test]
fn the_probe_refuses_a_lock_held_past_its_wait_and_runs_nothing() {
    let host = Host::new();
    let helper = host.helper(|h| h);
    let _held = host.hold_lock();
    let started = Instant::now();
    let (code, document) = host.probe(&helper, &["--lock-wait", "0.5"]);
    assert_eq!(
        (code, document["error"]["kind"].as_str()),
        (1, Some("lock_busy"))
    );
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_eq!(host.helper_calls(), Vec::<String>::new());
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn the_probe_never_reads_a_card_inside_a_warm_resets_window() {
    common::require_root();
    let reset = common::Host::in_mode("slow2");
    let host = Host::new();
    // At each read, the helper keeps what the reset's mx-smi had done by then.
    let helper = host.helper(|h| {
        h.every_read(Act::Shell(format!(
            "cp {} {}",
            reset.path("bin/calls").display(),
            host.path("reset-calls-at-read").display()
        )))
    });
    let mut running = reset
        .command(&["--device", "1"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the reset to be issued", || reset.resets() == 1);
    let probe = Command::new(env!("CARGO_BIN_EXE_mxctl"))
        .args(["--config", "/dev/null", "--json", "--state-dir"])
        .arg(reset.path("state"))
        // The reset's machine: its tree, and its directory of locks.
        .arg("--sysfs-root")
        .arg(reset.sysfs.root())
        .arg("--lock-dir")
        .arg(reset.path("locks"))
        .args([
            "probe",
            "--device",
            "0000:3b:00.0",
            "--helper",
            helper.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(running.wait().unwrap().success());
    assert!(probe.status.success());
    assert_eq!(host.helper_calls().len(), 2);
    // When the card was read, the reset had ended: issued, listed, topology verified.
    let at_read = std::fs::read_to_string(host.path("reset-calls-at-read")).unwrap();
    assert!(at_read.ends_with("-r -i 1\n-L\ntopo -m\n"), "{at_read}");
}

#[test]
fn a_stored_status_this_version_does_not_know_is_a_clear_error_and_the_file_stays() {
    let host = Host::new();
    std::fs::create_dir_all(host.path("state")).unwrap();
    let text = r#"{"schema": 1, "status": "frozen", "reason": "ready", "gpus": {}}"#;
    std::fs::write(host.path("state/state.json"), text).unwrap();
    for command in ["sync", "status"] {
        let (code, document) = host.run(&[command]);
        assert_eq!(
            (code, document["error"]["kind"].as_str()),
            (1, Some("state"))
        );
        let message = document["error"]["message"].as_str().unwrap();
        assert!(message.contains("frozen"), "{message}");
        assert_eq!(
            std::fs::read_to_string(host.path("state/state.json")).unwrap(),
            text
        );
        assert_eq!(
            std::fs::read_dir(host.path("state")).unwrap().count(),
            2,
            "{command}"
        );
    }
}

#[test]
fn a_helper_run_is_stopped_at_the_default_deadline_of_5_seconds() {
    let host = Host::new();
    let helper = host.helper(|h| h.every_read(Act::Hang));
    let started = Instant::now();
    let (code, probe) = host.probe(&helper, &[]);
    assert_eq!(code, 0);
    // Stopped at its deadline (not before it; a loaded machine only adds to it).
    assert_eq!(probe["gpus"][0]["reason"], "timeout");
    let ms = probe["gpus"][0]["elapsed_ms"].as_u64().unwrap();
    assert!(ms >= 5000, "{ms} ms");
    assert!(started.elapsed() >= Duration::from_secs(5));
}
