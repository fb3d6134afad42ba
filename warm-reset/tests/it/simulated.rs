//! The procedure against the simulated host on a virtual clock: every end, and how long.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::VirtualClock;
use std::sync::Arc;
use std::time::Duration;
use warm_reset::metax::mx_smi::GpuProcess;
use warm_reset::sim::{MetaxFault, SimMetax, interrupted_reset};
use warm_reset::{Host, MachineConfig, ResetOutcome, ResetReport, ResetRun, execute, read_journal};

struct Sim {
    clock: VirtualClock,
    host: SimMetax,
    dir: tempfile::TempDir,
    config: MachineConfig,
}

impl Sim {
    fn new() -> Sim {
        let clock = VirtualClock::new(1_700_000_000_000);
        let host = SimMetax::new(Arc::new(clock.clone()), &[2, 2]);
        let dir = tempfile::tempdir().unwrap();
        // The boot this host runs, as its procfs says.
        let random = dir.path().join("proc/sys/kernel/random");
        std::fs::create_dir_all(&random).unwrap();
        std::fs::write(random.join("boot_id"), "boot-1\n").unwrap();
        Sim {
            clock,
            host,
            dir,
            config: MachineConfig::new("1".parse().unwrap()),
        }
    }

    fn with(mut self, change: impl FnOnce(&mut SimMetax)) -> Sim {
        change(&mut self.host);
        self
    }

    /// The host a simulation runs on: the simulated host of a machine with this state
    /// directory and procfs (a simulated backend never runs on the machine's own).
    fn machine(&self) -> Host {
        gpu_host_probe::test_util::isolated_host(self.dir.path().join("state"))
            .with_proc_root(self.dir.path().join("proc"))
            .simulated()
    }

    /// Records a reset of node 0 in flight since `started_unix_ms`, under `boot_id`.
    fn journal_in_flight(&mut self, started_unix_ms: u64, boot_id: &str) {
        let host = self.machine();
        interrupted_reset(
            &host,
            &mut self.host,
            &warm_reset::ResetTarget::index(0),
            started_unix_ms,
            Duration::from_secs(90),
            Some(boot_id),
        )
        .unwrap();
    }

    fn run(&mut self) -> ResetReport {
        let host = self.machine();
        execute(ResetRun::new(&self.config, &host, &mut self.host).clock(&self.clock)).unwrap()
    }

    /// Runs the reset: the reason's token it ends with, and how many resets the host saw.
    fn token_and_resets(&mut self) -> (String, usize) {
        let report = self.run();
        (token(&report), self.host.host().resets.len())
    }
}

fn blocked(change: impl FnOnce(&mut SimMetax)) -> (String, usize) {
    let mut sim = Sim::new().with(change);
    let report = sim.run();
    assert!(
        matches!(report.outcome, ResetOutcome::Blocked(_)),
        "{report:?}"
    );
    (token(&report), sim.host.host().resets.len())
}

/// The reason's token, as `--json` writes it.
fn token(report: &ResetReport) -> String {
    report.outcome.reason_str().to_owned()
}

fn cold(fault: MetaxFault) -> String {
    let mut sim = Sim::new().with(|h| h.host_mut().fault = Some(fault));
    let report = sim.run();
    assert!(
        matches!(report.outcome, ResetOutcome::ColdRebootRequired(_)),
        "{report:?}"
    );
    assert_eq!(sim.host.host().resets.len(), 1);
    token(&report)
}

#[test]
fn a_healthy_reset_is_done_and_names_the_gpu_and_its_group() {
    let mut sim = Sim::new();
    let report = sim.run();
    assert_eq!(report.outcome, ResetOutcome::Done);
    assert_eq!(report.gpus, ["0000:07:00.0".parse().unwrap()]);
    assert_eq!(report.group, Some(vec![0, 1]));
    assert_eq!(report.verified.len(), 4);
    assert_eq!(sim.host.host().resets, ["1"]);
}

#[test]
fn a_fast_reset_of_two_seconds_finishes_in_about_two_seconds_not_ninety() {
    let mut sim = Sim::new();
    let report = sim.run();
    assert!(
        report.elapsed >= Duration::from_secs(2),
        "{:?}",
        report.elapsed
    );
    assert!(
        report.elapsed < Duration::from_secs(3),
        "{:?}",
        report.elapsed
    );
}

#[test]
fn the_journal_is_closed_after_a_reset() {
    let mut sim = Sim::new();
    sim.run();
    assert_eq!(read_journal(&sim.machine()).unwrap().in_flight, None);
}

#[test]
fn the_journal_keeps_how_the_last_run_ended_and_when() {
    let mut sim = Sim::new().with(|host| host.host_mut().fault = Some(MetaxFault::Error));
    sim.run();
    let last = read_journal(&sim.machine()).unwrap().last.unwrap();
    assert_eq!(
        (last.outcome.to_string(), last.target.as_str()),
        ("cold_reboot_required (reset_error)".to_owned(), "1")
    );
    assert_eq!(
        last.ended_unix_ms,
        gpu_host_probe::Clock::unix_ms(&sim.clock)
    );
}

#[test]
fn a_dry_run_and_a_blocked_run_record_no_last_reset() {
    let mut sim = Sim::new();
    sim.config.dry_run = true;
    sim.run();
    sim.config.dry_run = false;
    sim.host.host_mut().processes = vec![GpuProcess::new(0, 4242, "python3", 100)];
    assert_eq!(token(&sim.run()), "gpu_busy");
    assert_eq!(read_journal(&sim.machine()).unwrap().last, None);
}

#[test]
fn a_dry_run_resolves_the_target_and_resets_nothing() {
    let mut sim = Sim::new();
    sim.config.dry_run = true;
    let report = sim.run();
    assert_eq!(report.outcome, ResetOutcome::DryRun);
    assert_eq!(report.group, Some(vec![0, 1]));
    assert!(sim.host.host().resets.is_empty());
}

/// A preflight case: its name, what it changes on the host, and the reason's token it blocks with.
type PreflightCase = (&'static str, fn(&mut SimMetax), &'static str);

/// Every preflight refusal of the simulated host, one named case a refusal: what the host is
/// changed to, and the reason's token it must be blocked with, no reset issued.
#[test]
fn a_host_that_fails_a_preflight_check_is_blocked_and_nothing_is_reset() {
    let cases: [PreflightCase; 7] = [
        (
            "not_root_is_blocked_and_nothing_is_reset",
            |h| h.host_mut().root = false,
            "not_root",
        ),
        (
            "an_absent_mx_smi_is_blocked_and_nothing_is_reset",
            |h| h.host_mut().mx_smi = false,
            "mx_smi_unavailable",
        ),
        (
            "a_driver_not_loaded_is_blocked_and_nothing_is_reset",
            |h| h.host_mut().driver_use = None,
            "driver_not_loaded",
        ),
        (
            "a_driver_in_use_is_blocked_and_nothing_is_reset",
            |h| h.host_mut().driver_use = Some(1),
            "driver_in_use",
        ),
        (
            "an_old_kernel_driver_is_blocked_and_nothing_is_reset",
            |h| h.host_mut().versions.kernel_driver = Some("2.4.0".into()),
            "driver_too_old",
        ),
        (
            "a_busy_gpu_is_blocked_and_nothing_is_reset",
            |h| h.host_mut().processes = vec![GpuProcess::new(1, 7, "python3 my trainer.py", 512)],
            "gpu_busy",
        ),
        (
            "an_unreadable_kernel_log_is_blocked_in_the_preflight_and_nothing_is_reset",
            |h| h.host_mut().kernel_log.readable = false,
            "kernel_log_unreadable",
        ),
    ];
    for (case, change, reason) in cases {
        assert_eq!(blocked(change), (reason.into(), 0), "case {case}");
    }
}

#[test]
fn a_dry_run_with_an_unreadable_kernel_log_is_blocked_too() {
    let mut sim = Sim::new().with(|h| h.host_mut().kernel_log.readable = false);
    sim.config.dry_run = true;
    assert_eq!(token(&sim.run()), "kernel_log_unreadable");
}

#[test]
fn an_unknown_device_is_blocked_and_nothing_is_reset() {
    let mut sim = Sim::new();
    sim.config = MachineConfig::new("GPU-nope".parse().unwrap());
    assert_eq!(sim.token_and_resets(), ("unknown_device".into(), 0));
}

#[test]
fn a_held_host_lock_is_blocked_and_nothing_is_reset() {
    let mut sim = Sim::new();
    let _held = sim.machine().try_lock().unwrap();
    assert_eq!(sim.token_and_resets(), ("lock_busy".into(), 0));
}

#[test]
fn a_reset_in_flight_is_blocked_and_nothing_is_reset() {
    let mut sim = Sim::new();
    sim.journal_in_flight(gpu_host_probe::Clock::unix_ms(&sim.clock), "boot-1");
    assert_eq!(sim.token_and_resets(), ("reset_in_flight".into(), 0));
}

#[test]
fn a_reset_in_flight_from_before_a_reboot_is_closed_and_the_reset_goes_ahead() {
    let mut sim = Sim::new();
    sim.journal_in_flight(gpu_host_probe::Clock::unix_ms(&sim.clock), "boot-0");
    assert_eq!(sim.run().outcome, ResetOutcome::Done);
    assert_eq!(sim.host.host().resets.len(), 1);
}

#[test]
fn a_reset_in_flight_past_its_window_is_verified_not_repeated() {
    let mut sim = Sim::new();
    let long_ago = gpu_host_probe::Clock::unix_ms(&sim.clock) - 200_000;
    sim.journal_in_flight(long_ago, "boot-1");
    let report = sim.run();
    assert_eq!(
        (report.outcome, sim.host.host().resets.len()),
        (ResetOutcome::Done, 0)
    );
}

#[test]
fn a_hung_reset_needs_a_cold_reboot_at_the_windows_end() {
    let mut sim = Sim::new().with(|h| h.host_mut().fault = Some(MetaxFault::Hang));
    let report = sim.run();
    assert_eq!(token(&report), "reset_hung");
    assert!(report.elapsed >= Duration::from_secs(90) && report.elapsed < Duration::from_secs(91));
}

/// Every fault of a reset that ends in a cold reboot, one named case a fault: the fault, and the
/// reason's token it must end with, after one reset.
#[test]
fn a_reset_that_fails_needs_a_cold_reboot_with_the_reason_of_its_fault() {
    let cases = [
        (
            "a_reset_error_needs_a_cold_reboot",
            MetaxFault::Error,
            "reset_error",
        ),
        (
            "a_reset_that_exits_0_but_says_it_failed_needs_a_cold_reboot",
            MetaxFault::SaysFailed,
            "reset_error",
        ),
        (
            "a_gpu_missing_after_the_reset_needs_a_cold_reboot",
            MetaxFault::GpuMissing(1),
            "gpu_missing",
        ),
        (
            "a_gpu_unavailable_after_the_reset_needs_a_cold_reboot",
            MetaxFault::GpuUnavailable(0),
            "gpu_unavailable",
        ),
        (
            "kernel_errors_during_the_reset_need_a_cold_reboot",
            MetaxFault::KernelErrors,
            "kernel_errors",
        ),
        (
            "a_changed_topology_needs_a_cold_reboot",
            MetaxFault::TopologyWrong,
            "topology_wrong",
        ),
    ];
    for (case, fault, reason) in cases {
        assert_eq!(cold(fault), reason, "case {case}");
    }
}

#[test]
fn a_metaxlink_that_does_not_come_back_needs_a_cold_reboot() {
    let mut sim = Sim::new().with(|h| h.host_mut().fault = Some(MetaxFault::LinkLost(0, 1)));
    let report = sim.run();
    assert_eq!(token(&report), "topology_wrong");
    assert!(report.detail.contains("GPU#0-GPU#1"), "{}", report.detail);
}

#[test]
fn a_reset_longer_than_the_window_hangs() {
    let mut sim = Sim::new().with(|h| h.host_mut().reset_duration = Duration::from_secs(120));
    assert_eq!(token(&sim.run()), "reset_hung");
}

#[test]
fn gpus_slow_to_come_back_are_waited_for_within_the_window() {
    let mut sim = Sim::new().with(|h| {
        h.host_mut().reset_duration = Duration::from_secs(30);
        h.host_mut().recovery = Duration::from_secs(30);
    });
    let report = sim.run();
    assert_eq!(report.outcome, ResetOutcome::Done);
    // Back at 60 s; seen by the next poll, at most one poll interval (1 s) later.
    assert!(
        report.elapsed >= Duration::from_secs(60) && report.elapsed <= Duration::from_secs(61),
        "{:?}",
        report.elapsed
    );
}
