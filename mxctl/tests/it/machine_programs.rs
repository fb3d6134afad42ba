//! A host's writers are that host's, proven on the machine itself: mxctl restores a host built
//! over a test tree, declared with MIG, vGPUs and AMD partitions, in a mount namespace whose
//! `/usr/sbin` and `/usr/lib` carry recording stand-ins for the machine's own `modprobe` and
//! `sriov-manage` at the paths their vendors install them. Given no writers, the restore is
//! refused before any write and neither stand-in runs; given the fakes' writers, it restores.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::vgpu::{A100, VgpuMxHost};
use gpu_host_probe::amdgpu::MemoryPartition as M;
use host_sync::fake_amdgpu::{FakeAmdgpu, FakeAmdgpuFile, MI300X};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DCM: &str = r#"{"gpu-config-profiles": {"cpx-nps4": {"profiles": [
  {"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]}}}"#;

/// Runs `command` in a mount namespace of its own where a recording stand-in sits at the
/// machine's `modprobe` and `sriov-manage` (overlays over the directories `/sbin` and
/// `/usr/lib` resolve to, their upper layers on a tmpfs of the namespace): each run of one
/// appends its path and arguments to `log`. Each stand-in is run once first, with
/// `stand-in-check`, so the log shows they were in place.
fn with_stand_ins(command: &Command, scratch: &Path, log: &Path) -> Output {
    std::fs::create_dir_all(scratch).unwrap();
    let sbin = std::fs::canonicalize("/sbin").unwrap();
    let lib = std::fs::canonicalize("/usr/lib").unwrap();
    let script = r#"set -eu
mount --make-rprivate /
mount -t tmpfs stand-ins "$SCRATCH"
mkdir -p "$SCRATCH/sbin/up" "$SCRATCH/sbin/work" "$SCRATCH/lib/up/nvidia" "$SCRATCH/lib/work"
printf '#!/bin/sh\necho "$0 $*" >>"%s"\n' "$LOG" >"$SCRATCH/sbin/up/modprobe"
cp "$SCRATCH/sbin/up/modprobe" "$SCRATCH/lib/up/nvidia/sriov-manage"
chmod 0755 "$SCRATCH/sbin/up/modprobe" "$SCRATCH/lib/up/nvidia/sriov-manage"
mount -t overlay stand-ins -o "lowerdir=$SBIN,upperdir=$SCRATCH/sbin/up,workdir=$SCRATCH/sbin/work" "$SBIN"
mount -t overlay stand-ins -o "lowerdir=$LIB,upperdir=$SCRATCH/lib/up,workdir=$SCRATCH/lib/work" "$LIB"
/sbin/modprobe stand-in-check
/usr/lib/nvidia/sriov-manage stand-in-check
exec "$@"
"#;
    let mut wrapped = Command::new("unshare");
    wrapped
        .args(["-m", "sh", "-c", script, "sh"])
        .arg(command.get_program())
        .args(command.get_args())
        .env("SCRATCH", scratch)
        .env("LOG", log)
        .env("SBIN", sbin)
        .env("LIB", lib);
    wrapped.output().unwrap()
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
#[ignore = "needs root (a mount namespace with overlays over /usr); CI runs it as root: cargo test -p mxctl -- --ignored"]
fn a_restore_on_a_tree_given_no_writers_never_runs_the_machines_modprobe_or_sriov_manage() {
    common::require_root();
    let host = VgpuMxHost::new();
    // MIG and the vGPUs on the A100, through the fakes' writers.
    host.applied("A100-1-5C");
    // Eight MI300X on the same tree, divided through the simulated amdgpu.
    let machine = &host.host.machine;
    let mut amdgpu = FakeAmdgpu::new(machine.sysfs.clone());
    for index in 0..8 {
        let bdf = format!("0000:{:02x}:00.0", 0x05 + index * 0x10);
        amdgpu.gpu(&bdf, MI300X, M::Nps1, Some(42)).unwrap();
    }
    let simulated: PathBuf = machine.path("amdgpu.json");
    FakeAmdgpuFile::new(&simulated, machine.sysfs.root())
        .save(&amdgpu)
        .unwrap();
    let dcm = machine.path("dcm.json");
    std::fs::write(&dcm, DCM).unwrap();
    let mut amd = machine.mxctl(&["amd", "apply", "--profile", "cpx-nps4", "--pool", "enabled"]);
    amd.arg("--dcm-config")
        .arg(&dcm)
        .arg("--simulate")
        .arg(&simulated);
    let (code, report) = common::run_json(amd);
    assert_eq!(code, 0, "{report:#}");
    let state = std::fs::read(machine.path("state/state.json")).unwrap();
    let declared: serde_json::Value = serde_json::from_slice(&state).unwrap();
    let vendors: Vec<&str> = declared["declared"]["gpus"]
        .as_object()
        .unwrap()
        .values()
        .map(|gpu| gpu["vendor"].as_str().unwrap())
        .collect();
    assert_eq!(vendors.len(), 9, "{declared:#}");
    // The cards then differ from the declaration, so a restore would run both programs: the
    // A100's VFs disabled (its GPU instances go with them), the hive back in NPS1 (a memory
    // request and a driver reload to restore).
    let disabled = Command::new(&host.fake.sriov_manage)
        .args(["-d", A100])
        .status()
        .unwrap();
    assert!(disabled.success());
    let simulation = FakeAmdgpuFile::new(&simulated, machine.sysfs.root());
    simulation
        .change(|fake| {
            fake.write_memory("0000:05:00.0", "NPS1\n").unwrap();
            fake.reload_driver().unwrap();
        })
        .unwrap();
    let state = std::fs::read(machine.path("state/state.json")).unwrap();
    let writes = host.writes();
    let amd_writes = simulation.load().unwrap().log;
    let log = machine.path("stand-ins.log");
    let scratch = machine.path("scratch");
    let nothing_written = |when: &str| {
        assert_eq!(host.writes(), writes, "{when}: the NVIDIA card was written");
        assert_eq!(
            simulation.load().unwrap().log,
            amd_writes,
            "{when}: the AMD GPUs were written"
        );
        assert_eq!(
            std::fs::read(machine.path("state/state.json")).unwrap(),
            state,
            "{when}: the state changed"
        );
    };
    let checks_only = |from: usize| {
        assert_eq!(
            lines(&log)[from..],
            [
                "/sbin/modprobe stand-in-check",
                "/usr/lib/nvidia/sriov-manage stand-in-check",
            ],
            "a stand-in ran for mxctl"
        );
    };
    // A restore refused before any write: it fails naming what it refused, only the
    // stand-ins' checks ran, and nothing was written.
    let refused = |restore: &Command, naming: &str, when: &str| {
        let before = lines(&log).len();
        let output = with_stand_ins(restore, &scratch, &log);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(output.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains(naming), "{stderr}");
        checks_only(before);
        nothing_written(when);
    };

    // 1. No writers at all: the machine's sriov-manage is the first refused.
    let mut restore = machine.mxctl(&["partition", "restore", "--pool", "enabled"]);
    restore.arg("--helper").arg(&host.host.helper);
    refused(
        &restore,
        "sriov-manage (/usr/lib/nvidia/sriov-manage) is the machine's own",
        "no writers",
    );

    // 2. The tree's sriov-manage (the config's key), the AMD GPUs through the kernel's files:
    //    the machine's modprobe is refused.
    let config = machine.path("mxctl.conf");
    std::fs::write(
        &config,
        format!(
            "gpu-partition-helper = {}\nsriov-manage = {}\n",
            host.host.helper.display(),
            host.fake.sriov_manage.display()
        ),
    )
    .unwrap();
    let mut restore = machine.mxctl_configured(&config);
    restore.args(["--json", "partition", "restore", "--pool", "enabled"]);
    refused(
        &restore,
        "modprobe (/sbin/modprobe) is the machine's own",
        "no amdgpu writer",
    );

    // 3. The fakes' writers: the tree's sriov-manage and the simulated amdgpu. The restore
    //    writes both vendors' GPUs back, and no stand-in runs.
    let mut restore = machine.mxctl_configured(&config);
    restore
        .args([
            "--json",
            "amd",
            "restore",
            "--pool",
            "enabled",
            "--simulate",
        ])
        .arg(&simulated);
    let before = lines(&log).len();
    let output = with_stand_ins(&restore, &scratch, &log);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(output.status.code(), Some(0), "{report:#}");
    assert_eq!(report["restored"], true, "{report:#}");
    assert_eq!(report["conclusion"], "holds", "{report:#}");
    assert_eq!(report["driver_reloads"], 1, "{report:#}");
    assert!(
        host.writes()
            .iter()
            .any(|line| line.starts_with("sriov-manage -e")),
        "{:?}",
        host.writes()
    );
    checks_only(before);
}
