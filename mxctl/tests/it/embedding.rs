//! The crates composed as a toolstack composes them, without `mxctl`: one host, one lock, by
//! construction. The sync and a reset both take a `Host`; the lock and the journal live in its
//! one state directory, so there is no second path to hand either of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::Host;
use gpu_host_probe::VirtualClock;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::{Act, FakeHelper};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{AfterBoot, MemoryStore, SyncOptions, spawn_sync};
use std::sync::Arc;
use std::time::{Duration, Instant};
use warm_reset::sim::SimMetax;
use warm_reset::{BlockedReason, MachineConfig, ResetOutcome, ResetRun, execute, read_journal};

/// A host with one NVIDIA GPU whose helper takes 600 ms to read it, and a marker file that says
/// when the read began.
fn slow_host(dir: &std::path::Path) -> (FakeSysfs, std::path::PathBuf) {
    let sysfs = FakeSysfs::new(dir.join("sys")).unwrap();
    sysfs.nvidia("0000:3b:00.0", Some("nvidia")).unwrap();
    let began = dir.join("read-began");
    let helper = FakeHelper::new(dir)
        .every_read(Act::Shell(format!("touch {}; sleep 0.6", began.display())))
        .write()
        .unwrap();
    (sysfs, helper)
}

fn wait_for(path: &std::path::Path) {
    let give_up = Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        assert!(
            Instant::now() < give_up,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A reset of GPU 0 by the nvidia method on `host`, its `nvidia-smi` absent: it meets the host
/// lock first, and never reaches a card.
fn reset(host: &Host) -> ResetOutcome {
    let mut backend = warm_reset::NvidiaSmiBackend::of(warm_reset::nvidia::NvidiaSmiHost::new(
        Some("/nonexistent/nvidia-smi".into()),
        host.proc_root(),
        "/dev/null",
    ));
    let config = MachineConfig::new("0".parse().unwrap()).method(warm_reset::Method::Nvidia);
    execute(ResetRun::new(&config, host, &mut backend))
        .unwrap()
        .outcome
}

#[test]
fn a_simulated_reset_runs_on_its_own_lock_and_journal_never_the_machines() {
    let dir = tempfile::tempdir().unwrap();
    let host = gpu_host_probe::test_util::isolated_host(dir.path());
    let _held = host.try_lock().unwrap();
    let clock = VirtualClock::new(1_700_000_000_000);
    let mut sim = SimMetax::new(Arc::new(clock.clone()), &[2, 2]);
    let config = MachineConfig::new("0".parse().unwrap());
    let report = execute(ResetRun::new(&config, &host, &mut sim).clock(&clock)).unwrap();
    assert_eq!(report.outcome, ResetOutcome::Done, "{}", report.detail);
    assert!(read_journal(&host).unwrap().last.is_none());
    assert!(read_journal(&host.simulated()).unwrap().last.is_some());
    assert!(
        std::fs::read_dir(host.lock_dir().unwrap())
            .unwrap()
            .filter_map(Result::ok)
            .all(|entry| !entry
                .file_name()
                .to_string_lossy()
                .starts_with("simulated-")),
        "a simulation left its lock among the machine's"
    );
}

#[test]
fn a_reset_while_a_sync_holds_the_host_lock_is_blocked_lock_busy_however_the_directory_is_spelled()
{
    let dir = tempfile::tempdir().unwrap();
    let (sysfs, helper) = slow_host(dir.path());
    let state = dir.path().join("state");
    // The embedder keeps the state in its own store (here memory): the lock still lives in the
    // host's state directory, which the reset takes too.
    let sync = spawn_sync(
        Host::new(&state)
            .with_sysfs_root(sysfs.root())
            .with_lock_dir(dir.path().join("locks")),
        Helper::new(HelperConfig::new(&helper)),
        MemoryStore::default(),
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes),
    )
    .unwrap();
    wait_for(&dir.path().join("read-began"));
    // The same directory by another spelling: the lock is the file's, not the name's.
    for spelled in [
        state.clone(),
        state.join("."),
        dir.path().join("sys/../state"),
    ] {
        let spelled = Host::new(&spelled)
            .with_sysfs_root(sysfs.root())
            .with_lock_dir(dir.path().join("locks"));
        assert_eq!(
            reset(&spelled),
            ResetOutcome::Blocked(BlockedReason::LockBusy),
            "{}",
            spelled.state_dir().display()
        );
    }
    assert!(
        read_journal(&gpu_host_probe::test_util::isolated_host(&state))
            .unwrap()
            .in_flight
            .is_none()
    );
    let done = sync.join().unwrap();
    assert!(done.result.is_ok());
    // The sync over, the reset goes past the lock on the same host (to its own preflight).
    let after = reset(
        &Host::new(&state)
            .with_sysfs_root(sysfs.root())
            .with_lock_dir(dir.path().join("locks")),
    );
    // (as root: no nvidia-smi here; else: not root — either way past the lock).
    assert!(
        matches!(
            after,
            ResetOutcome::Blocked(BlockedReason::NvidiaSmiUnavailable | BlockedReason::NotRoot)
        ),
        "{after:?}"
    );
}

#[test]
fn a_sync_waits_for_a_reset_that_holds_the_host_lock_and_then_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (sysfs, helper) = slow_host(dir.path());
    let host = Host::new(dir.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_lock_dir(dir.path().join("locks"));
    let held = host.try_lock().unwrap();
    let sync = spawn_sync(
        host.clone(),
        Helper::new(HelperConfig::new(&helper)),
        MemoryStore::default(),
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Yes)
            .lock_wait(Duration::from_secs(10)),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !dir.path().join("read-began").exists(),
        "the card was read while another operation held the lock"
    );
    drop(held);
    let done = sync.join().unwrap();
    assert_eq!(
        done.result
            .unwrap()
            .gpus
            .values()
            .next()
            .map(|gpu| gpu.partition_mode),
        Some(gpu_partition_types::PartitionMode::Enabled)
    );
}
