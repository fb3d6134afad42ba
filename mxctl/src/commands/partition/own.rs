//! `mxctl partition own`: who owns a GPU (`host_sync::set_ownership`), declared under the host
//! lock.

use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;
use host_sync::FileStore;

/// Declares who owns a GPU, under the host lock, and says so.
pub fn run(args: &crate::cli::PartitionOwn, host: &Host, output: Output) -> Result<Exit, Failure> {
    // A typo must not say a GPU is another's while the real one stays ours.
    let found = host_sync::scan(host.sysfs_root())?;
    if !found.gpus.iter().any(|gpu| gpu.bdf == args.device) {
        return Err(Failure::Usage(format!(
            "{} is no GPU of this host (none at that address in {})",
            args.device,
            host.sysfs_root().display()
        )));
    }
    let lock = host.lock(args.lock.wait()).map_err(Failure::Lock)?;
    let mut store = FileStore::new(host.state_dir());
    host_sync::set_ownership(&lock, &mut store, args.device, args.ownership)?;
    drop(lock);
    let document = serde_json::json!({"device": args.device, "ownership": args.ownership});
    let text = format!("{}: ownership {}\n", args.device, args.ownership);
    output.emit(&document, &text)?;
    Ok(Exit::Done)
}
