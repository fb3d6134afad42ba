//! The AMD method on its simulated host (eight MI300X in one XGMI hive), through the same
//! machine and executor as the other methods: the kernel resets a hive together, so one GPU named
//! is one `amd-smi reset` of that GPU and a verification of the whole hive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::Holder;
use gpu_host_probe::VirtualClock;
use std::sync::Arc;
use std::time::Duration;
use warm_reset::amd::{KFD, PartitionFile};
use warm_reset::sim::{AmdFault, SIM_HIVE, SIM_HIVE_GPUS as GPUS, SimAmd, interrupted_reset};
use warm_reset::{
    Back, Backend, Host, MachineConfig, Method, ResetReport, ResetRun, ResetTarget, ResetWarning,
    execute,
};

struct Sim {
    clock: VirtualClock,
    host: SimAmd,
    dir: tempfile::TempDir,
}

impl Sim {
    fn new(change: impl FnOnce(&mut SimAmd)) -> Sim {
        let clock = VirtualClock::new(1_700_000_000_000);
        let mut host = SimAmd::new(Arc::new(clock.clone()));
        change(&mut host);
        let dir = tempfile::tempdir().unwrap();
        let random = dir.path().join("proc/sys/kernel/random");
        std::fs::create_dir_all(&random).unwrap();
        std::fs::write(random.join("boot_id"), "boot-1\n").unwrap();
        Sim { clock, host, dir }
    }

    fn machine(&self) -> Host {
        gpu_host_probe::test_util::isolated_host(self.dir.path().join("state"))
            .with_proc_root(self.dir.path().join("proc"))
            .simulated()
    }

    fn run(&mut self, device: &str) -> ResetReport {
        self.run_with(MachineConfig::new(device.parse().unwrap()).method(Method::Amd))
    }

    fn run_with(&mut self, config: MachineConfig) -> ResetReport {
        let host = self.machine();
        execute(ResetRun::new(&config, &host, &mut self.host).clock(&self.clock)).unwrap()
    }

    fn resets(&self) -> Vec<String> {
        self.host.host().resets.clone()
    }
}

/// The report of a reset of `id` on the default host, and the resets the host saw.
fn run_on_default(id: &str) -> (ResetReport, Vec<String>) {
    let mut sim = Sim::new(|_| {});
    let report = sim.run(id);
    (report, sim.resets())
}

/// The report of a reset of the first GPU on the default host with `fault`.
fn run_with_fault(fault: AmdFault) -> ResetReport {
    Sim::new(|host| host.host_mut().fault = Some(fault)).run(GPUS[0])
}

/// Asserts that `detail` says `words`, showing the whole detail when it does not.
#[track_caller]
fn assert_says(detail: &str, words: &str) {
    assert!(detail.contains(words), "{detail}");
}

fn ended(report: &ResetReport) -> String {
    report.outcome.to_string()
}

fn addresses(list: &[gpu_partition_types::Bdf]) -> Vec<String> {
    list.iter().map(ToString::to_string).collect()
}

fn bdf(text: &str) -> gpu_partition_types::Bdf {
    text.parse().unwrap()
}

#[test]
fn one_gpu_of_a_hive_of_eight_is_reset_once_and_the_whole_hive_is_verified() {
    let (report, resets) = run_on_default(GPUS[0]);
    assert_eq!(ended(&report), "done", "{report:?}");
    assert_eq!(resets, ["reset --gpureset --gpu 0000:05:00.0"]);
    assert_eq!(addresses(&report.gpus), [GPUS[0]]);
    assert_eq!(addresses(&report.verified), GPUS);
    assert_eq!(report.group, None);
    assert!(
        report.warnings.contains(&ResetWarning::HiveResetToo {
            peers: GPUS[1..].iter().map(|gpu| (*gpu).to_owned()).collect()
        }),
        "{:?}",
        report.warnings
    );
}

#[test]
fn a_gpu_in_no_hive_is_reset_and_verified_alone() {
    let mut sim = Sim::new(|host| {
        host.host_mut().gpus.get_mut(&bdf(GPUS[2])).unwrap().hive = None;
    });
    let report = sim.run(GPUS[2]);
    assert_eq!(ended(&report), "done");
    assert_eq!(addresses(&report.verified), [GPUS[2]]);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[test]
fn every_gpu_of_two_hives_is_reset_by_naming_one_gpu_of_each() {
    let mut sim = Sim::new(|host| {
        for gpu in &GPUS[4..] {
            host.host_mut().gpus.get_mut(&bdf(gpu)).unwrap().hive = Some(7);
        }
    });
    let report = sim.run("all");
    assert_eq!(ended(&report), "done");
    assert_eq!(
        sim.resets(),
        ["reset --gpureset --gpu 0000:05:00.0 0000:85:00.0"]
    );
    assert_eq!(report.verified.len(), 8);
}

#[test]
fn two_gpus_of_one_hive_named_together_are_one_gpu_given_to_amd_smi() {
    let (report, resets) = run_on_default(&format!("{},{}", GPUS[3], GPUS[6]));
    assert_eq!(ended(&report), "done");
    assert_eq!(resets, ["reset --gpureset --gpu 0000:65:00.0"]);
    assert_eq!(addresses(&report.gpus), [GPUS[3], GPUS[6]]);
}

#[test]
fn only_the_named_gpus_hive_is_reset_and_verified_not_another_hive() {
    let mut sim = Sim::new(|host| {
        for gpu in &GPUS[4..] {
            host.host_mut().gpus.get_mut(&bdf(gpu)).unwrap().hive = Some(7);
        }
        // A holder of a GPU of the other hive stops nothing.
        host.host_mut().holders = vec![Holder::new(9, "busy", "/dev/dri/renderD135")];
    });
    let report = sim.run(GPUS[1]);
    assert_eq!(ended(&report), "done", "{report:?}");
    assert_eq!(addresses(&report.verified), GPUS[..4]);
}

#[test]
fn an_amd_smi_id_or_uuid_names_its_gpu_through_the_listing() {
    for id in ["1", "01ff74a1-0000-1000-8000-000000000001", "0000:26:00.0"] {
        let (report, resets) = run_on_default(id);
        assert_eq!(ended(&report), "done", "{id}");
        assert_eq!(addresses(&report.gpus), [GPUS[1]], "{id}");
        assert_eq!(resets, ["reset --gpureset --gpu 0000:26:00.0"], "{id}");
    }
}

#[test]
fn an_id_that_names_no_amd_gpu_is_unknown_device_and_nothing_is_reset() {
    for id in ["8", "0000:3b:00.0", "deadbeef-0000"] {
        let (report, resets) = run_on_default(id);
        assert_eq!(ended(&report), "blocked (unknown_device)", "{id}");
        assert!(resets.is_empty(), "{id}");
    }
}

#[test]
fn a_holder_of_a_hive_peers_render_node_blocks_with_group_in_use_naming_it() {
    let mut sim = Sim::new(|host| {
        host.host_mut().holders = vec![Holder::new(2718, "rocm-smi-daemon", "/dev/dri/renderD131")];
    });
    let report = sim.run(GPUS[0]);
    assert_eq!(ended(&report), "blocked (group_in_use)");
    assert_says(&report.detail, "2718 rocm-smi-daemon (/dev/dri/renderD131)");
    assert!(sim.resets().is_empty());
}

#[test]
fn a_holder_of_kfd_or_of_the_named_gpus_render_node_blocks_with_gpu_busy_naming_it() {
    for (holder, named) in [
        (
            Holder::new(31415, "python3", KFD),
            "31415 python3 (/dev/kfd)",
        ),
        (
            Holder::new(4242, "vllm", "/dev/dri/renderD128"),
            "4242 vllm (/dev/dri/renderD128)",
        ),
    ] {
        let mut sim = Sim::new(|host| host.host_mut().holders = vec![holder.clone()]);
        let report = sim.run(GPUS[0]);
        assert_eq!(ended(&report), "blocked (gpu_busy)");
        assert_says(&report.detail, named);
        assert!(sim.resets().is_empty());
    }
}

#[test]
fn a_gpu_of_the_hive_not_on_amdgpu_or_in_reset_blocks_before_anything_is_reset() {
    let mut sim = Sim::new(|host| {
        host.host_mut()
            .gpus
            .get_mut(&bdf(GPUS[4]))
            .unwrap()
            .compute_partition = PartitionFile::InReset;
    });
    let report = sim.run(GPUS[0]);
    assert_eq!(ended(&report), "blocked (group_in_use)");
    assert_says(&report.detail, GPUS[4]);
    let mut sim = Sim::new(|host| {
        host.host_mut().gpus.get_mut(&bdf(GPUS[0])).unwrap().driver = None;
    });
    let report = sim.run(GPUS[0]);
    assert_eq!(ended(&report), "blocked (driver_not_loaded)");
    assert!(sim.resets().is_empty());
}

#[test]
fn a_hive_that_comes_out_of_reset_late_is_waited_for_within_the_window() {
    let mut sim = Sim::new(|host| host.host_mut().recovery = Duration::from_secs(30));
    let report = sim.run(GPUS[0]);
    assert_eq!(ended(&report), "done");
    assert!(
        report.elapsed >= Duration::from_secs(32),
        "{:?}",
        report.elapsed
    );
}

#[test]
fn a_gpu_of_the_hive_that_stays_in_reset_is_named_apart_as_unavailable() {
    let report = run_with_fault(AmdFault::StaysInReset(bdf(GPUS[3])));
    assert_eq!(ended(&report), "cold_reboot_required (gpu_unavailable)");
    assert_eq!(addresses(&report.not_back), [GPUS[3]]);
    assert_says(&report.detail, "EPERM");
}

/// Every AMD fault that ends in a cold reboot saying why, one named case a fault: the fault, how
/// the run ends, and what its detail must say.
#[test]
fn an_amd_reset_that_fails_needs_a_cold_reboot_saying_why() {
    let cases = [
        (
            "a_compute_partition_not_restored_after_the_reset_is_topology_wrong",
            AmdFault::PartitionLost(bdf(GPUS[1])),
            "cold_reboot_required (topology_wrong)",
            "SPX where it read CPX",
        ),
        (
            "amdgpu_saying_the_reset_failed_at_information_level_is_kernel_errors",
            AmdFault::KernelErrors(bdf(GPUS[2])),
            "cold_reboot_required (kernel_errors)",
            "GPU reset(1) failed",
        ),
        (
            "amd_smi_saying_it_was_unable_with_exit_0_is_a_reset_error_quoting_it",
            AmdFault::SaysUnable,
            "cold_reboot_required (reset_error)",
            "Unable to reset GPU",
        ),
    ];
    for (case, fault, end, says) in cases {
        let report = run_with_fault(fault);
        assert_eq!(ended(&report), end, "case {case}");
        assert!(
            report.detail.contains(says),
            "case {case}: {}",
            report.detail
        );
    }
}

#[test]
fn a_gpu_found_in_another_hive_cannot_come_back_and_is_wrong_at_once() {
    let mut sim = Sim::new(|_| {});
    let (target, _) =
        Backend::resolve(&mut sim.host, &ResetTarget::parse(GPUS[0]).unwrap()).unwrap();
    sim.host
        .host_mut()
        .gpus
        .get_mut(&bdf(GPUS[7]))
        .unwrap()
        .hive = Some(1);
    let back = Backend::check_back(&mut sim.host, &target);
    let Back::Wrong(not_back) = &back else {
        panic!("{back:?}");
    };
    assert_says(
        &not_back.detail,
        &format!("is in hive 1 where it was in hive {SIM_HIVE}"),
    );
}

#[test]
fn a_dry_run_names_the_hive_and_resets_nothing() {
    let mut sim = Sim::new(|_| {});
    let report = sim.run_with(
        MachineConfig::new(GPUS[0].parse().unwrap())
            .method(Method::Amd)
            .dry_run(true),
    );
    assert_eq!(ended(&report), "dry_run");
    assert_eq!(report.verified.len(), 8);
    assert!(sim.resets().is_empty());
}

#[test]
fn a_restart_inside_the_window_never_resets_the_hive_a_second_time() {
    let mut sim = Sim::new(|_| {});
    let host = sim.machine();
    interrupted_reset(
        &host,
        &mut sim.host,
        &ResetTarget::parse(GPUS[0]).unwrap(),
        gpu_host_probe::Clock::unix_ms(&sim.clock),
        Duration::from_secs(90),
        Some("boot-1"),
    )
    .unwrap();
    let report = sim.run(GPUS[0]);
    assert_eq!(ended(&report), "blocked (reset_in_flight)");
    assert!(sim.resets().is_empty());
}
