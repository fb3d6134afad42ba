//! The host GPU lock: a real `flock`, exclusive, with a bounded wait.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::lock::{HostLock, LockError};
use std::time::{Duration, Instant};

#[test]
fn the_lock_creates_its_state_directory() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("a/b");
    let lock = HostLock::try_acquire(&state).unwrap();
    assert!(lock.path().starts_with(&state));
}

#[test]
fn a_held_lock_is_busy_at_once_for_a_try_and_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let _held = HostLock::try_acquire(dir.path()).unwrap();
    let started = Instant::now();
    let error = HostLock::try_acquire(dir.path()).unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(100));
    match error {
        LockError::Busy { holder, .. } => assert_eq!(holder, Some(std::process::id())),
        other => panic!("{other}"),
    }
}

#[test]
fn a_bounded_wait_gives_up_with_busy_after_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let _held = HostLock::try_acquire(dir.path()).unwrap();
    let started = Instant::now();
    let error = HostLock::acquire(dir.path(), Duration::from_millis(300)).unwrap_err();
    assert!(matches!(error, LockError::Busy { .. }));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(started.elapsed() < Duration::from_millis(300) + Duration::from_secs(1));
}

#[test]
fn a_waiter_gets_the_lock_once_the_holder_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let held = HostLock::try_acquire(dir.path()).unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        drop(held);
    });
    assert!(HostLock::acquire(dir.path(), Duration::from_secs(5)).is_ok());
    releaser.join().unwrap();
}

#[test]
fn the_lock_is_held_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let _held = HostLock::try_acquire(dir.path()).unwrap();
    // flock(1) from util-linux, a separate process, cannot take it without waiting.
    let status = std::process::Command::new("flock")
        .args(["--nonblock", "--conflict-exit-code", "9"])
        .arg(dir.path().join(gpu_host_probe::lock::LOCK_FILE))
        .arg("true")
        .status();
    match status {
        Ok(status) => assert_eq!(status.code(), Some(9)),
        Err(error) => panic!("flock(1) not runnable: {error}"),
    }
}
