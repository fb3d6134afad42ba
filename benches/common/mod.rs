//! What the apply benches `amd` and `vgpu` share: both time one card against eight, the
//! question each asks being whether eight take about one card's time. Included by each as
//! `mod common;` (a bench target is its own crate, and the library does not depend on
//! criterion).

use criterion::Criterion;
use host_sync::fake_sysfs::FakeSysfs;
use std::time::Duration;
use tempfile::TempDir;

/// A bed's directory, on tmpfs where there is one, with the fake sysfs at its `sys`: the
/// fakes write their state whole (and NVML's fsyncs it) on every change, a cost of the fake
/// that no card has, which a disk would add to every card's time.
pub fn scratch_with_sysfs() -> Option<(TempDir, FakeSysfs)> {
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .ok()?;
    let sysfs = FakeSysfs::new(dir.path().join("sys")).ok()?;
    Some((dir, sysfs))
}

/// The group `name` (10 samples): a bench `1_gpus` and a bench `8_gpus`, each on the bed
/// `prepare` makes for that many cards and timed by `once` (which undoes its work outside the
/// timing). A bed that cannot be made is said (`cannot prepare {what}`) and ends the group
/// there: a bench on half a host would measure something else.
pub fn one_against_eight<B>(
    c: &mut Criterion,
    name: &str,
    what: &str,
    mut prepare: impl FnMut(u8) -> Option<B>,
    once: impl Fn(&mut B) -> Duration,
) {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    for cards in [1u8, 8] {
        let Some(mut bed) = prepare(cards) else {
            eprintln!("cannot prepare {what}");
            return;
        };
        group.bench_function(format!("{cards}_gpus"), |b| {
            b.iter_custom(|iterations| (0..iterations).map(|_| once(&mut bed)).sum())
        });
    }
    group.finish();
}
