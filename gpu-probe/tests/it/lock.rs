//! The host GPU lock: a real `flock`, exclusive, with a bounded wait.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::test_util::isolated_host;
use gpu_host_probe::{Host, HostLock, LockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A host whose state is in `dir`/`state` on the machine of sysfs `sysfs`, its machine locks
/// in `dir`/locks, which every host of a test shares.
fn host_of(dir: &Path, state: &str, sysfs: impl Into<PathBuf>) -> Host {
    Host::new(dir.join(state))
        .with_lock_dir(dir.join("locks"))
        .with_sysfs_root(sysfs)
}

/// A test's directory whose isolated host's lock is taken (held until it is dropped): where
/// each test of a held lock starts.
fn held_lock() -> (tempfile::TempDir, HostLock) {
    let dir = tempfile::tempdir().unwrap();
    let held = isolated_host(dir.path()).try_lock().unwrap();
    (dir, held)
}

#[test]
fn the_lock_creates_its_state_directory() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("a/b");
    let lock = isolated_host(&state).try_lock().unwrap();
    assert!(lock.path().starts_with(&state));
}

#[test]
fn a_held_lock_is_busy_at_once_for_a_try_and_names_its_holder() {
    let (dir, _held) = held_lock();
    // A try never waits (its wait is zero by construction): it is busy, and names the holder.
    let error = isolated_host(dir.path()).try_lock().unwrap_err();
    match error {
        LockError::Busy { holder, .. } => assert_eq!(holder, Some(std::process::id())),
        other => panic!("{other}"),
    }
}

#[test]
fn a_bounded_wait_gives_up_with_busy_after_its_bound() {
    let (dir, _held) = held_lock();
    let started = Instant::now();
    let error = isolated_host(dir.path())
        .lock(Duration::from_millis(300))
        .unwrap_err();
    assert!(matches!(error, LockError::Busy { .. }));
    // It waited its bound (a slow machine only makes that longer).
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[test]
fn a_waiter_gets_the_lock_once_the_holder_lets_go() {
    let (dir, held) = held_lock();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        drop(held);
    });
    assert!(
        isolated_host(dir.path())
            .lock(Duration::from_secs(5))
            .is_ok()
    );
    releaser.join().unwrap();
}

#[test]
fn the_lock_is_held_across_processes() {
    let (dir, _held) = held_lock();
    // flock(1) from util-linux, a separate process, cannot take it without waiting.
    let status = std::process::Command::new("flock")
        .args(["--nonblock", "--conflict-exit-code", "9"])
        .arg(dir.path().join(gpu_host_probe::LOCK_FILE))
        .arg("true")
        .status();
    match status {
        Ok(status) => assert_eq!(status.code(), Some(9)),
        Err(error) => panic!("flock(1) not runnable: {error}"),
    }
}

#[test]
fn two_hosts_of_one_machine_with_different_state_directories_meet_at_one_lock() {
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("sys");
    let first = host_of(dir.path(), "toolstack", &machine);
    let second = host_of(dir.path(), "mxctl", &machine);
    let held = first.try_lock().unwrap();
    common::assert_machine_busy_for(&second, &first);
    let said = second.try_lock().unwrap_err().to_string();
    assert!(said.contains("the GPUs of this machine"), "{said}");
    assert!(said.contains("toolstack"), "{said}");
    drop(held);
    assert!(second.try_lock().is_ok());
}

#[test]
fn the_spelling_of_a_machines_sysfs_root_does_not_make_another_machine() {
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("sys");
    std::fs::create_dir(&machine).unwrap();
    std::os::unix::fs::symlink(&machine, dir.path().join("link")).unwrap();
    let _held = host_of(dir.path(), "a", &machine).try_lock().unwrap();
    let other = host_of(dir.path(), "b", dir.path().join("link/../sys"));
    assert!(other.try_lock().unwrap_err().is_busy());
}

#[test]
fn hosts_of_two_machines_do_not_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let _held = host_of(dir.path(), "a", dir.path().join("sys-a"))
        .try_lock()
        .unwrap();
    assert!(
        host_of(dir.path(), "b", dir.path().join("sys-b"))
            .try_lock()
            .is_ok()
    );
}

#[test]
fn a_simulated_host_never_takes_the_real_machines_lock() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_of(dir.path(), "state", dir.path().join("sys"));
    let _real = host.try_lock().unwrap();
    let simulated = host.simulated().try_lock().unwrap();
    assert_ne!(simulated.machine_path(), _real.machine_path());
}

#[test]
fn the_machine_lock_is_held_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let host = host_of(dir.path(), "state", dir.path().join("sys"));
    let held = host.try_lock().unwrap();
    // flock(1) from util-linux, another process, cannot take the machine's lock file.
    let status = std::process::Command::new("flock")
        .args(["--nonblock", "--conflict-exit-code", "9"])
        .arg(held.machine_path())
        .arg("true")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(9));
    let named = std::fs::read_to_string(held.machine_path()).unwrap();
    assert_eq!(
        named,
        format!("{}\n{}\n", std::process::id(), host.state_dir().display())
    );
}

#[test]
fn a_machine_lock_is_named_after_its_sysfs_root_as_systemd_escapes_a_path() {
    let host = Host::new("/var/lib/mxctl").with_sysfs_root("/nonexistent/sys fs");
    let path = gpu_host_probe::machine_lock_path(&host).unwrap();
    assert_eq!(
        path.file_name().unwrap().to_str().unwrap(),
        "nonexistent-sys\\x20fs.lock"
    );
    let simulated = gpu_host_probe::machine_lock_path(&host.simulated()).unwrap();
    assert_eq!(
        simulated.file_name().unwrap().to_str().unwrap(),
        "simulated-nonexistent-sys\\x20fs.lock"
    );
}

#[test]
fn a_wait_for_a_held_lock_ends_when_it_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let host = isolated_host(dir.path());
    let _held = host.try_lock().unwrap();
    let cancel = gpu_host_probe::Cancel::new();
    let waited = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| host.lock_unless(Duration::from_secs(3600), Some(&cancel)));
        cancel.cancel();
        waiter.join().unwrap()
    });
    assert!(
        matches!(waited, Err(LockError::Cancelled { .. })),
        "{waited:?}"
    );
}
