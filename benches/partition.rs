//! MIG layouts: planning eight GPUs from MIG off to a full layout (the pure planner, over the
//! H100 catalogue the real helper printed), and a whole apply through the real helper and the
//! fake NVML against the sum of the helper runs it makes (our overhead: lock, scan, plan,
//! store, sync).

use criterion::{Criterion, criterion_group, criterion_main};
use fake_nvml::support;
use gpu_host_probe::Host;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_partition_types::Reply;
use host_sync::MemoryStore;
use host_sync::fake_sysfs::FakeSysfs;
use layout_model::{ProfileKey, Want};
use mig_layout::{ApplyOptions, ApplyRun, Document, Method, ResetWith, plan};
use serde_json::json;
use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const H100_OFF: &str = include_str!("../mig-layout/tests/data/replies/h100-mig-off.json");
const H100_SCENARIO: &str = fake_nvml::scenarios::H100_MIG_OFF;
const LAYOUT: &str = "version: v1
mig-configs:
  balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {\"1g.10gb\": 2, \"2g.20gb\": 1, \"3g.40gb\": 1}
";

fn planning(c: &mut Criterion) {
    let Ok(reply) = Reply::from_json(H100_OFF.as_bytes(), None) else {
        return;
    };
    let Ok(document) = Document::from_text(LAYOUT) else {
        return;
    };
    let Some(spec) = document.label("balanced").and_then(|specs| specs.first()) else {
        return;
    };
    let want = Want::enabled(spec.mig_devices.clone());
    let sevens = Want::enabled(vec![(ProfileKey::Name("1g.10gb".into()), 7)]);
    let cards: Vec<Reply> = (0..8)
        .map(|n| {
            let mut card = reply.clone();
            card.device.bus = 0x3b + n;
            card
        })
        .collect();
    let mut group = c.benchmark_group("plan_8_gpus");
    group.bench_function("mig_off_to_balanced", |b| {
        b.iter(|| {
            cards
                .iter()
                .map(|card| plan(black_box(card), &want).map_or(0, |p| p.create.len()))
                .sum::<usize>()
        })
    });
    group.bench_function("mig_off_to_seven_1g_10gb", |b| {
        b.iter(|| {
            cards
                .iter()
                .map(|card| plan(black_box(card), &sevens).map_or(0, |p| p.create.len()))
                .sum::<usize>()
        })
    });
    group.finish();
}

/// One run of the real helper over the fake's state, with `stdin` when given.
fn helper_run(helper: &Path, args: &[&str], stdin: Option<String>) -> usize {
    let Ok(mut child) = Command::new(helper)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return 0;
    };
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(text.as_bytes());
    }
    child
        .wait_with_output()
        .map_or(0, |output| output.stdout.len())
}

fn whole_apply(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let Ok(sysfs) = FakeSysfs::new(dir.path().join("sys")) else {
        return;
    };
    if sysfs
        .function(
            "0000:3b:00.0",
            "0x10de",
            "0x2330",
            "0x030200",
            Some("nvidia"),
        )
        .is_err()
    {
        return;
    }
    let Ok((helper, state)) = support::stateful_helper_wrapper(dir.path(), H100_SCENARIO, None)
    else {
        eprintln!("cannot prepare the fake NVML");
        return;
    };
    let Ok(document) = Document::from_text(LAYOUT) else {
        return;
    };
    let specs = document.label("balanced").unwrap_or_default().to_vec();
    let host = Host::new(dir.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_lock_dir(dir.path().join("locks"));
    let client = Helper::new(HelperConfig::new(&helper));
    let options = ApplyOptions::new(host_sync::Pool::Enabled);
    let fresh = || {
        let _ = std::fs::remove_file(&state);
    };
    let mut group = c.benchmark_group("partition_apply_h100");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("whole_apply_through_mig_layout", |b| {
        b.iter(|| {
            fresh();
            let mut store = MemoryStore::default();
            // An H100's mode changes at once: the apply never resets.
            let mut backend = warm_reset::NvidiaSmiBackend::of(
                warm_reset::nvidia::NvidiaSmiHost::new(None, "/proc", "/dev/kmsg"),
            );
            let reset = ResetWith::new(Method::Nvidia, &mut backend).window(Duration::from_secs(5));
            let run = ApplyRun::new(&host, &client, &mut store, reset);
            mig_layout::apply(run, "balanced", &specs, &options).map_or(0, |report| report.writes())
        })
    });
    // The same helper runs, one after the other, with nothing around them: `--version`, the
    // preflight read, the mode, the creates, the compute instances, then the sync's
    // `--version` and read.
    let device = "0000:3b:00.0";
    let read = ["read", "--device", device, "--format", "1"];
    let apply = ["apply", "--device", device, "--format", "1"];
    let mode = json!({"steps": [{"op": "set_mig_mode", "enabled": true}]}).to_string();
    let creates = json!({"steps": [
        {"op": "create_gpu_instance", "profile_id": 19, "placement": {"start": 0, "size": 1}},
        {"op": "create_gpu_instance", "profile_id": 19, "placement": {"start": 1, "size": 1}},
        {"op": "create_gpu_instance", "profile_id": 14, "placement": {"start": 2, "size": 2}},
        {"op": "create_gpu_instance", "profile_id": 9, "placement": {"start": 4, "size": 4}}]})
    .to_string();
    let computes = json!({"steps": [
        {"op": "create_compute_instance", "gpu_instance_id": 1, "profile_id": 0},
        {"op": "create_compute_instance", "gpu_instance_id": 2, "profile_id": 0},
        {"op": "create_compute_instance", "gpu_instance_id": 3, "profile_id": 1},
        {"op": "create_compute_instance", "gpu_instance_id": 4, "profile_id": 2}]})
    .to_string();
    group.bench_function("sum_of_its_seven_helper_runs", |b| {
        b.iter(|| {
            fresh();
            helper_run(&helper, &["--version"], None)
                + helper_run(&helper, &read, None)
                + helper_run(&helper, &apply, Some(mode.clone()))
                + helper_run(&helper, &apply, Some(creates.clone()))
                + helper_run(&helper, &apply, Some(computes.clone()))
                + helper_run(&helper, &["--version"], None)
                + helper_run(&helper, &read, None)
        })
    });
    group.finish();
}

criterion_group!(benches, planning, whole_apply);
criterion_main!(benches);
