//! The helper's own cost, the floor under every sync: the real helper binary reading one
//! carved A100 through the fake NVML (process start to exit), and the sync of a host with 8
//! such cards (`host_sync::sync`, what `mxctl sync --pool enabled` runs), the helper run through
//! `env` to set the fake library's path as an install with a wrapper would.

use criterion::{Criterion, criterion_group, criterion_main};
use fake_nvml::support::{self, Build};
use gpu_host_probe::helper::{Helper, HelperConfig, Wrapper};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{AfterBoot, FileStore, Host, HostStatus, SyncOptions, sync};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const CARVED: &str = fake_nvml::scenarios::A100_MIG_ON_CARVED;

fn helper_nvml(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let bdfs: Vec<String> = (0..8)
        .map(|n| format!("0000:{:02x}:00.0", 0x3b + n))
        .collect();
    let cards: Vec<(&str, &str)> = bdfs.iter().map(|bdf| (bdf.as_str(), CARVED)).collect();
    let (Ok(scenario), Ok(helper)) = (support::scenario_of(&cards), support::helper_binary())
    else {
        eprintln!("cannot prepare the fake NVML");
        return;
    };
    if let Err(error) = support::helper_wrapper(dir.path(), &scenario, Build::Current, None) {
        eprintln!("{error}");
        return;
    }
    let lib = dir.path().join("lib");
    let scenario_path = dir.path().join("scenario.json");
    let read = |device: &str| {
        Command::new(&helper)
            .env_clear()
            .env("LD_LIBRARY_PATH", &lib)
            .env("FAKE_NVML_SCENARIO", &scenario_path)
            .args(["read", "--device", device, "--format", "1"])
            .output()
    };
    assert!(read(&bdfs[0]).is_ok_and(|output| output.status.success()));

    let mut group = c.benchmark_group("helper_nvml");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(6));
    group.bench_function("read_one_carved_a100", |b| {
        b.iter(|| read(&bdfs[0]).map(|output| output.stdout.len()))
    });

    let Ok(sysfs) = FakeSysfs::new(dir.path().join("sys")) else {
        return;
    };
    for bdf in &bdfs {
        if sysfs.nvidia(bdf, Some("nvidia")).is_err() {
            return;
        }
    }
    let env_var = |key: &str, path: &Path| format!("{key}={}", path.display()).into();
    let config = HelperConfig::new(&helper).wrapper(Wrapper::new(
        "/usr/bin/env",
        vec![
            env_var("LD_LIBRARY_PATH", &lib),
            env_var("FAKE_NVML_SCENARIO", &scenario_path),
        ],
    ));
    let client = Helper::new(config);
    let paths = Host::new(dir.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_lock_dir(dir.path().join("locks"));
    let options = SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::No);
    let mut store = FileStore::new(dir.path().join("state"));
    let first = sync(&paths, &client, &mut store, &options);
    assert!(
        first.is_ok_and(|report| report.status == HostStatus::Active),
        "the sync of 8 carved A100 is not active"
    );
    group.bench_function("sync_8_carved_a100", |b| {
        b.iter(|| sync(&paths, &client, &mut store, &options).map(|report| report.status))
    });
    group.finish();
}

criterion_group!(benches, helper_nvml);
criterion_main!(benches);
