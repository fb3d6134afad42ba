//! The sync on a thread of its own, as a toolstack starts it, and a second sync asked for while
//! one runs: it waits its turn on the host lock, so their reads and writes never interleave.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::{Act, FakeHelper};
use host_sync::{
    AfterBoot, FileStore, Host, HostReason, HostStatus, MemoryStore, SyncOptions, spawn_sync,
};
use std::path::Path;

/// A helper that logs `begin` and `end` around each read, 300 ms apart.
fn slow_helper(dir: &Path) -> std::path::PathBuf {
    let log = dir.join("log");
    FakeHelper::new(dir)
        .every_read(Act::Shell(format!(
            "echo begin >> {log}; sleep 0.3; echo end >> {log}",
            log = log.display()
        )))
        .write()
        .unwrap()
}

#[test]
fn a_sync_on_its_own_thread_hands_its_report_to_join() {
    let dir = tempfile::tempdir().unwrap();
    let (_sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0"]);
    let state = dir.path().join("state");
    let handle = spawn_sync(
        host,
        Helper::new(HelperConfig::new(slow_helper(dir.path()))),
        FileStore::new(&state),
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    let report = handle.join().unwrap().result.unwrap();
    assert_eq!(
        (report.status, report.reason),
        (HostStatus::Active, HostReason::Ready)
    );
}

#[test]
fn the_store_comes_back_with_the_report_holding_what_the_sync_saved() {
    let dir = tempfile::tempdir().unwrap();
    let (_sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0"]);
    let handle = spawn_sync(
        host,
        Helper::new(HelperConfig::new(slow_helper(dir.path()))),
        MemoryStore::default(),
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    let done = handle.join().unwrap();
    let report = done.result.unwrap();
    // One save with the card `unknown` before its read, one with the answer.
    assert_eq!(done.store.saves(), 2);
    let stored = done.store.state.unwrap();
    assert_eq!((stored.status, stored.gpus), (report.status, report.gpus));
}

#[test]
fn a_second_sync_asked_for_while_one_runs_waits_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (_sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0"]);
    let state = dir.path().join("state");
    let helper = slow_helper(dir.path());
    let start = || {
        spawn_sync(
            host.clone(),
            Helper::new(HelperConfig::new(&helper)),
            FileStore::new(&state),
            SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::No),
        )
        .unwrap()
    };
    let (first, second) = (start(), start());
    for handle in [first, second] {
        assert_eq!(
            handle.join().unwrap().result.unwrap().status,
            HostStatus::Active
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("log")).unwrap(),
        "begin\nend\nbegin\nend\n"
    );
}

#[test]
fn a_store_chosen_at_run_time_goes_to_the_thread_boxed() {
    let dir = tempfile::tempdir().unwrap();
    let (_sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0"]);
    let state = dir.path().join("state");
    let store: Box<dyn host_sync::StateStore + Send> = if state.exists() {
        Box::new(MemoryStore::default())
    } else {
        Box::new(FileStore::new(&state))
    };
    let handle = spawn_sync(
        host,
        Helper::new(HelperConfig::new(slow_helper(dir.path()))),
        store,
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    let mut done = handle.join().unwrap();
    assert!(done.result.is_ok());
    assert!(done.store.load().unwrap().is_some());
    assert!(
        host_sync::StateStore::load(&mut FileStore::new(&state))
            .unwrap()
            .is_some()
    );
}

/// A host of one NVIDIA GPU whose helper never answers (an hour's deadline), once it has
/// noted `began` in `dir`.
fn hanging(dir: &Path) -> (Host, Helper) {
    let (_sysfs, host) = common::nvidia_host(dir, &["0000:3b:00.0"]);
    let helper = FakeHelper::new(dir)
        .every_read(Act::Shell(format!(
            "touch {}; exec sleep 3600",
            dir.join("began").display()
        )))
        .write()
        .unwrap();
    let helper =
        Helper::new(HelperConfig::new(helper).deadline(std::time::Duration::from_secs(3600)));
    (host, helper)
}

#[test]
fn a_sync_handle_cancels_its_sync_and_join_says_it_was_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (host, helper) = hanging(dir.path());
    let handle = spawn_sync(
        host,
        helper,
        MemoryStore::default(),
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    handle.cancel();
    let done = handle.join().unwrap();
    assert!(
        matches!(done.result, Err(host_sync::SyncError::Cancelled { .. })),
        "{:?}",
        done.result
    );
}

#[test]
fn a_sync_handle_dropped_unjoined_cancels_its_sync_and_the_lock_is_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let (host, helper) = hanging(dir.path());
    let handle = spawn_sync(
        host.clone(),
        helper,
        MemoryStore::default(),
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    // The sync holds the lock and waits on the helper (a give-up, not a bound on speed).
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !dir.path().join("began").exists() {
        assert!(std::time::Instant::now() < give_up, "the helper never ran");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(handle);
    // Without the cancel the sync would hold the lock for the helper's hour: the wait ends
    // once the cancelled sync lets go (however long the machine takes to get there).
    let lock = host.lock(std::time::Duration::from_secs(3600));
    assert!(lock.is_ok(), "{lock:?}");
}
