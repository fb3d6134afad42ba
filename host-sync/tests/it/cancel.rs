//! A sync cancelled from another thread while the helper hangs: the helper's run is ended as
//! a deadline would end it, the card not begun is not read, the lock is let go, and the store
//! says the cards were not read because the sync was cancelled.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use gpu_host_probe::Cancel;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::{Act, FakeHelper};
use gpu_partition_types::{PartitionMode, UnreadableReason};
use host_sync::{AfterBoot, GpuReason, MemoryStore, Pool, SyncError, SyncOptions, sync};
use std::time::{Duration, Instant};

/// Far past any wait of the test: a sync that returns at all returned because of the cancel.
const FOREVER: Duration = Duration::from_secs(3600);

/// Waits until the helper in `dir` was asked to read a card (its run has begun).
fn until_a_read_began(dir: &std::path::Path) {
    while !FakeHelper::calls(dir)
        .iter()
        .any(|call| call.starts_with("read"))
    {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_sync_cancelled_while_the_helper_hangs_ends_the_run_lets_go_of_the_lock_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (_sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0", "0000:3c:00.0"]);
    let helpers = dir.path().join("helper");
    // The first card's read never ends by itself; one card at a time, so the second waits.
    let helper = FakeHelper::new(&helpers)
        .on("0000:3b:00.0", Act::Shell("exec sleep 3600".to_owned()))
        .write()
        .unwrap();
    let helper = Helper::new(HelperConfig::new(helper).deadline(FOREVER).concurrency(1));
    let cancel = Cancel::new();
    let options = SyncOptions::new(Pool::Enabled, AfterBoot::Yes)
        .lock_wait(FOREVER)
        .cancel(cancel.clone());
    let mut store = MemoryStore::default();
    let (ended, cancelled_at) = std::thread::scope(|scope| {
        let canceller = scope.spawn(|| {
            until_a_read_began(&helpers);
            let at = Instant::now();
            cancel.cancel();
            at
        });
        let ended = sync(&host, &helper, &mut store, &options);
        let returned = Instant::now();
        let cancelled_at = canceller.join().unwrap();
        (ended, returned.duration_since(cancelled_at))
    });
    eprintln!("the sync returned {cancelled_at:?} after the cancel");
    let Err(SyncError::Cancelled {
        written: Some(written),
    }) = ended
    else {
        panic!("not cancelled: {ended:?}");
    };
    // The lock is free at once.
    host.try_lock().unwrap();
    let stored = store.state.unwrap();
    for bdf in ["0000:3b:00.0", "0000:3c:00.0"] {
        let gpu = &stored.gpus[&bdf.parse().unwrap()];
        assert_eq!(gpu.partition_mode, PartitionMode::Unknown, "{bdf}");
        assert_eq!(
            gpu.reason,
            Some(GpuReason::Read(UnreadableReason::Cancelled)),
            "{bdf}"
        );
        assert_eq!(written.gpus[&bdf.parse().unwrap()], *gpu, "{bdf}");
    }
    // The second card was never asked for.
    let reads: Vec<String> = FakeHelper::calls(&helpers)
        .into_iter()
        .filter(|call| call.starts_with("read"))
        .collect();
    assert_eq!(reads.len(), 1, "{reads:?}");
}

#[test]
fn a_sync_cancelled_while_it_waits_for_the_lock_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_sysfs, host) = common::nvidia_host(dir.path(), &["0000:3b:00.0"]);
    let helper = FakeHelper::new(dir.path().join("helper")).write().unwrap();
    let held = host.try_lock().unwrap();
    let cancel = Cancel::new();
    cancel.cancel();
    let mut store = MemoryStore::default();
    let ended = sync(
        &host,
        &Helper::new(HelperConfig::new(helper)),
        &mut store,
        &SyncOptions::new(Pool::Enabled, AfterBoot::Yes)
            .lock_wait(FOREVER)
            .cancel(cancel),
    );
    assert!(
        matches!(ended, Err(SyncError::Cancelled { written: None })),
        "{ended:?}"
    );
    assert!(store.state.is_none());
    drop(held);
}
