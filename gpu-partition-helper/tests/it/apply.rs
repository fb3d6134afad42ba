//! `apply` through the real helper and the fake NVML, whose state outlives each run: every step
//! done, each refusal kind from the rule the fake enforces, a batch stopped at its first
//! refusal, pending and immediate mode changes, a malformed request refused before anything is
//! written, and kill -9 in the middle of a batch.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::support::{fake_nvml_binary, stateful_helper_wrapper};
use gpu_partition_types::{ApplyAnswer, Bdf, Reply, StepOutcome};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

const DEVICE: &str = "0000:3b:00.0";

fn device() -> Bdf {
    DEVICE.parse().unwrap()
}

fn scenario(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fake-nvml/scenarios")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// One card behind the fake, its state kept in a file across helper runs.
struct Card {
    dir: tempfile::TempDir,
    wrapper: PathBuf,
    state: PathBuf,
}

impl Card {
    fn new(name: &str) -> Card {
        Card::of(scenario(name))
    }

    fn of(scenario: Value) -> Card {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.log");
        let (wrapper, state) =
            stateful_helper_wrapper(dir.path(), &scenario.to_string(), Some(&log)).unwrap();
        Card {
            dir,
            wrapper,
            state,
        }
    }

    fn run(&self, args: &[&str], input: &str) -> Output {
        self.start(args, input, Stdio::piped)
            .wait_with_output()
            .unwrap()
    }

    /// The helper started with `args` and `input` written on its stdin, which is then closed;
    /// its stdout and stderr go to `output` (piped to be read, or null).
    fn start(&self, args: &[&str], input: &str, output: fn() -> Stdio) -> Child {
        let mut child = Command::new(&self.wrapper)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(output())
            .stderr(output())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child
    }

    /// `apply` of `steps`; answers the answer as read and its `reply` member as printed.
    fn apply(&self, steps: Value) -> (ApplyAnswer, Value) {
        let output = self.run(
            &["apply", "--device", DEVICE, "--format", "1"],
            &json!({ "steps": steps }).to_string(),
        );
        assert!(
            output.status.success(),
            "apply: {:?} {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let answer = ApplyAnswer::from_json(&output.stdout, &device()).unwrap();
        let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        (answer, printed["reply"].clone())
    }

    /// What `read` prints now.
    fn read(&self) -> Value {
        let output = self.run(&["read", "--device", DEVICE, "--format", "1"], "");
        assert!(output.status.success());
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// `apply`, and the check that its reply is what `read` prints next.
    fn apply_and_check(&self, steps: Value) -> ApplyAnswer {
        let (answer, reply) = self.apply(steps);
        assert_eq!(
            reply,
            self.read(),
            "the answer's reply is not what read prints next"
        );
        answer
    }

    /// Edits the fake's state file (a client leaving, say).
    fn edit_state(&self, edit: impl FnOnce(&mut Value)) {
        let mut state: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.state).unwrap()).unwrap();
        edit(&mut state);
        std::fs::write(&self.state, state.to_string()).unwrap();
    }

    fn writes(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .filter(|call| {
                ["Create", "Destroy", "SetMigMode"]
                    .iter()
                    .any(|word| call.contains(word))
            })
            .map(str::to_owned)
            .collect()
    }

    fn reset(&self) {
        let status = Command::new(fake_nvml_binary().unwrap())
            .args(["reset", "--device", DEVICE])
            .env("FAKE_NVML_STATE", &self.state)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// Each result as `op result[ kind]`.
fn results(answer: &ApplyAnswer) -> Vec<String> {
    answer
        .results
        .iter()
        .map(|result| match &result.outcome {
            StepOutcome::Refused { kind, .. } => format!("{} refused {kind}", result.op),
            outcome => format!("{} {}", result.op, outcome.as_str()),
        })
        .collect()
}

fn instances(reply: &Reply) -> Vec<(u32, u32, u32, Vec<u32>)> {
    reply
        .gpu_instances
        .read()
        .unwrap()
        .iter()
        .map(|gi| {
            let gi = gi.read().unwrap();
            let placement = gi.placement.read().unwrap();
            let cis = gi
                .compute_instances
                .read()
                .unwrap()
                .iter()
                .map(|ci| ci.profile_id)
                .collect();
            (gi.profile_id, placement.start, placement.size, cis)
        })
        .collect()
}

fn gi(profile_id: u32, start: u32, size: u32) -> Value {
    json!({"op": "create_gpu_instance", "profile_id": profile_id,
           "placement": {"start": start, "size": size}})
}

fn ci(gpu_instance_id: u32, profile_id: u32) -> Value {
    json!({"op": "create_compute_instance", "gpu_instance_id": gpu_instance_id,
           "profile_id": profile_id})
}

#[test]
fn the_version_reply_lists_apply_in_the_format_it_writes() {
    let output = Command::new(env!("CARGO_BIN_EXE_gpu-partition-helper"))
        .arg("--version")
        .output()
        .unwrap();
    let version: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        version["commands"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "apply", "formats": ["1.4"]})),
        "{version}"
    );
}

#[test]
fn every_step_kind_is_done_and_the_reply_is_what_read_prints_next() {
    let card = Card::new("a100-mig-on-none-carved.json");
    let answer = card.apply_and_check(json!([
        gi(19, 6, 1),
        ci(1, 0),
        gi(14, 0, 2),
        {"op": "create_compute_instance", "gpu_instance_id": 2, "profile_id": 0,
         "placement": {"start": 1, "size": 1}},
        {"op": "destroy_compute_instance", "gpu_instance_id": 2, "compute_instance_id": 0},
        {"op": "destroy_gpu_instance", "gpu_instance_id": 2},
    ]));
    assert_eq!(
        results(&answer),
        [
            "create_gpu_instance done",
            "create_compute_instance done",
            "create_gpu_instance done",
            "create_compute_instance done",
            "destroy_compute_instance done",
            "destroy_gpu_instance done",
        ]
    );
    assert!(matches!(
        answer.results[0].outcome,
        StepOutcome::Done {
            gpu_instance_id: Some(1),
            ..
        }
    ));
    assert!(matches!(
        answer.results[1].outcome,
        StepOutcome::Done {
            compute_instance_id: Some(0),
            ..
        }
    ));
    assert_eq!(instances(&answer.reply), [(19, 6, 1, vec![0])]);
}

#[test]
fn a_mode_change_on_a_hopper_card_is_done_at_once() {
    let card = Card::new("h100-mig-off.json");
    let answer =
        card.apply_and_check(json!([{"op": "set_mig_mode", "enabled": true}, gi(9, 0, 4)]));
    assert_eq!(
        results(&answer),
        ["set_mig_mode done", "create_gpu_instance done"]
    );
    assert!(matches!(
        answer.results[0].outcome,
        StepOutcome::Done { pending: false, .. }
    ));
    assert_eq!(
        answer.reply.outcome().partition_mode().to_string(),
        "enabled"
    );
}

#[test]
fn a_mode_change_on_an_ampere_card_is_pending_until_a_reset_which_leaves_no_instance() {
    let card = Card::new("a100-mig-off.json");
    let answer = card.apply_and_check(json!([{"op": "set_mig_mode", "enabled": true}]));
    assert!(matches!(
        answer.results[0].outcome,
        StepOutcome::Done { pending: true, .. }
    ));
    assert_eq!(
        answer.reply.outcome().partition_mode().to_string(),
        "enable_on_reboot"
    );
    card.reset();
    let reply = Reply::from_json(card.read().to_string().as_bytes(), Some(&device())).unwrap();
    assert_eq!(reply.outcome().partition_mode().to_string(), "enabled");
    assert!(instances(&reply).is_empty());
}

#[test]
fn an_overlapping_placement_is_insufficient_resources_and_the_rest_is_skipped() {
    let card = Card::new("a100-mig-on-carved.json");
    // GPU instance 1 (3g) holds slices 0 to 3.
    let answer = card.apply_and_check(json!([gi(19, 6, 1), gi(19, 2, 1), ci(3, 0)]));
    assert_eq!(
        results(&answer),
        [
            "create_gpu_instance done",
            "create_gpu_instance refused insufficient_resources",
            "create_compute_instance skipped",
        ]
    );
    // The partial state: the one instance that was made, beside the two there were.
    assert_eq!(instances(&answer.reply).len(), 3);
}

#[test]
fn a_profile_past_its_instance_count_is_insufficient_resources() {
    let card = Card::new("a100-mig-on-none-carved.json");
    // 1g.5gb+me (ID 20) has one instance on the whole card.
    let answer = card.apply_and_check(json!([gi(20, 0, 1), gi(20, 1, 1)]));
    assert_eq!(
        results(&answer),
        [
            "create_gpu_instance done",
            "create_gpu_instance refused insufficient_resources",
        ]
    );
}

#[test]
fn a_create_with_mig_off_is_not_supported() {
    let card = Card::new("a100-mig-off.json");
    let answer = card.apply_and_check(json!([gi(19, 0, 1)]));
    assert_eq!(
        results(&answer),
        ["create_gpu_instance refused not_supported"]
    );
}

#[test]
fn destroying_a_gpu_instance_that_has_a_compute_instance_is_in_use() {
    let card = Card::new("a100-mig-on-none-carved.json");
    card.apply(json!([gi(19, 0, 1), ci(1, 0)]));
    let answer =
        card.apply_and_check(json!([{"op": "destroy_gpu_instance", "gpu_instance_id": 1}]));
    assert_eq!(results(&answer), ["destroy_gpu_instance refused in_use"]);
    assert_eq!(instances(&answer.reply), [(19, 0, 1, vec![0])]);
}

#[test]
fn destroying_a_gpu_instance_with_a_vgpu_placed_on_it_is_in_use() {
    let card = Card::new("a100-mig-on-carved.json");
    let answer = card.apply_and_check(json!([
        {"op": "destroy_compute_instance", "gpu_instance_id": 2, "compute_instance_id": 0},
        {"op": "destroy_gpu_instance", "gpu_instance_id": 2},
    ]));
    assert_eq!(
        results(&answer),
        [
            "destroy_compute_instance done",
            "destroy_gpu_instance refused in_use"
        ]
    );
}

#[test]
fn a_mode_change_with_clients_is_in_use_and_changes_nothing() {
    let mut scenario = scenario("h100-mig-off.json");
    scenario["devices"][0]["clients"] = json!([{"pid": 4242, "name": "python3"}]);
    let card = Card::of(scenario);
    let answer = card.apply_and_check(json!([{"op": "set_mig_mode", "enabled": true}]));
    assert_eq!(results(&answer), ["set_mig_mode refused in_use"]);
    assert_eq!(
        answer.reply.outcome().partition_mode().to_string(),
        "disabled"
    );
    // The reply names who holds the card.
    let processes = answer.reply.processes.read().unwrap();
    let process = processes[0].read().unwrap();
    assert_eq!(
        (process.pid, process.name.read().map(String::as_str)),
        (4242, Some("python3"))
    );
}

#[test]
fn an_injected_no_permission_is_refused_no_permission() {
    let mut scenario = scenario("a100-mig-on-none-carved.json");
    scenario["devices"][0]["fail"] =
        json!({"nvmlDeviceCreateGpuInstanceWithPlacement": "NO_PERMISSION"});
    let card = Card::of(scenario);
    let answer = card.apply_and_check(json!([gi(19, 0, 1), ci(1, 0)]));
    assert_eq!(
        results(&answer),
        [
            "create_gpu_instance refused no_permission",
            "create_compute_instance skipped"
        ]
    );
    match &answer.results[0].outcome {
        StepOutcome::Refused { message, .. } => {
            assert!(message.contains("profile 19 at 0+1"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_batch_refused_midway_goes_on_from_there_after_the_fix_and_does_nothing_twice() {
    let card = Card::new("a100-mig-on-none-carved.json");
    // Made before a monitoring daemon came to hold the card.
    card.apply(json!([gi(14, 0, 2)]));
    card.edit_state(|state| state["devices"][0]["clients"] = json!([{"pid": 7, "name": "dcgm"}]));
    let batch = [
        gi(19, 6, 1),
        json!({"op": "destroy_gpu_instance", "gpu_instance_id": 1}),
        gi(9, 0, 4),
    ];
    let first = card.apply_and_check(json!(batch));
    assert_eq!(
        results(&first),
        [
            "create_gpu_instance done",
            "destroy_gpu_instance refused in_use",
            "create_gpu_instance skipped"
        ]
    );
    assert_eq!(
        instances(&first.reply),
        [(14, 0, 2, vec![]), (19, 6, 1, vec![])]
    );
    // The fix: the client goes. The batch goes on from the step that was refused.
    card.edit_state(|state| state["devices"][0]["clients"] = json!([]));
    let rest: Vec<Value> = batch.iter().skip(1).cloned().collect();
    let second = card.apply_and_check(json!(rest));
    assert_eq!(
        results(&second),
        ["destroy_gpu_instance done", "create_gpu_instance done"]
    );
    assert_eq!(
        instances(&second.reply),
        [(9, 0, 4, vec![]), (19, 6, 1, vec![])]
    );
    let creates = card
        .writes()
        .iter()
        .filter(|call| call.starts_with("nvmlDeviceCreateGpuInstanceWithPlacement 19"))
        .count();
    assert_eq!(creates, 1, "a step was done twice: {:?}", card.writes());
}

#[test]
fn a_malformed_request_is_refused_with_exit_2_naming_the_member_before_anything_is_written() {
    let card = Card::new("a100-mig-on-none-carved.json");
    for (request, pointer) in [
        (
            json!({"steps": [gi(19, 0, 1), {"op": "reshape"}]}).to_string(),
            "/steps/1/op",
        ),
        (
            json!({"steps": [gi(19, 0, 1), {"op": "destroy_gpu_instance"}]}).to_string(),
            "/steps/1/gpu_instance_id",
        ),
        ("{\"steps\": [".to_owned(), ""),
    ] {
        let output = card.run(&["apply", "--device", DEVICE, "--format", "1"], &request);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("refused at {pointer:?}")),
            "{stderr}"
        );
        assert!(output.stdout.is_empty());
    }
    assert!(card.writes().is_empty(), "{:?}", card.writes());
    let calls = std::fs::read_to_string(card.dir.path().join("calls.log")).unwrap_or_default();
    assert!(
        !calls.contains("nvmlInit"),
        "NVML was loaded for a refused request: {calls}"
    );
}

#[test]
fn apply_refuses_the_fixture_options_which_only_read() {
    let output = Command::new(env!("CARGO_BIN_EXE_gpu-partition-helper"))
        .args([
            "--fixture",
            "/dev/null",
            "apply",
            "--device",
            DEVICE,
            "--format",
            "1",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// A small pseudo-random sequence (no dependency for it).
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *seed >> 33
}

#[test]
fn a_helper_killed_anywhere_in_a_long_batch_leaves_a_state_that_reads_and_that_read_agrees_with() {
    let mut scenario = scenario("a100-mig-on-none-carved.json");
    scenario["devices"][0]["write_delay_ms"] = json!(4);
    let card = Card::of(scenario);
    // Seven 1g instances and their compute instances: fourteen writes.
    let steps: Vec<Value> = (0..7).flat_map(|n| [gi(19, n, 1), ci(n + 1, 0)]).collect();
    let request = json!({ "steps": steps }).to_string();
    let mut seed = 20_261_201;
    let mut killed_between = 0;
    for _ in 0..100 {
        let _ = std::fs::remove_file(&card.state);
        let mut child = card.start(
            &["apply", "--device", DEVICE, "--format", "1"],
            &request,
            Stdio::null,
        );
        std::thread::sleep(std::time::Duration::from_millis(lcg(&mut seed) % 90));
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = child.wait();
        if !card.state.exists() {
            continue;
        }
        let text = std::fs::read_to_string(&card.state).unwrap();
        let state = fake_nvml::Scenario::from_json(text.as_bytes())
            .unwrap_or_else(|error| panic!("the state does not read: {error}\n{text}"));
        let stored: Vec<(u32, u32, usize)> = state.devices[0]
            .gpu_instances
            .iter()
            .map(|gi| {
                (
                    gi.profile_id,
                    gi.placement.start,
                    gi.compute_instances.len(),
                )
            })
            .collect();
        let reply = Reply::from_json(card.read().to_string().as_bytes(), Some(&device())).unwrap();
        let read: Vec<(u32, u32, usize)> = instances(&reply)
            .into_iter()
            .map(|(profile, start, _, cis)| (profile, start, cis.len()))
            .collect();
        assert_eq!(read, stored);
        if !stored.is_empty() && stored.len() < 7 {
            killed_between += 1;
        }
    }
    assert!(
        killed_between > 0,
        "no run was killed in the middle of the batch"
    );
}

#[test]
fn the_device_script_runs_the_helper_only_to_read() {
    let script = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/device-nvml-check.sh"),
    )
    .unwrap();
    let helper_runs: Vec<&str> = script
        .lines()
        .filter(|line| line.contains("\"$helper\""))
        .collect();
    assert!(!helper_runs.is_empty());
    for line in helper_runs {
        assert!(
            line.contains("\"$helper\" --version") || line.contains("\"$helper\" read "),
            "the device script runs the helper for more than reading: {line}"
        );
    }
    assert!(
        !script.contains(" apply "),
        "the device script must never call apply"
    );
}
