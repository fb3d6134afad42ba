//! A fake MetaX host for the tests: a fake `mx-smi` that records every call, a built
//! `/proc/modules`, a boot id, a kernel log file, and a state directory.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// A host of one vendor's fakes over a [`machine::Machine`], which it reads as: every such host
/// is the machine and what it puts on it, so the wrapper is said once.
macro_rules! machine_host {
    ($name:ident) => {
        pub struct $name {
            pub machine: $crate::common::machine::Machine,
        }

        impl std::ops::Deref for $name {
            type Target = $crate::common::machine::Machine;

            fn deref(&self) -> &$crate::common::machine::Machine {
                &self.machine
            }
        }
    };
    // A host whose warm reset runs through one fake vendor tool (`bin/TOOL`, every call logged
    // to `bin/calls`): the reset's method, the tool, the prefix of its reset calls, and the
    // descriptor a holder's file is open as differ; the rest is the same for every vendor.
    ($name:ident, method $method:literal, tool $tool:literal, resets $resets:literal, fd $fd:literal) => {
        machine_host!($name);

        impl $name {
            /// The host `new` builds, its fake tool resetting as `mode` says (see the fake).
            pub fn in_mode(mode: &str) -> Self {
                let host = Self::new();
                host.write("bin/reset-mode", mode);
                host
            }

            /// A process `pid` named `comm` holding `file` open.
            pub fn holder(&self, pid: u32, comm: &str, file: &str) {
                self.machine.holder(pid, comm, file, $fd);
            }

            /// The reset calls the fake tool received.
            pub fn resets(&self) -> Vec<String> {
                self.calls_starting($resets)
            }

            /// `mxctl --json reset --method METHOD --TOOL … --kmsg … ARGS…`.
            pub fn command(&self, args: &[&str]) -> std::process::Command {
                self.reset_through($method, $tool, args)
            }

            pub fn reset(&self, args: &[&str]) -> (i32, serde_json::Value) {
                $crate::common::run_json(self.command(args))
            }
        }
    };
}

pub mod amd_host;
pub mod machine;
pub mod nvidia_host;
pub mod partition_host;
pub mod partition_layouts;
pub mod pci_host;
pub mod pool;
pub mod sync_host;

use machine::Machine;
use std::path::Path;
use std::process::{Child, Command};

/// The published outputs a fake host prints (see `tests/data/mx-smi-hosts/README.md`).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Plain `mx-smi`.
    pub plain: &'static str,
    /// `mx-smi -L`.
    pub listing: &'static str,
    /// `mx-smi topo -m`.
    pub topo: &'static str,
}

/// mx-smi 2.2.9 on 8 C500: the `Board Name` layout, published without the banner.
pub const BOARD_NO_BANNER: Layout = Layout {
    plain: include_str!("../../../../warm-reset/tests/data/mx-smi/plain-2.2.9-c500-no-banner.txt"),
    listing: include_str!("../../data/mx-smi-hosts/list-c500-2.2.9-board-layout-no-banner.txt"),
    topo: include_str!("../../../../warm-reset/tests/data/mx-smi/topo-m-2.2.9-8gpu-affinity.txt"),
};

/// mx-smi 2.2.4 on 8 C550: the older `GPU NAME` layout, with the banner.
pub const GPU_NAME_BANNER: Layout = Layout {
    plain: include_str!(
        "../../../../warm-reset/tests/data/mx-smi/plain-2.2.4-c550-gpu-name-layout.txt"
    ),
    listing: include_str!("../../data/mx-smi-hosts/list-c550-2.2.4-gpu-name-layout-banner.txt"),
    topo: include_str!("../../../../warm-reset/tests/data/mx-smi/topo-m-8gpu.txt"),
};

/// The first lines another vendor's `mx-smi` prints (MOFFETT-SMI).
pub const OTHER_VENDOR: &str =
    include_str!("../../../../warm-reset/tests/data/mx-smi/other-vendor-moffett-2.3.0-head.txt");

/// A fake `mx-smi`: plain, `-L` and `topo -m` print their files (the `-after` file, when there
/// is one, once a reset has run); `-r -i ID` does what `reset-mode` says. Every call is logged.
pub const FAKE: &str = r#"#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/calls"
# In a pool of hosts under one directory, every call also goes to the pool's ordered log.
[ -f "$d/../../order.log" ] && echo "$(basename "$(dirname "$d")") $*" >> "$d/../../order.log"
show() { if [ -f "$d/reset-done" ] && [ -f "$d/$1-after" ]; then cat "$d/$1-after"; else cat "$d/$1"; fi; }
case "$*" in
  "") show plain ;;
  -L) show listing ;;
  "topo -m") show topo ;;
  "-r -i "*)
    mode=$(cat "$d/reset-mode")
    [ "$mode" = kernel-errors ] && echo '3,900,1000,-;metax 0000:0e:00.0: fatal link error' >> "$d/kmsg"
    case "$mode" in
      hang) echo $$ > "$d/reset-pid"; exec sleep 600 ;;
      error) echo "warm reset failed on GPU#$3" >&2; exit 1 ;;
      says-failed) touch "$d/reset-done"; echo "GPU#$3: Reset Failed"; exit 0 ;;
      slow*) echo $$ > "$d/reset-pid"; sleep "${mode#slow}" ;;
    esac
    touch "$d/reset-done" ;;
  *) echo "mx-smi: unknown option $*" >&2; exit 2 ;;
esac
"#;

machine_host!(Host);

impl Host {
    pub fn new() -> Host {
        Host::in_dir(tempfile::tempdir().unwrap())
    }

    pub fn in_dir(dir: tempfile::TempDir) -> Host {
        Host::with_layout(dir, BOARD_NO_BANNER)
    }

    pub fn of(layout: Layout) -> Host {
        Host::with_layout(tempfile::tempdir().unwrap(), layout)
    }

    pub fn with_layout(dir: tempfile::TempDir, layout: Layout) -> Host {
        let host = Host {
            machine: Machine::in_dir(dir),
        };
        host.program("bin/mx-smi", FAKE);
        host.write("bin/plain", layout.plain);
        host.write("bin/listing", layout.listing);
        host.write("bin/topo", layout.topo);
        host.write("bin/reset-mode", "ok");
        host.write(
            "bin/kmsg",
            "6,1,100,-;metax: loaded\n4,2,200,-;metax: a warning\n",
        );
        host.write(
            "proc/modules",
            &format!(
                "nvme 61440 3 - Live 0x0\n{}",
                include_str!("../../../../warm-reset/tests/data/mx-smi/proc-modules.txt")
            ),
        );
        host
    }

    /// The host `new` builds, its fake `mx-smi` resetting as `mode` says (see [`FAKE`]).
    pub fn in_mode(mode: &str) -> Host {
        let host = Host::new();
        host.write("bin/reset-mode", mode);
        host
    }

    /// Writes `name` with `text` in place of `from` in the file `source` (an edit of a
    /// published output).
    pub fn edit(&self, source: &str, name: &str, from: &str, to: &str) {
        let text = self.read(source);
        assert!(text.contains(from), "{source} has no {from:?}");
        self.write(name, &text.replacen(from, to, 1));
    }

    /// The calls `mx-smi` received, plain `mx-smi` shown as `(plain)`.
    pub fn calls(&self) -> Vec<String> {
        self.read("bin/calls")
            .lines()
            .map(|line| {
                if line.is_empty() {
                    "(plain)".to_owned()
                } else {
                    line.to_owned()
                }
            })
            .collect()
    }

    /// `mxctl --json reset --mx-smi … --kmsg … ARGS…`.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = self.mxctl(&["reset"]);
        command
            .arg("--mx-smi")
            .arg(self.path("bin/mx-smi"))
            .arg("--kmsg")
            .arg(self.path("bin/kmsg"))
            .args(args);
        command
    }

    pub fn reset(&self, args: &[&str]) -> (i32, serde_json::Value) {
        run_json(self.command(args))
    }

    pub fn resets(&self) -> usize {
        let calls = self.read("bin/calls");
        calls.lines().filter(|line| line.starts_with("-r")).count()
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }
}

/// A reset's `outcome` and `reason`, from its `--json` document.
pub fn ended(document: &serde_json::Value) -> (&str, &str) {
    (
        document["outcome"].as_str().unwrap(),
        document["reason"].as_str().unwrap(),
    )
}

/// Asserts that a reply (a run's exit status and `--json` document: a reset's, a layout
/// write's) ended with exit `code` in `outcome` for `reason`, the document in the failure, and
/// answers the document.
#[track_caller]
pub fn ends(
    (status, document): (i32, serde_json::Value),
    code: i32,
    outcome: &str,
    reason: &str,
) -> serde_json::Value {
    assert_eq!(
        (status, ended(&document)),
        (code, (outcome, reason)),
        "{document}"
    );
    document
}

/// [`ends`] with exit 0, done.
#[track_caller]
pub fn done(reply: (i32, serde_json::Value)) -> serde_json::Value {
    ends(reply, 0, "done", "")
}

/// [`ends`] with exit 0, a dry run.
#[track_caller]
pub fn dry_run(reply: (i32, serde_json::Value)) -> serde_json::Value {
    ends(reply, 0, "dry_run", "")
}

/// [`ends`] with exit 3, blocked for `reason`.
#[track_caller]
pub fn blocked(reply: (i32, serde_json::Value), reason: &str) -> serde_json::Value {
    ends(reply, 3, "blocked", reason)
}

/// [`ends`] with exit 4, a cold reboot required for `reason`.
#[track_caller]
pub fn cold_reboot(reply: (i32, serde_json::Value), reason: &str) -> serde_json::Value {
    ends(reply, 4, "cold_reboot_required", reason)
}

/// A reset's `detail`, from its `--json` document.
pub fn detail(document: &serde_json::Value) -> &str {
    document["detail"].as_str().unwrap()
}

/// Asserts that a reset's `detail` holds `text`, the document in the failure.
#[track_caller]
pub fn assert_detail(document: &serde_json::Value, text: &str) {
    assert!(detail(document).contains(text), "{document}");
}

/// The string `field` of each object in the JSON array `list`, in order.
pub fn field_of_each<'a>(list: &'a serde_json::Value, field: &str) -> Vec<&'a str> {
    fields_of_each(list, [field])
        .into_iter()
        .map(|[value]| value)
        .collect()
}

/// The string `fields` of each object in the JSON array `list`, in order.
pub fn fields_of_each<'a, const N: usize>(
    list: &'a serde_json::Value,
    fields: [&str; N],
) -> Vec<[&'a str; N]> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|item| strings(item, fields))
        .collect()
}

/// The string `fields` of the JSON object `item`, in order.
#[track_caller]
pub fn strings<'a, const N: usize>(item: &'a serde_json::Value, fields: [&str; N]) -> [&'a str; N] {
    fields.map(|field| {
        item[field]
            .as_str()
            .unwrap_or_else(|| panic!("{field} is not a string: {item}"))
    })
}

/// `mxctl --config CONFIG --sysfs-root SYSFS --state-dir STATE --lock-dir LOCKS`: mxctl on a
/// sysfs tree, a state directory and a directory of locks of the test's own, so tests run at
/// once never meet at the real `/sys`'s GPU lock.
pub fn mxctl_configured_on(config: &Path, sysfs: &Path, state: &Path, locks: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mxctl"));
    command
        .arg("--config")
        .arg(config)
        .arg("--sysfs-root")
        .arg(sysfs)
        .arg("--state-dir")
        .arg(state)
        .arg("--lock-dir")
        .arg(locks);
    command
}

/// [`mxctl_configured_on`] with no config file.
pub fn mxctl_on(sysfs: &Path, state: &Path, locks: &Path) -> Command {
    mxctl_configured_on(Path::new("/dev/null"), sysfs, state, locks)
}

/// Runs `command`, which must exit 0 (its stderr in the failure), and answers its output.
pub fn succeeded(command: &mut Command) -> std::process::Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs `command` and answers its exit status and its `--json` document.
pub fn run_json(mut command: Command) -> (i32, serde_json::Value) {
    let output = command.output().unwrap();
    let document = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code().unwrap(), document)
}

/// Runs two of the same reset at once (one started, then `reset()` again run to its end),
/// asserts that one of them is done, and answers each one's `outcome reason`.
#[track_caller]
pub fn two_at_once(reset: impl Fn() -> Command) -> Vec<String> {
    let first = reset()
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let second = reset().output().unwrap();
    let first = first.wait_with_output().unwrap();
    let outcomes: Vec<String> = [first, second]
        .iter()
        .map(|output| {
            let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            format!("{} {}", document["outcome"], document["reason"])
        })
        .collect();
    assert!(
        outcomes.iter().any(|o| o.starts_with("\"done\"")),
        "{outcomes:?}"
    );
    outcomes
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Fails a test that needs root when it is not root: such tests are `#[ignore]`d with that
/// reason, and run explicitly (`--ignored`) where they can run, so a run that cannot run them
/// says "ignored" rather than "ok".
pub fn require_root() {
    assert!(
        is_root(),
        "this test needs root: a warm reset runs the real root check"
    );
}
