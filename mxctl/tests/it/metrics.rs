//! `mxctl metrics`: the stored state and the last warm reset as Prometheus text, checked here
//! sample by sample. Each case also leaves its output in `<target>/tmp/metrics-samples/`, where
//! CI reads it again with the Prometheus project's own Python parser (`.ci/check_metrics.py`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::Host as ResetHost;
use common::sync_host::{CARVED, NO_MIG, ON_PENDING, SyncHost};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// `mxctl metrics` on the state directory `state`, with `--output FILE` when given.
fn metrics_command(state: &Path, output: Option<&Path>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mxctl"));
    command
        .args(["--config", "/dev/null", "--state-dir"])
        .arg(state)
        // On the real `/sys`: the test's own directory of locks, named as the machine's, so
        // nothing is left among the machine's (metrics only reads the record of writes there).
        .arg("--machine-lock-dir")
        .arg(state.join("locks"))
        .arg("metrics");
    if let Some(output) = output {
        command.arg("--output").arg(output);
    }
    command
}

/// The metrics text of `state`, which must exit 0; kept as `<sample>.prom` for CI's parser.
fn metrics(state: &Path, sample: &str) -> String {
    let output = common::succeeded(&mut metrics_command(state, None));
    let text = String::from_utf8(output.stdout).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("metrics-samples");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{sample}.prom")), &text).unwrap();
    text
}

/// Every sample, `name{labels}` → value; and every family has its HELP and TYPE.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let name = series.split('{').next().unwrap();
        assert!(text.contains(&format!("# HELP {name} ")), "no HELP: {name}");
        assert!(
            text.contains(&format!("# TYPE {name} gauge\n")),
            "no TYPE: {name}"
        );
        samples.insert(series.to_owned(), value.parse().unwrap());
    }
    samples
}

/// The samples of one family, by their labels.
fn family(samples: &BTreeMap<String, f64>, name: &str) -> BTreeMap<String, f64> {
    samples
        .iter()
        .filter_map(|(series, value)| {
            let (family, labels) = series.split_once('{').unwrap_or((series, ""));
            (family == name).then(|| (labels.trim_end_matches('}').to_owned(), *value))
        })
        .collect()
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

const STATUSES: [&str; 5] = ["active", "entering", "inactive", "leaving", "not_reported"];

fn status_samples(current: &str) -> BTreeMap<String, f64> {
    STATUSES
        .iter()
        .map(|status| {
            let value = if *status == current { 1.0 } else { 0.0 };
            (format!("status=\"{status}\""), value)
        })
        .collect()
}

#[test]
fn before_the_first_sync_the_metrics_say_not_reported_and_exit_0() {
    let state = tempfile::tempdir().unwrap();
    let text = metrics(state.path(), "fresh");
    insta::assert_snapshot!(text);
    let samples = samples(&text);
    assert_eq!(
        family(&samples, "mxctl_gpu_partitioning_status"),
        status_samples("not_reported")
    );
    assert!(family(&samples, "mxctl_last_sync_timestamp_seconds").is_empty());
    assert!(family(&samples, "mxctl_warm_reset_last").is_empty());
}

#[test]
fn after_a_sync_without_gpus_the_host_is_inactive_and_the_sync_time_is_given() {
    let host = SyncHost::new();
    let before = unix_now().floor();
    let (code, _) = host.run(&["sync"]);
    assert_eq!(code, 0);
    let after = unix_now().ceil();
    let samples = samples(&metrics(&host.path("state"), "no-gpus"));
    assert_eq!(
        family(&samples, "mxctl_gpu_partitioning_status"),
        status_samples("inactive")
    );
    assert_eq!(
        family(&samples, "mxctl_gpu_partitioning_reason_info"),
        BTreeMap::from([("reason=\"no_partitionable_gpu\"".to_owned(), 1.0)])
    );
    let synced = samples["mxctl_last_sync_timestamp_seconds"];
    assert!(
        (before..=after).contains(&synced),
        "{before} {synced} {after}"
    );
    assert!(family(&samples, "mxctl_gpu_partition_mode").is_empty());
}

#[test]
fn after_a_sync_with_the_pool_on_each_of_four_gpus_has_its_mode_out_of_nine() {
    let host = SyncHost::new();
    for bdf in ["0000:3b:00.0", "0000:3d:00.0", "0000:3e:00.0"] {
        host.sysfs.nvidia(bdf, Some("nvidia")).unwrap();
    }
    host.sysfs.nvidia("0000:3f:00.0", Some("vfio-pci")).unwrap();
    let helper = host.nvml_helper_of(&[
        ("0000:3b:00.0", CARVED),
        ("0000:3d:00.0", ON_PENDING),
        ("0000:3e:00.0", NO_MIG),
    ]);
    host.synced(&helper);
    let samples = samples(&metrics(&host.path("state"), "four-gpus"));
    let modes = family(&samples, "mxctl_gpu_partition_mode");
    assert_eq!(modes.len(), 4 * 9, "{modes:?}");
    let current: Vec<&str> = modes
        .iter()
        .filter(|(_, value)| **value == 1.0)
        .map(|(labels, _)| labels.as_str())
        .collect();
    assert_eq!(
        current,
        [
            "device=\"0000:3b:00.0\",mode=\"enabled\"",
            "device=\"0000:3d:00.0\",mode=\"enable_on_reboot\"",
            "device=\"0000:3e:00.0\",mode=\"not_supported\"",
            "device=\"0000:3f:00.0\",mode=\"not_checked\"",
        ]
    );
    assert_eq!(
        family(&samples, "mxctl_gpu_partitioning_status"),
        status_samples("entering")
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn after_a_warm_reset_the_last_reset_is_given_with_its_outcome_and_end() {
    common::require_root();
    let host = ResetHost::new();
    let before = unix_now().floor();
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(code, 0, "{document}");
    let after = unix_now().ceil();
    let samples = samples(&metrics(&host.path("state"), "after-reset"));
    let last = family(&samples, "mxctl_warm_reset_last");
    let (labels, ended) = last.iter().next().unwrap();
    assert_eq!(labels, "outcome=\"done\",reason=\"\"");
    assert!((before..=after).contains(ended), "{before} {ended} {after}");
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_reset_that_needs_a_cold_reboot_is_the_last_reset_with_its_reason() {
    common::require_root();
    let host = ResetHost::in_mode("error");
    let (code, document) = host.reset(&["--device", "1"]);
    assert_eq!(code, 4, "{document}");
    let samples = samples(&metrics(&host.path("state"), "after-cold-reboot-reset"));
    assert_eq!(
        family(&samples, "mxctl_warm_reset_last")
            .keys()
            .collect::<Vec<_>>(),
        ["outcome=\"cold_reboot_required\",reason=\"reset_error\""]
    );
}

#[test]
#[ignore = "needs root (the real root check of a reset); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_blocked_reset_leaves_no_last_reset() {
    common::require_root();
    let host = ResetHost::new();
    let (code, document) = host.reset(&["--device", "99"]);
    assert_eq!((code, &document["reason"]), (3, &"unknown_device".into()));
    let samples = samples(&metrics(&host.path("state"), "after-blocked-reset"));
    assert!(family(&samples, "mxctl_warm_reset_last").is_empty());
}

#[test]
fn the_output_file_is_replaced_whole_so_a_racing_reader_never_sees_part_of_one() {
    // Two states whose metrics differ, written in turn to one file while a reader reads it.
    let one = tempfile::tempdir().unwrap();
    let two = SyncHost::new();
    assert_eq!(two.run(&["sync"]).0, 0);
    let texts = [
        metrics(one.path(), "race-one"),
        metrics(&two.path("state"), "race-two"),
    ];
    assert_ne!(texts[0], texts[1]);
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("mxctl.prom");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (file, done, texts) = (file.clone(), done.clone(), texts.clone());
        std::thread::spawn(move || {
            let mut reads = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                match std::fs::read_to_string(&file) {
                    Ok(text) => {
                        assert!(texts.contains(&text), "a partial file: {text:?}");
                        reads += 1;
                    }
                    Err(error) => assert_eq!(error.kind(), std::io::ErrorKind::NotFound),
                }
            }
            reads
        })
    };
    for round in 0..1000 {
        let state = if round % 2 == 0 {
            one.path().to_path_buf()
        } else {
            two.path("state")
        };
        let status = metrics_command(&state, Some(&file)).status().unwrap();
        assert!(status.success());
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0, "the reader never saw the file");
    let leftovers: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["mxctl.prom"]);
}

#[test]
fn the_output_file_is_readable_by_the_collectors_user() {
    use std::os::unix::fs::PermissionsExt;
    let state = tempfile::tempdir().unwrap();
    let file = state.path().join("out/mxctl.prom");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    assert!(
        metrics_command(state.path(), Some(&file))
            .status()
            .unwrap()
            .success()
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        metrics(state.path(), "fresh-again")
    );
}

#[test]
fn metrics_with_json_is_a_usage_error() {
    let state = tempfile::tempdir().unwrap();
    let output = metrics_command(state.path(), None)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["kind"], "usage");
}
