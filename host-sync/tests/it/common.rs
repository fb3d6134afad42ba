//! What the tests of the sysfs readers share: a fake sysfs of their own.
#![allow(clippy::unwrap_used)]

use host_sync::fake_sysfs::FakeSysfs;
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
