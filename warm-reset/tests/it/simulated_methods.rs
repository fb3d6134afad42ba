//! The NVIDIA, PCI and AMD methods on their simulated hosts, through the same machine and
//! executor as MetaX: each scenario ends as the design says, with exactly the resets it should
//! issue.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::VirtualClock;
use std::sync::Arc;
use warm_reset::sim::{NvidiaFault, PciFault, SimNvidia, SimPci};
use warm_reset::{Backend, MachineConfig, Method, ResetOutcome, ResetReport, ResetRun, execute};

fn run(backend: &mut dyn Backend, clock: &VirtualClock, config: &MachineConfig) -> ResetReport {
    let dir = tempfile::tempdir().unwrap();
    let host = gpu_host_probe::test_util::isolated_host(dir.path());
    execute(ResetRun::new(config, &host, backend).clock(clock)).unwrap()
}

/// Asserts that `detail` says `words`, showing the whole detail when it does not.
#[track_caller]
fn assert_says(detail: &str, words: &str) {
    assert!(detail.contains(words), "{detail}");
}

/// The outcome's and the reason's tokens, as `--json` writes them.
fn ended(report: &ResetReport) -> (&'static str, String) {
    (
        report.outcome.as_str(),
        report.outcome.reason_str().to_owned(),
    )
}

fn nvidia(change: impl FnOnce(&mut SimNvidia)) -> (ResetReport, Vec<String>) {
    let clock = VirtualClock::new(1_700_000_000_000);
    let mut host = SimNvidia::new(Arc::new(clock.clone()), 4, &[(0, 1)]);
    change(&mut host);
    let config = MachineConfig::new("0".parse().unwrap()).method(Method::Nvidia);
    let report = run(&mut host, &clock, &config);
    (report, host.host().resets.clone())
}

fn pci(change: impl FnOnce(&mut SimPci)) -> (ResetReport, usize) {
    let clock = VirtualClock::new(1_700_000_000_000);
    let mut host = SimPci::new(Arc::new(clock.clone()));
    change(&mut host);
    let config = MachineConfig::new("0000:3b:00.0".parse().unwrap()).method(Method::Pci);
    let report = run(&mut host, &clock, &config);
    (report, host.host().resets.len())
}

#[test]
fn an_nvidia_gpu_is_reset_with_its_nvlink_peer_in_one_command() {
    let (report, resets) = nvidia(|_| {});
    assert_eq!(ended(&report), ("done", String::new()));
    assert_eq!(resets, ["00000000:18:00.0,00000000:19:00.0"]);
    assert_eq!(report.group, Some(vec![0, 1]));
    assert_eq!(report.verified.len(), 2);
}

#[test]
fn an_nvidia_peer_held_by_a_process_blocks_with_gpu_busy_naming_it() {
    let (report, resets) = nvidia(|host| host.host_mut().holders = vec![(77, "dcgm".into(), 1)]);
    assert_eq!(ended(&report), ("blocked", "gpu_busy".into()));
    assert_says(&report.detail, "77 dcgm (/dev/nvidia1)");
    assert!(resets.is_empty());
}

#[test]
fn a_gpu_outside_the_group_held_by_a_process_does_not_block() {
    let (report, _) = nvidia(|host| host.host_mut().holders = vec![(77, "dcgm".into(), 3)]);
    assert_eq!(report.outcome, ResetOutcome::Done);
}

#[test]
fn a_compute_app_on_the_group_blocks_with_gpu_busy() {
    let (report, resets) = nvidia(|host| host.host_mut().compute_apps = vec![(31415, 1)]);
    assert_eq!(ended(&report), ("blocked", "gpu_busy".into()));
    assert_says(&report.detail, "31415");
    assert!(resets.is_empty());
}

#[test]
fn the_nvidia_busy_block_is_blocked_and_leaves_nothing_in_flight() {
    let (report, resets) = nvidia(|host| host.host_mut().fault = Some(NvidiaFault::BusyBlock));
    assert_eq!(ended(&report), ("blocked", "gpu_busy".into()));
    assert_says(&report.detail, "In use by another client");
    assert_eq!(resets.len(), 1);
}

/// Every NVIDIA fault of a reset that ends in a cold reboot, one named case a fault: the fault,
/// and the reason's token it must end with.
#[test]
fn an_nvidia_reset_that_fails_needs_a_cold_reboot_with_the_reason_of_its_fault() {
    let cases = [
        (
            "any_other_nvidia_failure_needs_a_cold_reboot",
            NvidiaFault::Error,
            "reset_error",
        ),
        (
            "an_nvidia_reset_that_hangs_is_killed_at_the_windows_end",
            NvidiaFault::Hang,
            "reset_hung",
        ),
        (
            "an_nvidia_peer_gone_after_the_reset_is_gpu_missing",
            NvidiaFault::GpuMissing(1),
            "gpu_missing",
        ),
        (
            "an_nvidia_gpu_the_kernel_gives_up_on_is_kernel_errors",
            NvidiaFault::KernelErrors,
            "kernel_errors",
        ),
    ];
    for (case, fault, reason) in cases {
        let (report, _) = nvidia(|host| host.host_mut().fault = Some(fault));
        assert_eq!(
            ended(&report),
            ("cold_reboot_required", reason.to_owned()),
            "case {case}"
        );
    }
}

#[test]
fn a_pci_function_on_vfio_is_reset_once_and_verified() {
    let (report, resets) = pci(|_| {});
    assert_eq!(ended(&report), ("done", String::new()));
    assert_eq!(resets, 1);
    assert_eq!(report.verified.len(), 1);
    assert_eq!(report.group, None);
}

#[test]
fn a_pci_function_whose_vfio_group_is_held_blocks_with_gpu_busy() {
    let (report, resets) = pci(|host| {
        host.host_mut().holders = vec![gpu_host_probe::Holder::new(4242, "qemu", "/dev/vfio/12")]
    });
    assert_eq!(ended(&report), ("blocked", "gpu_busy".into()));
    assert_says(&report.detail, "4242 qemu");
    assert_eq!(resets, 0);
}

#[test]
fn a_pci_bus_reset_with_a_sibling_in_use_blocks_with_group_in_use() {
    let (report, resets) = pci(|host| {
        let gpu = "0000:3b:00.0".parse().unwrap();
        let audio = "0000:3b:00.1".parse().unwrap();
        host.host_mut()
            .functions
            .get_mut(&gpu)
            .unwrap()
            .reset_methods = Some(vec!["bus".into()]);
        host.host_mut().functions.get_mut(&audio).unwrap().driver = Some("snd_hda_intel".into());
    });
    assert_eq!(ended(&report), ("blocked", "group_in_use".into()));
    assert_says(&report.detail, "0000:3b:00.1");
    assert_eq!(resets, 0);
}

#[test]
fn the_pci_faults_end_as_the_design_says() {
    for (fault, reason) in [
        (PciFault::Hang, "reset_hung"),
        (PciFault::FallsOff, "gpu_missing"),
        (PciFault::Gone, "gpu_missing"),
        (PciFault::GivesUp, "kernel_errors"),
    ] {
        let (report, resets) = pci(|host| host.host_mut().fault = Some(fault.clone()));
        assert_eq!(
            ended(&report),
            ("cold_reboot_required", reason.to_owned()),
            "{fault:?}"
        );
        assert_eq!(resets, 1);
    }
}

#[test]
fn every_named_scenario_of_every_method_ends_with_its_methods_reason() {
    let expected: [(Method, &[(&str, &str)]); 4] = [
        (
            Method::Metax,
            &[
                ("ok", "done"),
                ("slow", "done"),
                ("hang", "cold_reboot_required (reset_hung)"),
                ("error", "cold_reboot_required (reset_error)"),
                ("error-exit-0", "cold_reboot_required (reset_error)"),
                ("gpu-missing", "cold_reboot_required (gpu_missing)"),
                ("gpu-unavailable", "cold_reboot_required (gpu_unavailable)"),
                ("kernel-errors", "cold_reboot_required (kernel_errors)"),
                ("topology-wrong", "cold_reboot_required (topology_wrong)"),
                ("link-lost", "cold_reboot_required (topology_wrong)"),
                ("busy", "blocked (gpu_busy)"),
                ("driver-in-use", "blocked (driver_in_use)"),
                ("driver-not-loaded", "blocked (driver_not_loaded)"),
                ("too-old", "blocked (driver_too_old)"),
                ("not-root", "blocked (not_root)"),
                ("no-mx-smi", "blocked (mx_smi_unavailable)"),
                ("kernel-log-unreadable", "blocked (kernel_log_unreadable)"),
            ],
        ),
        (
            Method::Nvidia,
            &[
                ("ok", "done"),
                ("busy", "blocked (gpu_busy)"),
                ("compute-app", "blocked (gpu_busy)"),
                ("busy-block", "blocked (gpu_busy)"),
                ("error", "cold_reboot_required (reset_error)"),
                ("hang", "cold_reboot_required (reset_hung)"),
                ("gpu-missing", "cold_reboot_required (gpu_missing)"),
                ("kernel-errors", "cold_reboot_required (kernel_errors)"),
                ("no-nvidia-smi", "blocked (nvidia_smi_unavailable)"),
            ],
        ),
        (
            Method::Pci,
            &[
                ("ok", "done"),
                ("busy", "blocked (gpu_busy)"),
                ("host-driver", "blocked (driver_in_use)"),
                ("no-reset-method", "blocked (reset_unsupported)"),
                ("bus-sibling-in-use", "blocked (group_in_use)"),
                ("hang", "cold_reboot_required (reset_hung)"),
                ("falls-off", "cold_reboot_required (gpu_missing)"),
                ("gone", "cold_reboot_required (gpu_missing)"),
                ("gives-up", "cold_reboot_required (kernel_errors)"),
            ],
        ),
        (
            Method::Amd,
            &[
                ("ok", "done"),
                ("no-hive", "done"),
                ("peer-busy", "blocked (group_in_use)"),
                ("kfd-held", "blocked (gpu_busy)"),
                ("not-amdgpu", "blocked (driver_not_loaded)"),
                ("error", "cold_reboot_required (reset_error)"),
                ("says-unable", "cold_reboot_required (reset_error)"),
                ("hang", "cold_reboot_required (reset_hung)"),
                ("stays-in-reset", "cold_reboot_required (gpu_unavailable)"),
                ("gpu-missing", "cold_reboot_required (gpu_missing)"),
                ("partition-lost", "cold_reboot_required (topology_wrong)"),
                ("kernel-errors", "cold_reboot_required (kernel_errors)"),
                ("no-amd-smi", "blocked (amd_smi_unavailable)"),
            ],
        ),
    ];
    assert_eq!(
        expected.map(|(method, _)| method),
        [Method::Metax, Method::Nvidia, Method::Pci, Method::Amd],
        "every method is in the table"
    );
    for (method, scenarios) in expected {
        let named: Vec<&str> = warm_reset::sim::scenarios(method)
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let listed: Vec<&str> = scenarios.iter().map(|(name, _)| *name).collect();
        assert_eq!(named, listed, "every {method} scenario is in the table");
    }
    for (method, name, end) in expected.iter().flat_map(|(method, scenarios)| {
        scenarios
            .iter()
            .map(move |(name, end)| (*method, *name, *end))
    }) {
        let clock = VirtualClock::new(1_700_000_000_000);
        let mut host = warm_reset::sim::scenario(method, name, Arc::new(clock.clone())).unwrap();
        let id = if method == Method::Pci {
            "0000:3b:00.0"
        } else {
            "0"
        };
        let report = run(
            host.as_mut(),
            &clock,
            &MachineConfig::new(id.parse().unwrap()).method(method),
        );
        assert_eq!(
            report.outcome.to_string(),
            end,
            "{method} {name}: {report:?}"
        );
    }
}

#[test]
fn an_observer_is_told_of_verifying_once_however_many_checks_it_makes() {
    let clock = VirtualClock::new(1_700_000_000_000);
    let mut host = SimNvidia::new(Arc::new(clock.clone()), 4, &[(0, 1)]);
    // Back 30 s after the command ends: the verification checks again and again meanwhile.
    host.host_mut().recovery = std::time::Duration::from_secs(30);
    let config = MachineConfig::new("0".parse().unwrap()).method(Method::Nvidia);
    let dir = tempfile::tempdir().unwrap();
    let machine = gpu_host_probe::test_util::isolated_host(dir.path());
    let mut seen: Vec<&'static str> = Vec::new();
    let mut observe = |state: &warm_reset::State, _: std::time::Duration| seen.push(state.name());
    let report = execute(
        ResetRun::new(&config, &machine, &mut host)
            .clock(&clock)
            .observe(&mut observe),
    )
    .unwrap();
    assert_eq!(ended(&report), ("done", String::new()));
    assert_eq!(
        seen.iter().filter(|name| **name == "verifying").count(),
        1,
        "{seen:?}"
    );
    assert!(seen.windows(2).all(|pair| pair[0] != pair[1]), "{seen:?}");
}

#[test]
fn gpus_named_in_a_list_are_reset_with_their_peers_in_one_command() {
    let clock = VirtualClock::new(1_700_000_000_000);
    let mut host = SimNvidia::new(Arc::new(clock.clone()), 4, &[(0, 1)]);
    let config = MachineConfig::new("0,2".parse().unwrap()).method(Method::Nvidia);
    let report = run(&mut host, &clock, &config);
    assert_eq!(ended(&report), ("done", String::new()));
    assert_eq!(
        host.host().resets,
        ["00000000:18:00.0,00000000:19:00.0,00000000:1A:00.0"]
    );
    assert_eq!(report.verified.len(), 3);
}

#[test]
fn a_gpu_of_the_group_not_back_is_named_apart_from_the_others() {
    let (report, _) = nvidia(|host| host.host_mut().fault = Some(NvidiaFault::GpuMissing(1)));
    assert_eq!(
        ended(&report),
        ("cold_reboot_required", "gpu_missing".into())
    );
    assert_eq!(report.not_back, ["0000:19:00.0".parse().unwrap()]);
}
