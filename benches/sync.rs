//! The host sync of a host with N NVIDIA GPUs (a built sysfs tree, a helper that answers at
//! once, the file store), for N = 1, 4, 16, 64: how its time grows with the GPUs.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpu_probe::helper::{Helper, HelperConfig};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{AfterBoot, FileStore, HostPaths, SyncOptions, sync};
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

const HELPER: &str = r#"#!/bin/sh
if [ "$1" = --version ]; then echo '{"commands": [{"name": "read", "formats": ["1.0"]}]}'; exit 0; fi
printf '{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "enabled", "pending": null}, "case": "partitions", "gpu_instances": [{"id": 1, "profile_id": 9, "uuid": null}]}\n' "$3"
"#;

fn host_sync(c: &mut Criterion) {
    let mut group = c.benchmark_group("sync_pool_enabled");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(8));
    for gpus in [1usize, 4, 16, 64] {
        let Ok(dir) = tempfile::tempdir() else { return };
        let Ok(sysfs) = FakeSysfs::new(dir.path().join("sys")) else {
            return;
        };
        for n in 0..gpus {
            if let Err(error) = sysfs.nvidia(
                &format!("0000:{:02x}:{:02x}.0", 1 + n / 32, n % 32),
                Some("nvidia"),
            ) {
                eprintln!("cannot build the sysfs tree: {error}");
                return;
            }
        }
        let helper_path = dir.path().join("helper");
        let written = std::fs::write(&helper_path, HELPER).and_then(|()| {
            std::fs::set_permissions(&helper_path, std::fs::Permissions::from_mode(0o755))
        });
        if written.is_err() {
            return;
        }
        let helper = Helper::new(HelperConfig::new(&helper_path));
        let paths = HostPaths::new(dir.path().join("state"), sysfs.root());
        let options = SyncOptions::new(true, AfterBoot::No);
        let mut store = FileStore::new(dir.path().join("state"));
        let first = sync(&paths, &helper, &mut store, &options);
        assert!(first.is_ok_and(|report| report.status == host_sync::HostStatus::Active));
        group.bench_with_input(BenchmarkId::from_parameter(gpus), &gpus, |b, _| {
            b.iter(|| sync(&paths, &helper, &mut store, &options).map(|report| report.status))
        });
    }
    group.finish();
}

criterion_group!(benches, host_sync);
criterion_main!(benches);
