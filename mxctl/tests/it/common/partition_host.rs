//! A host for `mxctl partition`: a built sysfs tree of NVIDIA GPUs bound to `nvidia`, the real
//! helper over the fake NVML keeping its state in a file (consecutive runs see each other's
//! writes), and a fake `nvidia-smi` that lists the GPUs, prints a published topology and the
//! published reset message, and resets through `fake-nvml reset` (each reset logged with its
//! time).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::machine::Machine;
use fake_nvml::support;
use std::path::{Path, PathBuf};
use std::process::Command;

/// NVML scenarios of the helper's tests: an A100-SXM4-40GB with MIG off whose mode change
/// waits for a reset (Ampere), and an H100 80GB whose mode change is immediate (Hopper).
pub const A100_OFF: &str = fake_nvml::scenarios::A100_MIG_OFF;
pub const H100_OFF: &str = fake_nvml::scenarios::H100_MIG_OFF;

/// The GPU operator's `all-balanced` (H100-80GB and A100-40GB among others), as published.
pub const ALL_BALANCED: &str =
    include_str!("../../../../mig-layout/tests/data/mig-parted/gpu-operator-h100-excerpt.yaml");

/// Two GPUs on PCIe without NVLink, as published (`topo -m`, tab-separated).
pub const TOPOLOGY_TWO: &str =
    include_str!("../../../../warm-reset/tests/data/nvidia-smi/topo-m-2x5090-tabs.txt");

/// The fake `nvidia-smi`: every call logged to `calls`; `--gpu-reset -i IDS` logs `reset IDS
/// MILLIS` to `resets`, waits `reset-delay` seconds where that file exists, resets each through
/// `fake-nvml reset`, and prints the published success line for each.
const FAKE: &str = r#"#!/bin/sh
d=$(dirname "$0")
echo "$*" >> "$d/calls"
case "$*" in
  "--query-gpu=index,pci.bus_id,uuid,name --format=csv,noheader") cat "$d/gpus" ;;
  "topo -m") cat "$d/topo" ;;
  "--query-compute-apps=pid,gpu_bus_id --format=csv,noheader") cat "$d/apps" ;;
  "--gpu-reset -i "*)
    # The journal's in-flight record as the reset is issued: its start, on the clock the
    # window is measured by.
    started=$(grep -o '"started_unix_ms": *[0-9]*' "$(cat "$d/journal-path")" 2>/dev/null | grep -o '[0-9]*$')
    echo "reset $3 $(date +%s%3N) ${started:-none}" >> "$d/resets"
    # A real reset takes a while: `reset-delay` (seconds) before it takes effect.
    [ ! -f "$d/reset-delay" ] || sleep "$(cat "$d/reset-delay")"
    for id in $(echo "$3" | tr ',' ' '); do
      FAKE_NVML_STATE="$(cat "$d/state-path")" FAKE_NVML_LOG="$(cat "$d/log-path")" "$(cat "$d/fake-nvml-path")" reset --device "$id" || exit 3
      echo "GPU $id was successfully reset."
    done ;;
  *) echo "nvidia-smi: unknown option $*" >&2; exit 2 ;;
esac
"#;

/// The published two-GPU matrix's form, widened to `count` GPUs joined by no NVLink (`PHB`
/// between every pair): what `topo -m` prints on a host of PCIe cards (for two, exactly
/// [`TOPOLOGY_TWO`]'s rows).
pub fn topology_without_nvlink(count: usize) -> String {
    let mut text = String::from("\t");
    for index in 0..count {
        text.push_str(&format!("GPU{index}\t"));
    }
    text.push_str("CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n");
    for row in 0..count {
        text.push_str(&format!("GPU{row}"));
        for column in 0..count {
            text.push_str(if row == column { "\t X " } else { "\tPHB" });
        }
        text.push_str("\t0-63\t0\t\tN/A\n");
    }
    let legend = TOPOLOGY_TWO
        .split_once("\nLegend:")
        .map_or("", |(_, legend)| legend);
    text.push_str("\nLegend:");
    text.push_str(legend);
    text
}

pub struct PartitionHost {
    pub machine: Machine,
    /// The GPUs: bus ID (`0000:3b:00.0`) and device ID (`0x20b0`).
    pub gpus: Vec<(String, String)>,
    /// Each GPU's model, as its template names it.
    pub names: Vec<String>,
    pub helper: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
}

impl std::ops::Deref for PartitionHost {
    type Target = Machine;

    fn deref(&self) -> &Machine {
        &self.machine
    }
}

impl PartitionHost {
    /// A host of these GPUs, each `(bus id, template scenario, device id)`.
    pub fn new(cards: &[(&str, &str, &str)]) -> PartitionHost {
        let machine = Machine::new();
        let path = |name: &str| machine.path(name);
        for (bdf, _, device) in cards {
            machine
                .sysfs
                .function(bdf, "0x10de", device, "0x030200", Some("nvidia"))
                .unwrap();
        }
        let scenario = support::scenario_of(
            &cards
                .iter()
                .map(|(bdf, template, _)| (*bdf, *template))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let nvml = path("nvml");
        std::fs::create_dir_all(&nvml).unwrap();
        let log = path("nvml.log");
        let (helper, state) =
            support::stateful_helper_wrapper(&nvml, &scenario, Some(&log)).unwrap();
        let host = PartitionHost {
            gpus: cards
                .iter()
                .map(|(bdf, _, device)| ((*bdf).to_owned(), (*device).to_owned()))
                .collect(),
            names: cards
                .iter()
                .map(|(_, template, _)| {
                    let parsed: serde_json::Value = serde_json::from_str(template).unwrap();
                    parsed["devices"][0]["name"].as_str().unwrap().to_owned()
                })
                .collect(),
            machine,
            helper,
            state,
            log,
        };
        host.write_nvidia_smi();
        host
    }

    /// Two A100s, MIG off (Ampere: a mode change waits for a reset).
    pub fn two_a100s() -> PartitionHost {
        Self::new(&[
            ("0000:3b:00.0", A100_OFF, "0x20b0"),
            ("0000:3c:00.0", A100_OFF, "0x20b0"),
        ])
    }

    /// One H100, MIG off (Hopper: a mode change is immediate).
    pub fn one_h100() -> PartitionHost {
        Self::new(&[("0000:3b:00.0", H100_OFF, "0x2330")])
    }

    fn write_nvidia_smi(&self) {
        self.program("bin/nvidia-smi", FAKE);
        let lines: String = self
            .gpus
            .iter()
            .enumerate()
            .map(|(index, (bdf, _))| {
                format!(
                    "{index}, 0000{}, GPU-5a3c9f0e-8a1b-4c2d-9e7f-00000000000{index}, {}\n",
                    bdf.to_ascii_uppercase(),
                    self.names[index]
                )
            })
            .collect();
        self.write("bin/gpus", &lines);
        if self.gpus.len() == 2 {
            self.write("bin/topo", TOPOLOGY_TWO);
        } else {
            self.write("bin/topo", &topology_without_nvlink(self.gpus.len()));
        }
        self.write("bin/apps", "");
        self.write("bin/state-path", &self.state.display().to_string());
        self.write(
            "bin/journal-path",
            &self
                .path("state/warm-reset-journal.json")
                .display()
                .to_string(),
        );
        self.write("bin/log-path", &self.log.display().to_string());
        self.write(
            "bin/fake-nvml-path",
            &support::fake_nvml_binary().unwrap().display().to_string(),
        );
        self.write("kmsg", "6,1,100,-;nvidia: module loaded\n");
        for (minor, (bdf, _)) in self.gpus.iter().enumerate() {
            self.write(
                &format!("proc/driver/nvidia/gpus/{bdf}/information"),
                &format!(
                    "Model:           {}\nGPU UUID:        GPU-5a3c9f0e-8a1b-4c2d-9e7f-00000000000{minor}\nBus Location:    {bdf}\nDevice Minor:    {minor}\nGPU Excluded:    No\n",
                    self.names[minor]
                ),
            );
        }
    }

    /// `mxctl --json … partition ARGS…` on this host, with its helper, nvidia-smi, kernel log
    /// and a 5 s window.
    pub fn command(&self, args: &[&str]) -> Command {
        self.command_configured(Path::new("/dev/null"), args)
    }

    /// [`command`](Self::command) with mxctl's own config file (given before `partition`).
    pub fn command_configured(&self, config: &Path, args: &[&str]) -> Command {
        let mut command = self.partition(config, args);
        command.arg("--json");
        command
    }

    /// [`command`](Self::command) printing for people (no `--json`).
    pub fn command_for_people(&self, args: &[&str]) -> Command {
        self.partition(Path::new("/dev/null"), args)
    }

    fn partition(&self, config: &Path, args: &[&str]) -> Command {
        let mut command = self.mxctl_configured(config);
        command.arg("partition").args(args);
        let sub = args.first().copied().unwrap_or_default();
        command.arg("--helper").arg(&self.helper);
        if matches!(sub, "apply" | "leave" | "restore") {
            command
                .arg("--nvidia-smi")
                .arg(self.path("bin/nvidia-smi"))
                .arg("--kmsg")
                .arg(self.path("kmsg"));
            if !args.contains(&"--window") {
                command.args(["--window", "5"]);
            }
        }
        command
    }

    /// `partition apply --config FILE --select LABEL --pool enabled` and more.
    pub fn apply(&self, layout: &str, label: &str, more: &[&str]) -> (i32, serde_json::Value) {
        super::run_json(self.apply_command(layout, label, more))
    }

    /// The command [`Self::apply`] runs: `layout` written to `layout.yaml`, then `apply --config
    /// layout.yaml --select LABEL [--pool enabled] MORE…` (the pool on unless `more` says).
    pub fn apply_command(&self, layout: &str, label: &str, more: &[&str]) -> Command {
        let file = self.path("layout.yaml");
        std::fs::write(&file, layout).unwrap();
        let mut args = vec![
            "apply",
            "--config",
            file.to_str().unwrap(),
            "--select",
            label,
        ];
        if !more.contains(&"--pool") {
            args.extend(["--pool", "enabled"]);
        }
        args.extend(more);
        self.command(&args)
    }

    /// `mxctl --json partition restore --pool enabled` and more.
    pub fn restore(&self, more: &[&str]) -> (i32, serde_json::Value) {
        let mut args = vec!["restore"];
        if !more.contains(&"--pool") {
            args.extend(["--pool", "enabled"]);
        }
        args.extend(more);
        super::run_json(self.command(&args))
    }

    /// `mxctl --json partition assert --config FILE --select LABEL`.
    pub fn assert(&self, layout: &str, label: &str) -> (i32, serde_json::Value) {
        let file = self.path("layout.yaml");
        std::fs::write(&file, layout).unwrap();
        super::run_json(self.command(&[
            "assert",
            "--config",
            file.to_str().unwrap(),
            "--select",
            label,
        ]))
    }

    /// A reboot of the host: what a reboot does to the cards (no GPU instance survives; the
    /// MIG mode only where the part keeps it), and a new boot id.
    pub fn reboot(&self, boot_id: &str) {
        support::reboot(
            &fake_nvml::StateFile::new(&self.state),
            &support::ProcRoot::at(self.path("proc")),
            boot_id,
        )
        .unwrap();
    }

    /// `mxctl --json sync --after-boot auto --pool enabled`: the boot's sync.
    pub fn boot_sync(&self) -> serde_json::Value {
        let mut command = self.mxctl(&[]);
        command
            .args([
                "sync",
                "--after-boot",
                "auto",
                "--pool",
                "enabled",
                "--helper",
            ])
            .arg(&self.helper);
        super::run_json(command).1
    }

    /// `mxctl labels` (the node-feature-discovery file), line by line.
    pub fn labels(&self) -> Vec<String> {
        self.uncommented("labels")
    }

    /// `mxctl metrics`, the samples (no comment lines).
    pub fn metrics(&self) -> Vec<String> {
        self.uncommented("metrics")
    }

    /// The lines of what `mxctl COMMAND` prints that are not comments (`#`).
    fn uncommented(&self, command: &str) -> Vec<String> {
        let output = self
            .mxctl_configured(Path::new("/dev/null"))
            .arg(command)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .filter(|line| !line.starts_with('#'))
            .map(str::to_owned)
            .collect()
    }

    /// `mxctl --json partition ARGS… --device BDF --pool enabled` (a create or a destroy).
    pub fn one(&self, args: &[&str], bdf: &str) -> (i32, serde_json::Value) {
        let mut all = args.to_vec();
        all.extend(["--device", bdf, "--pool", "enabled"]);
        super::run_json(self.command(&all))
    }

    /// `mxctl --json partition list`.
    pub fn list(&self) -> serde_json::Value {
        let (code, list) = super::run_json(self.mxctl(&["partition", "list"]));
        assert_eq!(code, 0, "{list:#}");
        list
    }

    /// `mxctl partition list`, for people.
    pub fn list_text(&self) -> String {
        let output = self
            .mxctl_configured(Path::new("/dev/null"))
            .args(["partition", "list"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    /// `mxctl --json status`.
    pub fn status(&self) -> serde_json::Value {
        let mut command = self.mxctl(&[]);
        command.arg("status");
        super::run_json(command).1
    }

    /// `mxctl --json sync --pool SWITCH`.
    pub fn sync(&self, pool: &str) -> serde_json::Value {
        let mut command = self.mxctl(&[]);
        command
            .args(["sync", "--after-boot", "no", "--pool", pool, "--helper"])
            .arg(&self.helper);
        super::run_json(command).1
    }

    /// The fake's state (after the first helper run).
    pub fn nvml(&self) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(&self.state).unwrap()).unwrap()
    }

    /// Changes the fake's state (as the driver or an operator would).
    pub fn change_nvml(&self, change: impl FnOnce(&mut serde_json::Value)) {
        let mut state = self.nvml();
        change(&mut state);
        std::fs::write(&self.state, serde_json::to_vec(&state).unwrap()).unwrap();
    }

    /// One device of the fake's state by bus ID.
    pub fn card(&self, bdf: &str) -> serde_json::Value {
        let state = self.nvml();
        state["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| {
                d["pci_bus_id"]
                    .as_str()
                    .unwrap()
                    .to_ascii_lowercase()
                    .ends_with(&bdf[5..])
            })
            .cloned()
            .unwrap()
    }

    /// The fake's call log, line by line.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The writes in the fake's call log (NVML's write calls and resets).
    pub fn writes(&self) -> Vec<String> {
        const WRITES: [&str; 7] = [
            "nvmlDeviceSetMigMode",
            "nvmlDeviceCreateGpuInstance",
            "nvmlGpuInstanceCreateComputeInstance",
            "nvmlComputeInstanceDestroy",
            "nvmlGpuInstanceDestroy",
            "reset ",
            "nvmlDeviceCreateGpuInstanceWithPlacement",
        ];
        self.calls()
            .into_iter()
            .filter(|line| WRITES.iter().any(|write| line.starts_with(write)))
            .collect()
    }

    /// Forgets the calls logged so far.
    pub fn clear_calls(&self) {
        let _ = std::fs::remove_file(&self.log);
    }

    /// The fake nvidia-smi's resets: `IDS MILLIS`.
    /// Each reset command with the start of the journal's in-flight record when it was
    /// issued (the executor's clock, the one its window is measured by): a reset issued inside
    /// an earlier one's window would carry a start less than a window after that one's.
    pub fn resets_in_journal(&self) -> Vec<(String, Option<u64>)> {
        std::fs::read_to_string(self.path("bin/resets"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace().skip(1);
                let ids = parts.next()?.to_owned();
                let started = parts.nth(1).and_then(|text| text.parse().ok());
                Some((ids, started))
            })
            .collect()
    }

    pub fn resets(&self) -> Vec<(String, u64)> {
        std::fs::read_to_string(self.path("bin/resets"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace().skip(1);
                Some((parts.next()?.to_owned(), parts.next()?.parse().ok()?))
            })
            .collect()
    }

    /// Runs the real helper's `apply` on `bdf` with these steps, as an operator would by hand.
    pub fn by_hand(&self, bdf: &str, steps: &str) {
        use std::io::Write;
        let mut child = Command::new(&self.helper)
            .args(["apply", "--device", bdf, "--format", "1"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{{\"steps\": {steps}}}").as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
    }
}
