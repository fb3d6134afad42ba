//! The process runner and the helper fan-out, timed:
//! (a) runner overhead against `std::process::Command::output()` on the same trivial program;
//! (b) deadline precision: a child that ignores SIGTERM, deadline 200 ms, grace 500 ms;
//! (c) fan-out: 16 cards whose helper takes 200 ms each, default concurrency, against one card.

use criterion::{Criterion, criterion_group, criterion_main};
use gpu_host_probe::Host;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::run::{RunResult, RunSpec, run};
use gpu_host_probe::test_util::{Act, FakeHelper, write_executable};
use gpu_partition_types::Bdf;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    let written = write_executable(&path, &format!("#!/bin/sh\n{body}\n"));
    if let Err(error) = written {
        eprintln!("cannot write {}: {error}", path.display());
    }
    path
}

fn overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("runner_overhead");
    group.bench_function("std_command_output", |b| {
        b.iter(|| {
            Command::new("/bin/true")
                .output()
                .map(|o| o.status.success())
        })
    });
    let spec = RunSpec::new("/bin/true", Duration::from_secs(5));
    // gpu_host_probe::run, under the name its figures have always been kept by (the crate was
    // gpu-probe), so criterion compares each run with the ones before.
    group.bench_function("gpu_probe_run", |b| b.iter(|| run(&spec).result));
    group.bench_function("trust_check_only", |b| {
        b.iter(|| gpu_host_probe::trust::check_trusted(Path::new("/bin/true")).is_ok())
    });
    group.finish();
}

fn deadline(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let stubborn = script(
        dir.path(),
        "stubborn",
        "trap '' TERM; while :; do sleep 0.05; done",
    );
    let spec = RunSpec::new(stubborn, Duration::from_millis(200));
    assert_eq!(run(&spec).result, RunResult::TimedOut);
    let mut group = c.benchmark_group("deadline_precision");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("ignores_sigterm_deadline_200ms_grace_500ms", |b| {
        b.iter(|| run(&spec).result)
    });
    group.finish();
}

fn fan_out(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let reply = r#"{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "disabled", "pending": null}, "case": "none_carved"}"#;
    let Ok(helper) = FakeHelper::new(dir.path())
        .reply(reply)
        .every_read(Act::Sleep(Duration::from_millis(200)))
        .write()
    else {
        return;
    };
    let helper = Helper::new(HelperConfig::new(helper));
    let cards: Vec<Bdf> = (0..16u8).map(|n| Bdf::on_bus(n + 1)).collect();
    // A built tree's host: its lock is kept beside the tree, never among the machine's.
    let host = Host::new(dir.path().join("state")).with_sysfs_root(dir.path().join("sys"));
    let Ok(lock) = host.try_lock() else {
        return;
    };
    assert!(
        helper
            .probe_locked(&lock, &cards)
            .iter()
            .all(|read| read.outcome.reason().is_none())
    );
    let mut group = c.benchmark_group("helper_fan_out");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("one_card", |b| {
        b.iter(|| helper.probe_locked(&lock, &cards[..1]).len())
    });
    group.bench_function("sixteen_cards_concurrency_8", |b| {
        b.iter(|| helper.probe_locked(&lock, &cards).len())
    });
    group.finish();
}

criterion_group!(benches, overhead, deadline, fan_out);
criterion_main!(benches);
