//! A plan step as an embedder runs it: it holds the host lock from its first action to its
//! record, never overwrites another run's journal record, and never runs again on a guess.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::{SystemClock, VirtualClock};
use std::sync::Arc;
use std::time::{Duration, Instant};
use warm_reset::sim::SimMetax;
use warm_reset::{
    BlockedReason, Group, Host, LinkCommands, MachineConfig, Method, PlanStepError, ResetOutcome,
    ResetRun, ResetWith, Strategy, execute, plan, read_journal, run_plan_step,
};

/// One host, `h1`: phase 0 is its preflight, 1 its reset, 2 its verify.
fn one_host_plan() -> warm_reset::Plan {
    let group: Group =
        serde_json::from_str(r#"{"hosts": [{"name": "h1", "nodes": [0, 1]}]}"#).unwrap();
    plan(
        &group,
        "h1",
        Strategy::AllHosts,
        &LinkCommands::default(),
        "p",
    )
    .unwrap()
}

/// Runs `h1`'s step of `phase` on a simulated host; answers it with the resets it issued.
fn run(
    host: &Host,
    plan: &warm_reset::Plan,
    phase: usize,
) -> (
    Result<warm_reset::PlanStepReport, PlanStepError>,
    Vec<String>,
) {
    let clock = VirtualClock::new(1_700_000_000_000);
    let mut sim = SimMetax::new(Arc::new(clock.clone()), &[2]);
    let mut with = ResetWith::new(Method::Metax, &mut sim)
        .window(Duration::from_secs(90))
        .clock(&clock);
    let report = run_plan_step(plan, "h1", phase, host, &mut with);
    let resets = sim.host().resets.clone();
    (report, resets)
}

fn step(
    host: &Host,
    plan: &warm_reset::Plan,
    phase: usize,
) -> Result<warm_reset::PlanStepReport, PlanStepError> {
    run(host, plan, phase).0
}

#[test]
fn a_step_while_another_reset_is_in_flight_is_blocked_and_leaves_that_resets_record_intact() {
    let dir = tempfile::tempdir().unwrap();
    let host = gpu_host_probe::test_util::isolated_host(dir.path()).simulated();
    let plan = one_host_plan();
    // Another reset of this host, in its window for a second (real clock, real lock).
    let other = {
        let host = host.clone();
        std::thread::spawn(move || {
            let clock = Arc::new(SystemClock::new());
            let mut sim = SimMetax::new(clock.clone(), &[2]);
            sim.host_mut().reset_duration = Duration::from_secs(1);
            let config = MachineConfig::new("0".parse().unwrap());
            execute(ResetRun::new(&config, &host, &mut sim).clock(clock.as_ref())).unwrap()
        })
    };
    let give_up = Instant::now() + Duration::from_secs(5);
    let in_flight = loop {
        if let Some(record) = read_journal(&host).unwrap().in_flight {
            break record;
        }
        assert!(Instant::now() < give_up, "the other reset never started");
        std::thread::sleep(Duration::from_millis(5));
    };
    let blocked = step(&host, &plan, 2).unwrap();
    assert_eq!(
        blocked.outcome,
        ResetOutcome::Blocked(BlockedReason::LockBusy)
    );
    let during = read_journal(&host).unwrap();
    assert_eq!(
        during.in_flight,
        Some(in_flight),
        "the reset in flight is still recorded"
    );
    assert!(during.steps.is_empty(), "a blocked step records nothing");
    assert_eq!(other.join().unwrap().outcome, ResetOutcome::Done);
    let last = read_journal(&host).unwrap().last;
    // Once the other reset is over, the step runs, and its record keeps the other's end.
    let done = step(&host, &plan, 2).unwrap();
    assert_eq!(done.outcome, ResetOutcome::Done);
    let after = read_journal(&host).unwrap();
    assert_eq!(after.last, last);
    assert_eq!(after.in_flight, None);
    assert_eq!(after.steps.len(), 1);
}

#[test]
fn a_step_record_that_does_not_read_is_an_error_naming_it_and_the_step_is_not_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let host = gpu_host_probe::test_util::isolated_host(dir.path()).simulated();
    let plan = one_host_plan();
    let first = step(&host, &plan, 1).unwrap();
    assert_eq!(first.outcome, ResetOutcome::Done);
    // A hand edit breaks the step's report (the journal itself still reads).
    let path = host.state_dir().join(warm_reset::JOURNAL_FILE);
    let mut journal: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    journal["steps"]["p/phase-1/h1"]["report"]["actions"] = "lost".into();
    std::fs::write(&path, serde_json::to_vec(&journal).unwrap()).unwrap();

    let (again, resets) = run(&host, &plan, 1);
    let error = again.unwrap_err();
    assert!(
        matches!(&error, PlanStepError::UnreadableRecord { key, .. } if key == "p/phase-1/h1"),
        "{error}"
    );
    assert!(
        gpu_host_probe::chain::Chain(&error)
            .to_string()
            .starts_with("the journal's record of step p/phase-1/h1 does not read"),
        "{error}"
    );
    assert!(resets.is_empty(), "the step ran again: {resets:?}");
}

#[test]
fn a_step_that_ran_reports_its_first_result_and_resets_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let host = gpu_host_probe::test_util::isolated_host(dir.path()).simulated();
    let plan = one_host_plan();
    assert_eq!(step(&host, &plan, 1).unwrap().outcome, ResetOutcome::Done);
    let (again, resets) = run(&host, &plan, 1);
    assert!(again.unwrap().repeated);
    assert!(resets.is_empty());
}

#[test]
fn a_simulated_step_given_the_machines_host_runs_on_the_simulated_host_alone() {
    let dir = tempfile::tempdir().unwrap();
    let machine = gpu_host_probe::test_util::isolated_host(dir.path());
    let plan = one_host_plan();
    let _held = machine.try_lock().unwrap();
    let report = step(&machine, &plan, 1).unwrap();
    assert_eq!(report.outcome, ResetOutcome::Done, "{report:?}");
    assert!(
        read_journal(&machine).unwrap().steps.is_empty(),
        "the machine's journal was written"
    );
    assert_eq!(
        read_journal(&machine.simulated()).unwrap().steps.len(),
        1,
        "the simulated host's journal records the step"
    );
}
