//! `mxctl partition` while it runs: the host's status during an apply, its progress lines on a
//! terminal and piped, a rerun after a run killed inside its reset, and a reset from another
//! state directory turned away while an apply runs (and the other way round).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use common::partition_host::PartitionHost;
use common::partition_layouts::{BALANCED, GPU0, SEVEN_ON_GPU0, instances, mig};
use serde_json::Value;

#[test]
fn while_a_layout_is_applied_the_host_is_entering_with_layout_applying() {
    let host = PartitionHost::one_h100();
    host.sync("enabled");
    // Each write takes a while, so the apply is seen running.
    host.change_nvml(|state| {
        state["devices"][0]["write_delay_ms"] = serde_json::json!(150);
    });
    let file = host.path("layout.yaml");
    std::fs::write(&file, BALANCED).unwrap();
    let mut apply = host
        .command(&[
            "apply",
            "-f",
            file.to_str().unwrap(),
            "-c",
            "balanced",
            "--pool",
            "enabled",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut seen = None;
    while started.elapsed() < std::time::Duration::from_secs(120) {
        let status = host.status();
        if status["reason"] == "layout_applying" {
            seen = Some(status);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(apply.wait().unwrap().success());
    let seen = seen.expect("the host never showed the apply running");
    assert_eq!(seen["status"], "entering");
    assert_eq!(seen["layout"]["outcome"], "applying");
    assert_eq!(seen["layout"]["label"], "balanced");
    let after = host.status();
    assert_eq!(
        (after["status"].as_str(), after["reason"].as_str()),
        (Some("active"), Some("ready"))
    );
    assert_eq!(after["layout"]["outcome"], "done");
}

/// The lines of a run's output that are progress lines: `  12.3s  BDF  what`.
fn progress_lines(shown: &str) -> Vec<String> {
    shown
        .lines()
        .filter_map(|line| {
            let (seconds, rest) = line.trim_start().split_once("s  ")?;
            seconds.parse::<f64>().ok()?;
            let (device, what) = rest.split_once("  ")?;
            (device == GPU0).then(|| what.trim_end().to_owned())
        })
        .collect()
}

#[test]
fn on_a_terminal_each_step_is_a_line_as_it_runs_and_piped_only_the_report_is_printed() {
    let run = |terminal: bool| {
        let host = PartitionHost::one_h100();
        let layout = host.path("layout.yaml");
        std::fs::write(&layout, BALANCED).unwrap();
        let file = layout.to_str().unwrap();
        let args = [
            "apply", "--config", file, "-c", "balanced", "--pool", "enabled",
        ];
        let command = host.command_for_people(&args);
        let out = if terminal {
            // script(1) gives mxctl a pseudo-terminal for its standard output.
            let quoted: Vec<String> = std::iter::once(command.get_program())
                .chain(command.get_args())
                .map(|word| format!("'{}'", word.to_str().unwrap().replace('\'', r"'\''")))
                .collect();
            std::process::Command::new("script")
                .args(["-qec", &quoted.join(" "), "/dev/null"])
                .output()
                .unwrap()
        } else {
            let mut command = command;
            command.output().unwrap()
        };
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().replace('\r', "")
    };
    let live = progress_lines(&run(true));
    let steps: Vec<&String> = live.iter().filter(|what| what.contains(" done")).collect();
    // The mode, four GPU instances and their four compute instances, each as it ran.
    assert_eq!(steps.len(), 9, "{live:#?}");
    assert!(steps[0].starts_with("set_mig_mode done"), "{live:#?}");
    assert!(live.first().unwrap().starts_with("plan: "), "{live:#?}");
    assert_eq!(live.last().unwrap(), "read back: as the layout wants");
    let piped = run(false);
    assert!(progress_lines(&piped).is_empty(), "{piped}");
    assert!(piped.contains("create_gpu_instance done"), "{piped}");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_rerun_after_a_run_killed_inside_its_reset_waits_the_window_out_and_resets_nothing_more() {
    common::require_root();
    let host = PartitionHost::two_a100s();
    // The reset takes effect half a second after it is issued, as a real one takes a while.
    std::fs::write(host.path("bin/reset-delay"), "0.5").unwrap();
    let layout = host.path("layout.yaml");
    std::fs::write(&layout, SEVEN_ON_GPU0).unwrap();
    let file = layout.to_str().unwrap();
    let args = [
        "apply",
        "--config",
        file,
        "-c",
        "gpu0-1g.5gb",
        "--pool",
        "enabled",
    ];
    let mut killed = host
        .command(&args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its reset is issued (the fake nvidia-smi goes on, as a real one would).
    let started = std::time::Instant::now();
    while host.resets().is_empty() && started.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(host.resets().len(), 1);
    let (code, report) = common::run_json(host.command(&args));
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["outcome"], "done", "{report:#}");
    // The killed run's reset, verified once its window ended: no second one.
    assert_eq!(host.resets().len(), 1, "{:?}", host.resets());
    assert_eq!(
        report["resets"][0]["warnings"][0], "verifying a reset that an earlier run issued",
        "{report:#}"
    );
    assert_eq!(mig(&host.card(GPU0)), (1, 1));
    assert_eq!(instances(&host.card(GPU0)).len(), 7);
}

/// `mxctl --json reset --method nvidia --device 0` on `host`'s machine (its sysfs and procfs)
/// but with another state directory: another `Host` of the same machine.
fn reset_from_another_state_dir(host: &PartitionHost) -> std::process::Command {
    let mut command = common::mxctl_on(
        host.sysfs.root(),
        &host.path("another-state"),
        &host.path("locks"),
    );
    command
        .arg("--json")
        .arg("--proc-root")
        .arg(host.path("proc"))
        .args([
            "reset",
            "--method",
            "nvidia",
            "--device",
            "0",
            "--nvidia-smi",
        ])
        .arg(host.path("bin/nvidia-smi"))
        .arg("--kmsg")
        .arg(host.path("kmsg"));
    command
}

fn wait_until(what: &str, done: impl Fn() -> bool) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !done() {
        assert!(std::time::Instant::now() < give_up, "{what} never came");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_reset_from_another_state_directory_while_an_apply_runs_is_turned_away() {
    common::require_root();
    let host = PartitionHost::one_h100();
    host.sync("enabled");
    // Each write of the card takes a while, as NVML's do: the apply holds the lock for seconds.
    host.change_nvml(|state| state["devices"][0]["write_delay_ms"] = 700.into());
    let apply = host
        .apply_command(BALANCED, "balanced", &[])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the apply's first write", || {
        host.calls()
            .iter()
            .any(|c| c.starts_with("nvmlDeviceSetMigMode"))
    });
    common::blocked(
        common::run_json(reset_from_another_state_dir(&host)),
        "lock_busy",
    );
    assert!(host.resets().is_empty());
    let output = apply.wait_with_output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["outcome"], "done", "{report:#}");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn an_apply_while_a_reset_from_another_state_directory_runs_is_turned_away() {
    common::require_root();
    let host = PartitionHost::one_h100();
    host.sync("enabled");
    std::fs::write(host.path("bin/reset-delay"), "2").unwrap();
    let reset = reset_from_another_state_dir(&host)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the reset", || !host.resets().is_empty());
    host.clear_calls();
    let (code, report) = host.apply(BALANCED, "balanced", &[]);
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["reason"], "lock_busy", "{report:#}");
    let detail = report["detail"].as_str().unwrap();
    assert!(detail.contains("another-state"), "{detail}");
    assert!(host.writes().is_empty(), "{:?}", host.writes());
    let output = reset.wait_with_output().unwrap();
    let reset: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(reset["outcome"], "done", "{reset:#}");
}
