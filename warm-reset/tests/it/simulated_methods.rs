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
    assert!(
        report.detail.contains("77 dcgm (/dev/nvidia1)"),
        "{}",
        report.detail
    );
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
    assert!(report.detail.contains("31415"), "{}", report.detail);
    assert!(resets.is_empty());
}

#[test]
fn the_nvidia_busy_block_is_blocked_and_leaves_nothing_in_flight() {
    let (report, resets) = nvidia(|host| host.host_mut().fault = Some(NvidiaFault::BusyBlock));
    assert_eq!(ended(&report), ("blocked", "gpu_busy".into()));
    assert!(
        report.detail.contains("In use by another client"),
        "{}",
        report.detail
    );
    assert_eq!(resets.len(), 1);
}

#[test]
fn any_other_nvidia_failure_needs_a_cold_reboot() {
    let (report, _) = nvidia(|host| host.host_mut().fault = Some(NvidiaFault::Error));
    assert_eq!(
        ended(&report),
        ("cold_reboot_required", "reset_error".into())
    );
}

#[test]
fn an_nvidia_reset_that_hangs_is_killed_at_the_windows_end() {
    let (report, _) = nvidia(|host| host.host_mut().fault = Some(NvidiaFault::Hang));
    assert_eq!(
        ended(&report),
        ("cold_reboot_required", "reset_hung".into())
    );
}

#[test]
fn an_nvidia_peer_gone_after_the_reset_is_gpu_missing() {
    let (report, _) = nvidia(|host| host.host_mut().fault = Some(NvidiaFault::GpuMissing(1)));
    assert_eq!(
        ended(&report),
        ("cold_reboot_required", "gpu_missing".into())
    );
}

#[test]
fn an_nvidia_gpu_the_kernel_gives_up_on_is_kernel_errors() {
    let (report, _) = nvidia(|host| host.host_mut().fault = Some(NvidiaFault::KernelErrors));
    assert_eq!(
        ended(&report),
        ("cold_reboot_required", "kernel_errors".into())
    );
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
    assert!(report.detail.contains("4242 qemu"), "{}", report.detail);
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
    assert!(report.detail.contains("0000:3b:00.1"), "{}", report.detail);
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
    let expected: [(Method, &str, &str); 48] = [
        (Method::Metax, "ok", "done"),
        (Method::Metax, "slow", "done"),
        (Method::Metax, "hang", "cold_reboot_required (reset_hung)"),
        (Method::Metax, "error", "cold_reboot_required (reset_error)"),
        (
            Method::Metax,
            "error-exit-0",
            "cold_reboot_required (reset_error)",
        ),
        (
            Method::Metax,
            "gpu-missing",
            "cold_reboot_required (gpu_missing)",
        ),
        (
            Method::Metax,
            "gpu-unavailable",
            "cold_reboot_required (gpu_unavailable)",
        ),
        (
            Method::Metax,
            "kernel-errors",
            "cold_reboot_required (kernel_errors)",
        ),
        (
            Method::Metax,
            "topology-wrong",
            "cold_reboot_required (topology_wrong)",
        ),
        (
            Method::Metax,
            "link-lost",
            "cold_reboot_required (topology_wrong)",
        ),
        (Method::Metax, "busy", "blocked (gpu_busy)"),
        (Method::Metax, "driver-in-use", "blocked (driver_in_use)"),
        (
            Method::Metax,
            "driver-not-loaded",
            "blocked (driver_not_loaded)",
        ),
        (Method::Metax, "too-old", "blocked (driver_too_old)"),
        (Method::Metax, "not-root", "blocked (not_root)"),
        (Method::Metax, "no-mx-smi", "blocked (mx_smi_unavailable)"),
        (
            Method::Metax,
            "kernel-log-unreadable",
            "blocked (kernel_log_unreadable)",
        ),
        (Method::Nvidia, "ok", "done"),
        (Method::Nvidia, "busy", "blocked (gpu_busy)"),
        (Method::Nvidia, "compute-app", "blocked (gpu_busy)"),
        (Method::Nvidia, "busy-block", "blocked (gpu_busy)"),
        (
            Method::Nvidia,
            "error",
            "cold_reboot_required (reset_error)",
        ),
        (Method::Nvidia, "hang", "cold_reboot_required (reset_hung)"),
        (
            Method::Nvidia,
            "gpu-missing",
            "cold_reboot_required (gpu_missing)",
        ),
        (
            Method::Nvidia,
            "kernel-errors",
            "cold_reboot_required (kernel_errors)",
        ),
        (
            Method::Nvidia,
            "no-nvidia-smi",
            "blocked (nvidia_smi_unavailable)",
        ),
        (Method::Pci, "ok", "done"),
        (Method::Pci, "busy", "blocked (gpu_busy)"),
        (Method::Pci, "host-driver", "blocked (driver_in_use)"),
        (
            Method::Pci,
            "no-reset-method",
            "blocked (reset_unsupported)",
        ),
        (Method::Pci, "bus-sibling-in-use", "blocked (group_in_use)"),
        (Method::Pci, "hang", "cold_reboot_required (reset_hung)"),
        (
            Method::Pci,
            "falls-off",
            "cold_reboot_required (gpu_missing)",
        ),
        (Method::Pci, "gone", "cold_reboot_required (gpu_missing)"),
        (
            Method::Pci,
            "gives-up",
            "cold_reboot_required (kernel_errors)",
        ),
        (Method::Amd, "ok", "done"),
        (Method::Amd, "no-hive", "done"),
        (Method::Amd, "peer-busy", "blocked (group_in_use)"),
        (Method::Amd, "kfd-held", "blocked (gpu_busy)"),
        (Method::Amd, "not-amdgpu", "blocked (driver_not_loaded)"),
        (Method::Amd, "error", "cold_reboot_required (reset_error)"),
        (
            Method::Amd,
            "says-unable",
            "cold_reboot_required (reset_error)",
        ),
        (Method::Amd, "hang", "cold_reboot_required (reset_hung)"),
        (
            Method::Amd,
            "stays-in-reset",
            "cold_reboot_required (gpu_unavailable)",
        ),
        (
            Method::Amd,
            "gpu-missing",
            "cold_reboot_required (gpu_missing)",
        ),
        (
            Method::Amd,
            "partition-lost",
            "cold_reboot_required (topology_wrong)",
        ),
        (
            Method::Amd,
            "kernel-errors",
            "cold_reboot_required (kernel_errors)",
        ),
        (Method::Amd, "no-amd-smi", "blocked (amd_smi_unavailable)"),
    ];
    for method in [Method::Metax, Method::Nvidia, Method::Pci, Method::Amd] {
        let named: Vec<&str> = warm_reset::sim::scenarios(method)
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let listed: Vec<&str> = expected
            .iter()
            .filter(|(m, _, _)| *m == method)
            .map(|(_, name, _)| *name)
            .collect();
        assert_eq!(named, listed, "every {method} scenario is in the table");
    }
    for (method, name, end) in expected {
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
