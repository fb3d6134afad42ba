//! `fake-driver-files host DIR -- COMMAND [ARG…]`: runs COMMAND on a test host of the fake
//! NVML's cards whose drivers' files answer as the drivers do, for a program that is not Rust
//! (NVIDIA's Python binding in CI).
//!
//! The cards are the state's (`FAKE_NVML_STATE`, made from `FAKE_NVML_SCENARIO` where there is
//! none yet, as `fake-nvml` makes it): each is an NVIDIA function bound to `nvidia` in a tree
//! at `DIR/tree` (with `sriov_totalvfs` where the card has SR-IOV), shown at `DIR/sys` with its
//! drivers' files served (`fake_driver_files::ServedSysfs`). COMMAND runs with
//! `FAKE_SYSFS_ROOT=DIR/sys` and `FAKE_NVML_SYSFS=DIR/tree` (the fake library shows its VFs
//! there); the mount is taken down when it ends, and its exit status is this one's. Needs root
//! and `/dev/fuse`.

use fake_driver_files::{Drivers, ServedSysfs};
use fake_nvml::StateFile;
use host_sync::fake_sysfs::FakeSysfs;
use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage: fake-driver-files host DIR -- COMMAND [ARG...]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, command) = match args.as_slice() {
        [host, dir, dashes, command @ ..]
            if host == "host" && dashes == "--" && !command.is_empty() =>
        {
            (Path::new(dir), command)
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(dir, command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("fake-driver-files: {error}");
            ExitCode::from(1)
        }
    }
}

/// The host made under `dir`, `command` run on it; its exit status.
fn run(dir: &Path, command: &[String]) -> Result<ExitCode, String> {
    let state = StateFile::from_env().ok_or("FAKE_NVML_STATE names no state file")?;
    let cards = state
        .load()
        .map_err(|error| format!("cannot read the fake's state: {error}"))?;
    let tree = dir.join("tree");
    let sysfs = FakeSysfs::new(&tree).map_err(|error| format!("{}: {error}", tree.display()))?;
    for card in &cards.devices {
        let address = fake_nvml::sysfs::gpu_address(&card.pci_bus_id)
            .ok_or_else(|| format!("{} is no bus ID", card.pci_bus_id))?;
        let made = sysfs
            .nvidia(&address, Some("nvidia"))
            .and_then(|sysfs| match &card.sriov {
                Some(sriov) => sysfs.sriov(&address, sriov.total_vfs).map(|_| ()),
                None => Ok(()),
            });
        made.map_err(|error| format!("{address} in {}: {error}", tree.display()))?;
    }
    let state = StateFile::new(state.path()).with_sysfs(&tree);
    // Shows the VFs the state has already.
    state
        .write(&cards)
        .map_err(|error| format!("cannot show the state in {}: {error}", tree.display()))?;
    let at = dir.join("sys");
    std::fs::create_dir_all(&at).map_err(|error| format!("{}: {error}", at.display()))?;
    let drivers = Drivers {
        nvidia: Some(state),
        amdgpu: None,
    };
    let served = ServedSysfs::mount(&tree, &at, drivers).map_err(|error| {
        format!(
            "cannot mount {} (root and /dev/fuse?): {error}",
            at.display()
        )
    })?;
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .env("FAKE_SYSFS_ROOT", served.root())
        .env("FAKE_NVML_SYSFS", &tree)
        .status()
        .map_err(|error| format!("cannot run {}: {error}", command[0]))?;
    drop(served);
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}
