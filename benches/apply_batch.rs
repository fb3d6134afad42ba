//! `apply` through the fake NVML: a batch of 14 steps (seven 1g instances and their compute
//! instances on an A100) in one helper run, against the same 14 steps in fourteen one-step
//! runs. Each iteration starts from the card with MIG on and nothing carved (the fake's state
//! file is removed, so the run starts from the scenario).

use criterion::{Criterion, criterion_group, criterion_main};
use fake_nvml::support::{self, Build};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const NONE_CARVED: &str = fake_nvml::scenarios::A100_MIG_ON_NONE_CARVED;
const DEVICE: &str = "0000:3b:00.0";

fn steps() -> Vec<Value> {
    (0..7)
        .flat_map(|n| {
            [
                json!({"op": "create_gpu_instance", "profile_id": 19,
                       "placement": {"start": n, "size": 1}}),
                json!({"op": "create_compute_instance", "gpu_instance_id": n + 1, "profile_id": 0}),
            ]
        })
        .collect()
}

fn apply_batch(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let (Ok(helper), Ok(_)) = (
        support::helper_binary(),
        support::helper_wrapper(dir.path(), NONE_CARVED, Build::Current, None),
    ) else {
        eprintln!("cannot prepare the fake NVML");
        return;
    };
    let lib = dir.path().join("lib");
    let scenario = dir.path().join("scenario.json");
    let state = dir.path().join("state.json");
    let apply = |steps: &[Value]| {
        let mut child = Command::new(&helper)
            .env_clear()
            .env("LD_LIBRARY_PATH", &lib)
            .env("FAKE_NVML_SCENARIO", &scenario)
            .env("FAKE_NVML_STATE", &state)
            .args(["apply", "--device", DEVICE, "--format", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        child
            .stdin
            .take()?
            .write_all(json!({ "steps": steps }).to_string().as_bytes())
            .ok()?;
        let output = child.wait_with_output().ok()?;
        output.status.success().then_some(output.stdout)
    };
    let fresh = |state: &Path| {
        let _ = std::fs::remove_file(state);
    };
    let all = steps();
    fresh(&state);
    let answer = apply(&all).and_then(|stdout| serde_json::from_slice::<Value>(&stdout).ok());
    let done = answer
        .as_ref()
        .and_then(|a| a["results"].as_array())
        .map_or(0, |results| {
            results.iter().filter(|r| r["result"] == "done").count()
        });
    assert_eq!(done, 14, "the batch did not run: {answer:?}");

    let mut group = c.benchmark_group("apply_14_steps_a100");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("one_run_of_14_steps", |b| {
        b.iter(|| {
            fresh(&state);
            apply(&all).map(|stdout| stdout.len())
        })
    });
    group.bench_function("fourteen_runs_of_one_step", |b| {
        b.iter(|| {
            fresh(&state);
            all.iter()
                .map(|step| apply(std::slice::from_ref(step)).map_or(0, |stdout| stdout.len()))
                .sum::<usize>()
        })
    });
    group.finish();
}

criterion_group!(benches, apply_batch);
criterion_main!(benches);
