//! Scripts the tests write and run for real.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes an executable `#!/bin/sh` script.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    gpu_host_probe::test_util::write_executable(&path, &format!("#!/bin/sh\n{body}\n")).unwrap();
    path
}

/// Whether `pid` is still a live process (a zombie whose parent is not us counts as gone).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
    }
}

/// Waits up to a second for `pid` to be gone (a killed process takes a moment to be reaped).
pub fn gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Reads a pid a script wrote to `file`.
pub fn pid_in(file: &Path) -> u32 {
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(file) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no pid in {}", file.display());
}

/// The version reply of a helper that serves `read` in `formats`.
pub fn version_reply(formats: &str) -> String {
    format!(
        r#"{{"helper": "fake", "version": "0.1", "commands": [{{"name": "read", "formats": [{formats}]}}]}}"#
    )
}

/// A reply page for the device in `$dev`, MIG on with one instance.
pub const REPLY: &str = r#"{"format": "1.0", "device": "%s", "mode": {"capable": true, "current": "enabled", "pending": null}, "case": "partitions", "driver": {"version": "1", "nvml_version": "1"}, "profiles": [], "gpu_instances": [{"id": 1, "profile_id": 9, "placement": {"start": 0, "size": 4}, "uuid": null, "compute_instances": []}], "vgpus": []}"#;

/// A fake helper: `--version` answers `version` (a JSON document); `read` runs `read_body`
/// with `$dev` set to the device asked for and `$reply` to [`REPLY`] for that device.
pub fn helper(dir: &Path, version: &str, read_body: &str) -> PathBuf {
    let body = format!(
        r#"if [ "$1" = "--version" ]; then
  printf '%s\n' '{version}'
  exit 0
fi
[ "$1" = read ] && [ "$2" = --device ] && [ "$4" = --format ] && [ "$5" = 1 ] || {{ echo "bad call: $*" >&2; exit 64; }}
dev="$3"
reply=$(printf '{REPLY}' "$dev")
{read_body}"#
    );
    script(dir, "helper", &body)
}

/// Asserts that `host`'s try for the lock is refused because this process holds the machine's
/// lock for `holder` (named by its state directory): two hosts of one machine meet at one lock.
pub fn assert_machine_busy_for(host: &gpu_host_probe::Host, holder: &gpu_host_probe::Host) {
    match host.try_lock().unwrap_err() {
        gpu_host_probe::LockError::MachineBusy {
            holder: pid,
            state_dir,
            ..
        } => {
            assert_eq!(pid, Some(std::process::id()));
            assert_eq!(state_dir.as_deref(), Some(holder.state_dir()));
        }
        other => panic!("{other}"),
    }
}
