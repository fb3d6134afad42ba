//! A tokio toolstack runs the (blocking) host sync on the runtime's blocking pool, and shuts
//! down while the GPU partition helper hangs: aborting the task cancels the sync, which ends
//! the helper's run as its deadline would, writes what it found and lets go of the host lock.
//!
//! Aborting a task never stops the closure `spawn_blocking` runs; the sync handle's guard
//! (`SyncHandle::cancel_on_drop`), held by the task, does: dropped with the task, it cancels
//! the sync. Without it this sync would hold the host lock for the helper's whole deadline (an
//! hour here).
//!
//! Run it with `cargo run -p examples --example tokio-cancel`.

use gpu_host_probe::Cancel;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::{Act, FakeHelper};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{
    AfterBoot, FileStore, Host, Pool, StateStore, SyncError, SyncOptions, SyncReport, spawn_sync,
};
use std::error::Error;
use std::time::{Duration, Instant};

/// The host sync, as a toolstack's async code calls it: on a thread of its own, awaited from
/// the blocking pool, cancelled when this future is dropped (the task aborted).
async fn host_sync(host: Host, helper: Helper) -> Result<SyncReport, Box<dyn Error + Send + Sync>> {
    let store = FileStore::new(host.state_dir());
    let options = SyncOptions::new(Pool::Enabled, AfterBoot::Auto);
    let handle = spawn_sync(host, helper, store, options)?;
    let _cancel_on_abort = handle.cancel_on_drop();
    let done = tokio::task::spawn_blocking(move || handle.join()).await??;
    Ok(done.result?)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    let work = tempfile::tempdir()?;
    let sysfs = FakeSysfs::new(work.path().join("sys"))?;
    sysfs.nvidia("0000:3b:00.0", Some("nvidia"))?;
    // A helper that never answers, with an hour's deadline.
    let helper = FakeHelper::new(work.path().join("helper"))
        .every_read(Act::Shell("exec sleep 3600".to_owned()))
        .write()?;
    let helper = Helper::new(HelperConfig::new(helper).deadline(Duration::from_secs(3600)));
    // A built host: its machine lock is kept beside its tree, never among the machine's.
    let host = Host::new(work.path().join("state")).with_sysfs_root(sysfs.root());

    let task = tokio::spawn(host_sync(host.clone(), helper));
    // The toolstack is asked to shut down while the sync waits on the helper.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let aborted = Instant::now();
    task.abort();
    match task.await {
        Err(join) if join.is_cancelled() => println!("the sync task was aborted"),
        Err(join) => return Err(join.into()),
        Ok(ended) => println!(
            "the sync ended before the abort: {:?}",
            ended.map(|r| r.status)
        ),
    }
    // The blocking sync saw the cancel: the host lock is free again at once.
    let lock_host = host.clone();
    let lock =
        tokio::task::spawn_blocking(move || lock_host.lock(Duration::from_secs(30))).await??;
    println!(
        "the host lock was free again {} ms after the abort",
        aborted.elapsed().as_millis()
    );
    drop(lock);
    // What the cancelled sync wrote.
    let stored = FileStore::read_only(host.state_dir()).load()?;
    for (bdf, gpu) in stored.iter().flat_map(|state| &state.gpus) {
        let reason = gpu
            .reason
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        println!("stored: {bdf} {} ({reason})", gpu.partition_mode);
    }
    // A sync asked for once the toolstack is shutting down ends at once, writing nothing.
    let cancel = Cancel::new();
    cancel.cancel();
    let ended = host_sync::sync(
        &host,
        &Helper::new(HelperConfig::new(work.path().join("helper/helper"))),
        &mut FileStore::new(host.state_dir()),
        &SyncOptions::new(Pool::Enabled, AfterBoot::Auto).cancel(cancel),
    );
    if let Err(SyncError::Cancelled { written }) = ended {
        println!(
            "a sync cancelled before it began: wrote {}",
            if written.is_some() {
                "its cards"
            } else {
                "nothing"
            }
        );
    }
    Ok(())
}
