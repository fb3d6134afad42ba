//! A host's writers are that host's: a run on a host built over a test tree never reaches the
//! machine's own programs. One tree holds an A100-PCIE-40GB with SR-IOV (the real helper over
//! the fake NVML, the fake's `sriov-manage` and its driver's side of each VF type write) and
//! eight MI300X GPUs in one XGMI hive (the fake amdgpu); the host is declared with MIG, vGPUs
//! and AMD partitions, rebooted, and restored without the fakes' writers, then with them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{assert_detail_says, assert_outcome, logged};
use fake_nvml::support::{ProcRoot, VgpuHost, vgpu_host};
use fake_nvml::{FakeNvmlBackend, scenarios};
use gpu_host_probe::amdgpu::MemoryPartition as M;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::{Clock, Origin, ProgramRefused, VirtualClock};
use host_sync::fake_amdgpu::{FakeAmdgpu, MI300X, SharedAmdgpu};
use host_sync::{Host, MemoryStore, Pool, StateStore};
use mig_layout::amd::{AmdWith, DcmDocument, apply_amd};
use mig_layout::vgpu::{SriovManage, VgpuDocument, VgpuWith, apply_vgpu};
use mig_layout::{
    ApplyError, ApplyOptions, ApplyOutcome, ApplyRun, Conclusion, Method, ResetWith, Restore,
    restore,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

const A100: &str = "0000:3b:00.0";

fn amd(index: usize) -> String {
    format!("0000:{:02x}:00.0", 0x85 + index * 0x10)
}

const VGPU: &str = r#"version: v1
vgpu-configs:
  A100-1-5C:
    - devices: [0]
      vgpu-devices:
        A100-1-5C: 7
"#;

const PROFILES: &str = r#"{"gpu-config-profiles": {"qpx-nps1": {"profiles": [
  {"computePartition": "QPX", "memoryPartition": "NPS1", "numGPUsAssigned": 8}]}}}"#;

struct Bed {
    dir: tempfile::TempDir,
    host: Host,
    helper: Helper,
    nvidia: VgpuHost,
    amd: SharedAmdgpu,
    log: PathBuf,
    store: MemoryStore,
    clock: Arc<VirtualClock>,
    backend: FakeNvmlBackend,
}

/// Which writers a run is given.
#[derive(Clone, PartialEq)]
enum Writers {
    /// The fakes', made for this tree.
    Fakes,
    /// None: the run's own defaults.
    None,
    /// The vGPU fake's only; the AMD side's defaults (the kernel's files, the machine's
    /// `modprobe`).
    NvidiaFake,
    /// `sriov-manage` at this path, with the fake's type writes; the AMD side's defaults.
    SriovManageAt(PathBuf),
    /// The kernel's files (the tree's) with `modprobe` at this path.
    ModprobeAt(PathBuf),
}

impl Bed {
    fn new() -> Bed {
        let dir = tempfile::tempdir().unwrap();
        let sysfs = crate::common::vgpu_bed::sysfs_with_sriov_a100(dir.path(), A100);
        let mut amd = FakeAmdgpu::new(sysfs.clone());
        for index in 0..8 {
            amd.gpu(&self::amd(index), MI300X, M::Nps1, Some(42))
                .unwrap();
        }
        let scenario =
            fake_nvml::support::scenario_of(&[(A100, scenarios::PART_A100_PCIE_40GB)]).unwrap();
        let nvml = dir.path().join("nvml");
        std::fs::create_dir_all(&nvml).unwrap();
        let log = dir.path().join("calls.log");
        let nvidia = vgpu_host(&nvml, &scenario, Some(&log), sysfs.root()).unwrap();
        let proc_root = ProcRoot::booted(dir.path().join("proc"), "boot-1").unwrap();
        let host = Host::new(dir.path().join("state"))
            .with_sysfs_root(sysfs.root())
            .with_proc_root(proc_root.path());
        let clock = Arc::new(VirtualClock::new(1_800_000_000_000));
        let backend = fake_nvml::backend(nvidia.state.path(), clock.clone());
        Bed {
            helper: Helper::new(HelperConfig::new(nvidia.helper.clone())),
            dir,
            host,
            nvidia,
            amd: SharedAmdgpu::new(amd),
            log,
            store: MemoryStore::default(),
            clock,
            backend,
        }
    }

    fn run<R>(&mut self, writers: Writers, go: impl FnOnce(ApplyRun<'_>, &ApplyOptions) -> R) -> R {
        let options = ApplyOptions::new(Pool::Enabled);
        let clock: &dyn Clock = &*self.clock;
        let reset = ResetWith::new(Method::Nvidia, &mut self.backend)
            .window(Duration::from_secs(90))
            .clock(clock);
        let run = ApplyRun::new(&self.host, &self.helper, &mut self.store, reset);
        let vgpu = |at: PathBuf| VgpuWith {
            sriov_manage: SriovManage::at(at),
            types: &self.nvidia.types,
        };
        let fake_sriov_manage = self.nvidia.sriov_manage.clone();
        let run = match writers {
            Writers::None => run,
            Writers::Fakes => run.vgpu(vgpu(fake_sriov_manage)).amd(AmdWith {
                writes: Some(&self.amd),
                ..AmdWith::default()
            }),
            Writers::NvidiaFake => run.vgpu(vgpu(fake_sriov_manage)),
            Writers::SriovManageAt(at) => run.vgpu(vgpu(at)),
            Writers::ModprobeAt(at) => run.amd(AmdWith {
                modprobe: gpu_host_probe::amdgpu::Modprobe::at(at),
                ..AmdWith::default()
            }),
        };
        go(run, &options)
    }

    /// Every write either fake has seen: NVML's and `sriov-manage`'s, the VF types, amdgpu's.
    fn writes(&self) -> (Vec<String>, Vec<String>) {
        let nvidia = logged(&self.log, |line| {
            [
                "Set",
                "Create",
                "Destroy",
                "sriov-manage",
                "current_vgpu_type",
            ]
            .iter()
            .any(|write| line.contains(write))
        });
        let amd = self.amd.lock().unwrap().log.clone();
        (nvidia, amd)
    }

    /// Both fakes rebooted: no VF, no GPU instance, the compute partitions set anew.
    fn reboot(&self) {
        let proc_root = ProcRoot::at(self.dir.path().join("proc"));
        fake_nvml::support::reboot(&self.nvidia.state, &proc_root, "boot-2").unwrap();
        self.amd.lock().unwrap().reboot().unwrap();
    }
}

/// The bed declared with MIG and vGPUs on the A100 and QPX+NPS1 on the hive (which a reboot
/// loses: a driver load in NPS1 sets SPX), by the fakes' writers.
fn declared() -> Bed {
    let mut bed = Bed::new();
    let document = VgpuDocument::from_text(VGPU).unwrap();
    let specs = document.config("A100-1-5C").unwrap().to_vec();
    let report = bed.run(Writers::Fakes, |run, options| {
        apply_vgpu(run, "A100-1-5C", &specs, options).unwrap()
    });
    assert_outcome(&report, ApplyOutcome::Done);
    let document = DcmDocument::from_text(PROFILES).unwrap();
    let profile = document.profile("qpx-nps1").unwrap().clone();
    let report = bed.run(Writers::Fakes, |run, options| {
        apply_amd(run, "qpx-nps1", &profile, options).unwrap()
    });
    assert_outcome(&report, ApplyOutcome::Done);
    bed
}

/// A restore by the fakes' writers: done, holding, and every GPU written back — each GPU of the
/// hive its compute partition, the A100 its VFs, instances and types.
fn restores_whole(bed: &mut Bed) {
    let restored = bed.run(Writers::Fakes, |run, options| {
        restore(run, options).unwrap()
    });
    let Restore::Ran(report) = restored else {
        panic!("the restore did not run: {restored:?}");
    };
    assert_outcome(&report, ApplyOutcome::Done);
    assert_eq!(report.conclusion(), Conclusion::Holds);
    let written: Vec<usize> = report.gpus.iter().map(|gpu| gpu.writes()).collect();
    assert!(written.iter().all(|writes| *writes > 0), "{written:?}");
    assert_eq!(written.len(), 9);
}

#[test]
fn a_restore_on_a_tree_given_no_writers_is_refused_before_any_write_naming_the_machines_program() {
    let mut bed = declared();
    bed.reboot();
    let before = bed.writes();
    let refused = bed.run(Writers::None, restore);
    let Err(ApplyError::NotThisHosts(ProgramRefused::NotThisHosts { program, .. })) = refused
    else {
        panic!("not refused for the machine's program: {refused:?}");
    };
    assert_eq!(
        (program.name(), program.origin(), program.path()),
        (
            "sriov-manage",
            Origin::Installed,
            std::path::Path::new(mig_layout::vgpu::DEFAULT_SRIOV_MANAGE)
        )
    );
    assert_eq!(bed.writes(), before, "nothing was written to either fake");
}

#[test]
fn an_amd_restore_on_a_tree_without_the_fakes_writer_is_refused_for_the_machines_modprobe() {
    let mut bed = declared();
    bed.reboot();
    let before = bed.writes();
    let refused = bed.run(Writers::NvidiaFake, restore);
    let Err(ApplyError::NotThisHosts(ProgramRefused::NotThisHosts { program, .. })) = refused
    else {
        panic!("not refused for the machine's program: {refused:?}");
    };
    assert_eq!(program.name(), "modprobe");
    assert_eq!(bed.writes(), before, "nothing was written to either fake");
}

#[test]
fn a_restore_on_a_tree_given_the_fakes_writers_brings_back_mig_the_vgpus_and_the_amd_partitions() {
    let mut bed = declared();
    bed.reboot();
    restores_whole(&mut bed);
}

#[test]
fn a_boot_restore_refused_for_the_machines_programs_is_not_the_boots_one_and_runs_when_given_writers()
 {
    let mut bed = declared();
    bed.reboot();
    let at_boot = |options: &ApplyOptions| options.clone().once_per_boot(true);
    let refused = bed.run(Writers::None, |run, options| {
        restore(run, &at_boot(options))
    });
    assert!(
        matches!(refused, Err(ApplyError::NotThisHosts(_))),
        "{refused:?}"
    );
    let state = bed.store.load().unwrap().unwrap();
    assert_eq!(
        state.restored_at_boot, None,
        "the refusal counted as the boot's restore"
    );
    let restored = bed.run(Writers::Fakes, |run, options| {
        restore(run, &at_boot(options)).unwrap()
    });
    let Restore::Ran(report) = restored else {
        panic!("the boot's restore did not run: {restored:?}");
    };
    assert_outcome(&report, ApplyOutcome::Done);
}

/// A copy of the fake's `sriov-manage` that anyone may change.
fn anyone_may_change(bed: &Bed) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = bed.dir.path().join("sriov-manage-0777");
    std::fs::copy(&bed.nvidia.sriov_manage, &path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    path
}

#[test]
fn an_sriov_manage_anyone_may_change_blocks_the_apply_before_the_mig_mode_is_written() {
    let mut bed = Bed::new();
    let unsafe_script = anyone_may_change(&bed);
    let document = VgpuDocument::from_text(VGPU).unwrap();
    let specs = document.config("A100-1-5C").unwrap().to_vec();
    let report = bed.run(Writers::SriovManageAt(unsafe_script), |run, options| {
        apply_vgpu(run, "A100-1-5C", &specs, options).unwrap()
    });
    assert_outcome(
        &report,
        ApplyOutcome::Blocked(mig_layout::ApplyReason::ToolUnavailable),
    );
    assert_detail_says(&report, "sriov-manage");
    assert_eq!(
        bed.writes(),
        (Vec::new(), Vec::new()),
        "no write, the MIG mode least"
    );
}

#[test]
fn a_modprobe_anyone_may_change_blocks_an_amd_apply_that_reloads_before_any_memory_request() {
    let mut bed = Bed::new();
    let unsafe_script = anyone_may_change(&bed);
    let profiles = r#"{"gpu-config-profiles": {"cpx-nps4": {"profiles": [
      {"computePartition": "CPX", "memoryPartition": "NPS4", "numGPUsAssigned": 8}]}}}"#;
    let document = DcmDocument::from_text(profiles).unwrap();
    let profile = document.profile("cpx-nps4").unwrap().clone();
    let memory_file = bed
        .host
        .sysfs_root()
        .join("bus/pci/devices")
        .join(amd(0))
        .join("current_memory_partition");
    let before = std::fs::read_to_string(&memory_file).unwrap();
    // The kernel's side (the tree's files), with a modprobe named for this host.
    let report = bed.run(Writers::ModprobeAt(unsafe_script), |run, options| {
        apply_amd(run, "cpx-nps4", &profile, options).unwrap()
    });
    assert_outcome(
        &report,
        ApplyOutcome::Blocked(mig_layout::ApplyReason::ToolUnavailable),
    );
    assert_detail_says(&report, "modprobe");
    assert_eq!(std::fs::read_to_string(&memory_file).unwrap(), before);
    assert_eq!(bed.writes(), (Vec::new(), Vec::new()));
}

/// The bed's declaration as the previous release (state schema 5) wrote it: MIG and seven
/// A100-1-5C vGPUs counted on the A100, QPX+NPS1 on the hive, in an earlier boot.
fn schema_5() -> String {
    let instances: Vec<String> = (0..7)
        .map(|start| {
            format!(r#"{{"profile_id": 19, "placement": {{"start": {start}, "size": 1}}}}"#)
        })
        .collect();
    let mut gpus = vec![format!(
        r#""{A100}": {{"mig_enabled": true, "profiles": [{{"profile": "1g.5gb", "count": 7}}],
          "instances": [{}], "unnamed": "match", "board": {{"model": "NVIDIA A100-PCIE-40GB"}},
          "vgpus": [{{"type_id": 474, "name": "A100-1-5C", "count": 7}}]}}"#,
        instances.join(", ")
    )];
    for index in 0..8 {
        gpus.push(format!(
            r#""{}": {{"mig_enabled": false, "profiles": [], "unnamed": "match", "board": {{}},
              "amd": {{"compute": "QPX", "memory": "NPS1"}}}}"#,
            amd(index)
        ));
    }
    format!(
        r#"{{"schema": 5, "status": "active", "reason": "ready", "boot_id": "boot-0",
        "gpus": {{}}, "declared": {{"label": "mixed", "declared_at": 1767229000,
        "generation": 3, "gpus": {{{}}}}}}}"#,
        gpus.join(", ")
    )
}

#[test]
fn a_state_the_previous_release_wrote_reads_and_restores_mig_the_vgpus_and_the_amd_partitions() {
    let mut bed = Bed::new();
    let state = host_sync::HostState::from_json(schema_5().as_bytes()).unwrap();
    assert_eq!(state.declared.as_ref().unwrap().gpus.len(), 9);
    bed.store.save(&state).unwrap();
    restores_whole(&mut bed);
}
