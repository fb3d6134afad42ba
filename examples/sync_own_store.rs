//! Runs a host sync against a store of the embedder's own (here: in memory, printing each
//! save), on a sysfs tree and helper given on the command line or built on the fly.
//!
//! ```text
//! cargo run -p examples --example sync-own-store                   # a built host, 2 GPUs
//! cargo run -p examples --example sync-own-store -- /sys HELPER    # this host
//! ```

use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::FakeHelper;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{AfterBoot, HostPaths, HostState, StateStore, StoreError, SyncOptions, sync};
use std::error::Error;
use std::path::PathBuf;

/// A toolstack's own store: keeps the state in memory and shows every save.
#[derive(Default)]
struct PrintingStore {
    state: Option<HostState>,
}

impl StateStore for PrintingStore {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        Ok(self.state.clone())
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        println!("save: {} ({})", state.status, state.reason);
        for (bdf, gpu) in &state.gpus {
            println!("  {bdf}  {}  {}", gpu.partition_mode, gpu.reason);
        }
        self.state = Some(state.clone());
        Ok(())
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    let mut args = std::env::args().skip(1);
    let (sysfs_root, helper) = match (args.next(), args.next()) {
        (Some(sysfs), Some(helper)) => (PathBuf::from(sysfs), PathBuf::from(helper)),
        _ => {
            let sysfs = FakeSysfs::new(work.path().join("sys"))?;
            sysfs.nvidia("0000:3b:00.0", Some("nvidia"))?;
            sysfs.nvidia("0000:3c:00.0", Some("vfio-pci"))?;
            let helper = FakeHelper::new(work.path())
                .reply(r#"{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "disabled", "pending": "enabled"}, "case": "none_carved"}"#)
                .write()?;
            (sysfs.root().to_path_buf(), helper)
        }
    };
    // The host lock lives in a state directory even when the state itself lives elsewhere.
    let paths = HostPaths::new(work.path().join("state"), sysfs_root);
    let helper = Helper::new(HelperConfig::new(helper));
    let mut store = PrintingStore::default();
    let report = sync(
        &paths,
        &helper,
        &mut store,
        &SyncOptions::new(true, AfterBoot::Auto),
    )?;
    println!(
        "sync_gpu_partitioning: {} ({}), after boot: {}",
        report.status, report.reason, report.after_boot
    );
    Ok(())
}
