//! What the tests share: a fake sysfs of their own, and a host over one.
#![allow(clippy::unwrap_used)]

use host_sync::Host;
use host_sync::fake_sysfs::FakeSysfs;
use std::path::Path;
use tempfile::TempDir;

/// An empty fake sysfs in a directory of its own, which goes when the first of the pair is
/// dropped (keep it as `_dir`, never `_`).
pub fn fake_sysfs() -> (TempDir, FakeSysfs) {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = FakeSysfs::new(dir.path()).unwrap();
    (dir, sysfs)
}

/// [`fake_sysfs`] with one NVIDIA GPU at `bdf`, bound to `nvidia`.
pub fn one_nvidia(bdf: &str) -> (TempDir, FakeSysfs) {
    let (dir, sysfs) = fake_sysfs();
    sysfs.nvidia(bdf, Some("nvidia")).unwrap();
    (dir, sysfs)
}

/// A host kept in `dir`: its sysfs in `dir/sys` with NVIDIA GPUs at `gpus` bound to `nvidia`,
/// its state in `dir/state`, its locks in `dir/locks`.
pub fn nvidia_host(dir: &Path, gpus: &[&str]) -> (FakeSysfs, Host) {
    let sysfs = FakeSysfs::new(dir.join("sys")).unwrap();
    for bdf in gpus {
        sysfs.nvidia(bdf, Some("nvidia")).unwrap();
    }
    let host = Host::new(dir.join("state"))
        .with_sysfs_root(sysfs.root())
        .with_lock_dir(dir.join("locks"));
    (sysfs, host)
}
