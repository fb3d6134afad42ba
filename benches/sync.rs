//! The host sync of a host with N NVIDIA GPUs (a built sysfs tree, a helper that answers at
//! once, the file store), for N = 1, 4, 16, 64: how its time grows with the GPUs.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::FakeHelper;
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{AfterBoot, FileStore, Host, SyncOptions, sync};
use std::time::Duration;

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
        let Ok(helper_path) = FakeHelper::new(dir.path()).write() else {
            return;
        };
        let helper = Helper::new(HelperConfig::new(&helper_path));
        let paths = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_lock_dir(dir.path().join("locks"));
        let options = SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::No);
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
