//! A fake MetaX host for the tests: a fake `mx-smi` that records every call, a built
//! `/proc/modules`, a boot id, a kernel log file, and a state directory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod pool;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command};

pub const LISTING: &str = "mx-smi  version: 2.2.1\n\nGPU#0    MXC500    0000:06:00.0    Available (UUID: GPU-0a1b2c3d-0000-0000-0000-000000000000)\nGPU#1    MXC500    0000:07:00.0    Available (UUID: GPU-0a1b2c3d-0000-0000-0000-000000000001)\n";

pub const FAKE: &str = r#"#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/calls"
# In a pool of hosts under one directory, every call also goes to the pool's ordered log.
[ -f "$d/../../order.log" ] && echo "$(basename "$(dirname "$d")") $*" >> "$d/../../order.log"
case "$1" in
  --show-version) cat "$d/version" ;;
  --show-process) cat "$d/processes" ;;
  -L) if [ -f "$d/reset-done" ] && [ -f "$d/listing-after" ]; then cat "$d/listing-after"; else cat "$d/listing"; fi ;;
  -r)
    mode=$(cat "$d/reset-mode")
    [ "$mode" = kernel-errors ] && echo '3,900,1000,-;metax 0000:06:00.0: fatal link error' >> "$d/kmsg"
    case "$mode" in
      hang) echo $$ > "$d/reset-pid"; exec sleep 600 ;;
      error) echo "warm reset failed on GPU#1" >&2; exit 1 ;;
      slow*) echo $$ > "$d/reset-pid"; sleep "${mode#slow}" ;;
    esac
    touch "$d/reset-done" ;;
esac
"#;

pub struct Host {
    pub dir: tempfile::TempDir,
}

impl Host {
    pub fn new() -> Host {
        Host::in_dir(tempfile::tempdir().unwrap())
    }

    pub fn in_dir(dir: tempfile::TempDir) -> Host {
        let host = Host { dir };
        let fake = host.path("bin/mx-smi");
        std::fs::create_dir_all(host.path("bin")).unwrap();
        std::fs::write(&fake, FAKE).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        host.write(
            "bin/version",
            "mx-smi version: 2.2.1\nKernel Mode Driver Version: 2.9.0\nVBIOS Version: 1.14.0.0\n",
        );
        host.write("bin/processes", "no process found\n");
        host.write("bin/listing", LISTING);
        host.write("bin/reset-mode", "ok");
        host.write(
            "bin/kmsg",
            "6,1,100,-;metax: loaded\n4,2,200,-;metax: a warning\n",
        );
        host.write(
            "proc/modules",
            "nvme 61440 3 - Live 0x0\nmetax 4194304 0 - Live 0xffffffffc0a00000\n",
        );
        host.write(
            "proc/sys/kernel/random/boot_id",
            "11111111-2222-3333-4444-555555555555\n",
        );
        host
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mxctl"));
        command
            .args(["--config", "/dev/null", "--json", "--proc-root"])
            .arg(self.path("proc"))
            .arg("--state-dir")
            .arg(self.path("state"))
            .arg("reset")
            .arg("--mx-smi")
            .arg(self.path("bin/mx-smi"))
            .arg("--kmsg")
            .arg(self.path("bin/kmsg"))
            .args(args);
        command
    }

    pub fn reset(&self, args: &[&str]) -> (i32, serde_json::Value) {
        let output = self.command(args).output().unwrap();
        let document = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&output.stderr)));
        (output.status.code().unwrap(), document)
    }

    pub fn resets(&self) -> usize {
        let calls = std::fs::read_to_string(self.path("bin/calls")).unwrap_or_default();
        calls.lines().filter(|line| line.starts_with("-r")).count()
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Skips a test that needs root (a warm reset runs the real root check); CI runs as root.
#[macro_export]
macro_rules! needs_root {
    () => {
        if !common::is_root() {
            eprintln!("skipped: a warm reset needs root, and these tests run the real root check");
            return;
        }
    };
}
