//! The helper in fixture mode as the configured helper of `mxctl sync --pool enabled` and
//! `mxctl probe` on a built sysfs tree: the partition modes are the ones the fixtures describe.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use host_sync::fake_sysfs::FakeSysfs;
use std::path::{Path, PathBuf};

/// The helper's fixture directory (its own tests' fixtures).
fn fixtures() -> PathBuf {
    helper_crate().join("tests/fixtures")
}

/// The helper's crate directory, beside this one.
fn helper_crate() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .unwrap_or(manifest)
        .join("gpu-partition-helper")
}

/// A wrapper that runs the real helper in fixture mode on the helper's own fixtures.
fn wrapper(dir: &Path, page_size: Option<usize>) -> PathBuf {
    fake_nvml::support::fixture_helper_wrapper(dir, &fixtures(), page_size).unwrap()
}

fn host(dir: &Path) -> FakeSysfs {
    let sysfs = FakeSysfs::new(dir.join("sys")).unwrap();
    for bdf in [
        "0000:3b:00.0",
        "0000:3c:00.0",
        "0000:3d:00.0",
        "0000:3e:00.0",
    ] {
        sysfs.nvidia(bdf, Some("nvidia")).unwrap();
    }
    sysfs.nvidia("0000:3f:00.0", Some("vfio-pci")).unwrap();
    sysfs
}

fn mxctl(dir: &Path, sysfs: &FakeSysfs, helper: &Path, args: &[&str]) -> serde_json::Value {
    let output = common::succeeded(
        common::mxctl_on(sysfs.root(), &dir.join("state"), &dir.join("locks"))
            .arg("--json")
            .arg("--proc-root")
            .arg(dir.join("proc"))
            .args(args)
            .arg("--helper")
            .arg(helper),
    );
    let mut document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for gpu in document["gpus"].as_array_mut().unwrap() {
        if gpu.get("elapsed_ms").is_some() {
            gpu["elapsed_ms"] = "[elapsed]".into();
        }
    }
    // Messages name the fixtures, wherever the checkout is.
    let text = document
        .to_string()
        .replace(&helper_crate().display().to_string(), "[helper crate]");
    serde_json::from_str(&gpu_host_probe::test_util::redact_temp_dirs(&text)).unwrap()
}

fn modes(document: &serde_json::Value) -> Vec<(String, String, String)> {
    document["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|gpu| {
            let text = |key: &str| gpu[key].as_str().unwrap_or_default().to_owned();
            (text("device"), text("partition_mode"), text("reason"))
        })
        .collect()
}

#[test]
fn sync_with_the_pool_on_gives_the_modes_the_fixtures_describe() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = host(dir.path());
    let helper = wrapper(dir.path(), None);
    let sync = mxctl(
        dir.path(),
        &sysfs,
        &helper,
        &["sync", "--pool", "enabled", "--after-boot", "yes"],
    );
    insta::assert_json_snapshot!("sync_pool_enabled", sync);
    let expected = [
        ("0000:3b:00.0", "enabled", ""),
        ("0000:3c:00.0", "enable_on_reboot", ""),
        ("0000:3d:00.0", "not_supported", ""),
        ("0000:3e:00.0", "unknown", "helper:not_found"),
        ("0000:3f:00.0", "not_checked", "driver_vfio_pci"),
    ]
    .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()));
    assert_eq!(modes(&sync), expected);
}

#[test]
fn a_helper_that_pages_its_replies_gives_the_same_sync() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = host(dir.path());
    let whole = mxctl(
        dir.path(),
        &sysfs,
        &wrapper(dir.path(), None),
        &["sync", "--pool", "enabled", "--after-boot", "yes"],
    );
    let paged_dir = tempfile::tempdir().unwrap();
    let paged = mxctl(
        paged_dir.path(),
        &host(paged_dir.path()),
        &wrapper(paged_dir.path(), Some(1)),
        &["sync", "--pool", "enabled", "--after-boot", "yes"],
    );
    assert_eq!(paged, whole);
}

#[test]
fn probe_reads_every_nvidia_gpu_bound_to_nvidia_through_the_helper() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = host(dir.path());
    let helper = wrapper(dir.path(), Some(2));
    let probe = mxctl(dir.path(), &sysfs, &helper, &["probe"]);
    insta::assert_json_snapshot!("probe", probe);
}
