//! The host GPU lock: a real `flock`, exclusive, with a bounded wait.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::{Host, LockError};
use std::time::{Duration, Instant};

#[test]
fn the_lock_creates_its_state_directory() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("a/b");
    let lock = Host::new(&state).try_lock().unwrap();
    assert!(lock.path().starts_with(&state));
}

#[test]
fn a_held_lock_is_busy_at_once_for_a_try_and_names_its_holder() {
    let dir = tempfile::tempdir().unwrap();
    let _held = Host::new(dir.path()).try_lock().unwrap();
    let started = Instant::now();
    let error = Host::new(dir.path()).try_lock().unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(100));
    match error {
        LockError::Busy { holder, .. } => assert_eq!(holder, Some(std::process::id())),
        other => panic!("{other}"),
    }
}

#[test]
fn a_bounded_wait_gives_up_with_busy_after_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let _held = Host::new(dir.path()).try_lock().unwrap();
    let started = Instant::now();
    let error = Host::new(dir.path())
        .lock(Duration::from_millis(300))
        .unwrap_err();
    assert!(matches!(error, LockError::Busy { .. }));
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(started.elapsed() < Duration::from_millis(300) + Duration::from_secs(1));
}

#[test]
fn a_waiter_gets_the_lock_once_the_holder_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let held = Host::new(dir.path()).try_lock().unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        drop(held);
    });
    assert!(Host::new(dir.path()).lock(Duration::from_secs(5)).is_ok());
    releaser.join().unwrap();
}

#[test]
fn the_lock_is_held_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let _held = Host::new(dir.path()).try_lock().unwrap();
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
