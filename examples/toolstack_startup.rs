//! A toolstack's start-up: after its own database sync, it starts the host sync on a thread of
//! its own and goes on starting its other services; when the sync is done it takes the report
//! (here: prints it). The sync takes the host lock, so a second one asked for meanwhile (a
//! `mxctl sync` from a shell, say) waits its turn.
//!
//! ```text
//! cargo run -p examples --example toolstack-startup                  # this host, state in a temp dir
//! cargo run -p examples --example toolstack-startup -- /sys STATE    # this host, state in STATE
//! ```

use gpu_host_probe::helper::{Helper, HelperConfig};
use host_sync::{AfterBoot, Boot, FileStore, HostPaths, SyncOptions, spawn_sync};
use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    let mut args = std::env::args().skip(1);
    let sysfs_root = args
        .next()
        .map_or_else(|| PathBuf::from("/sys"), PathBuf::from);
    let state_dir = args
        .next()
        .map_or_else(|| work.path().join("state"), PathBuf::from);

    // 1. The toolstack's own database sync happens first (not shown).
    // 2. The host sync, on its own thread: the first start after a boot is decided under the
    //    host lock from the kernel's boot id (or the boot time).
    let options = SyncOptions::new(false, AfterBoot::Auto).boot(Boot::read("/proc".as_ref()));
    let handle = spawn_sync(
        HostPaths::new(&state_dir, &sysfs_root),
        Helper::new(HelperConfig::default()),
        Box::new(FileStore::new(&state_dir)),
        options,
    )?;
    // 3. Meanwhile the toolstack starts its other services.
    println!("toolstack: other services started while the host sync runs");
    // 4. The report, when the sync is done.
    let report = handle.join()??;
    println!(
        "host sync: {} ({}), after boot: {}",
        report.status, report.reason, report.after_boot
    );
    for (bdf, gpu) in &report.gpus {
        println!("  {bdf}  {}  {}", gpu.partition_mode, gpu.reason);
    }
    Ok(())
}
