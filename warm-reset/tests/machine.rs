//! The transition function over every (state, event) pair: one named case per rule, and a
//! table showing that every other pair is refused as an invalid transition that keeps the
//! state.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;
use warm_reset::metax::DriverUse;
use warm_reset::metax::mx_smi::{GpuProcess, GpuRow, GpuState, Topology, VersionCheck, Versions};
use warm_reset::{
    Action, BackendError, BlockedReason, ColdRebootReason, Event, JournalView, MachineConfig,
    State, Target, step,
};

const NOW: Duration = Duration::from_secs(100);

fn row(node: u32, state: GpuState) -> GpuRow {
    GpuRow::new(
        node,
        "MXC500",
        format!("0000:0{}:00.0", node + 6).parse().unwrap(),
        state,
        Some(&format!("GPU-{node}")),
    )
}

fn listing() -> Vec<GpuRow> {
    vec![row(0, GpuState::Available), row(1, GpuState::Available)]
}

fn target() -> Target {
    Target::resolve("0", &listing()).unwrap()
}

fn versions(mx_smi: &str, kernel_driver: &str, bios: Option<&str>) -> Versions {
    let mut versions = Versions::default();
    versions.mx_smi = Some(mx_smi.into());
    versions.kernel_driver = Some(kernel_driver.into());
    versions.bios = bios.map(str::to_owned);
    versions
}

/// GPU#0 and GPU#1 joined by MetaXLink.
fn linked() -> Topology {
    Topology::new(vec![0, 1], [(0, 1)])
}

fn linked_target() -> Target {
    let mut target = target();
    target.topology = Some(linked());
    target
}

fn config() -> MachineConfig {
    MachineConfig::new("0")
}

fn go(state: State, event: Event) -> (State, Vec<Action>) {
    step(&config(), state, event, NOW).unwrap_or_else(|invalid| panic!("{invalid}"))
}

/// What a host says when it does not answer.
fn why(text: &str) -> BackendError {
    BackendError::Simulated(text.into())
}

fn blocked_with(state: State, event: Event) -> BlockedReason {
    match go(state, event) {
        (State::Blocked { reason, .. }, actions) => {
            assert!(actions.is_empty(), "a blocked run asks for nothing");
            reason
        }
        other => panic!("not blocked: {other:?}"),
    }
}

fn cold_with(state: State, event: Event) -> ColdRebootReason {
    match go(state, event) {
        (State::ColdRebootRequired { reason, .. }, actions) => {
            assert_eq!(actions, [Action::CloseJournal]);
            reason
        }
        other => panic!("not cold: {other:?}"),
    }
}

fn resetting() -> State {
    State::Resetting {
        target: target(),
        deadline: NOW + Duration::from_secs(60),
    }
}

fn verifying(deadline: Duration) -> State {
    State::Verifying {
        target: target(),
        deadline,
    }
}

#[test]
fn start_takes_the_host_lock() {
    assert_eq!(
        go(State::Planned, Event::Start),
        (State::Locking, vec![Action::TakeLock])
    );
}

#[test]
fn a_taken_lock_leads_to_the_journal() {
    assert_eq!(
        go(State::Locking, Event::Lock(true)),
        (State::ReadingJournal, vec![Action::ReadJournal])
    );
}

#[test]
fn a_held_lock_blocks_with_lock_busy() {
    assert_eq!(
        blocked_with(State::Locking, Event::Lock(false)),
        BlockedReason::LockBusy
    );
}

#[test]
fn a_clear_journal_starts_the_preflight_with_root() {
    assert_eq!(
        go(State::ReadingJournal, Event::Journal(JournalView::Clear)),
        (State::CheckingRoot, vec![Action::CheckRoot])
    );
}

#[test]
fn a_reset_in_flight_inside_its_window_blocks_with_reset_in_flight() {
    let event = Event::Journal(JournalView::InFlight {
        target: target(),
        window_spent: false,
    });
    assert_eq!(
        blocked_with(State::ReadingJournal, event),
        BlockedReason::ResetInFlight
    );
}

#[test]
fn a_reset_in_flight_past_its_window_is_verified_without_a_second_reset() {
    let event = Event::Journal(JournalView::InFlight {
        target: target(),
        window_spent: true,
    });
    let (state, actions) = go(State::ReadingJournal, event);
    assert_eq!(
        state,
        State::Verifying {
            target: target(),
            deadline: NOW
        }
    );
    assert_eq!(actions.last(), Some(&Action::ListGpus));
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, Action::IssueReset { .. }))
    );
}

#[test]
fn root_leads_to_finding_mx_smi() {
    assert_eq!(
        go(State::CheckingRoot, Event::Root(true)),
        (State::CheckingMxSmi, vec![Action::FindMxSmi])
    );
}

#[test]
fn not_root_blocks_with_not_root() {
    assert_eq!(
        blocked_with(State::CheckingRoot, Event::Root(false)),
        BlockedReason::NotRoot
    );
}

#[test]
fn mx_smi_found_leads_to_the_driver() {
    assert_eq!(
        go(State::CheckingMxSmi, Event::MxSmi(Ok(()))),
        (State::CheckingDriver, vec![Action::ReadDriver])
    );
}

#[test]
fn mx_smi_missing_blocks_with_mx_smi_unavailable() {
    assert_eq!(
        blocked_with(State::CheckingMxSmi, Event::MxSmi(Err(why("x")))),
        BlockedReason::MxSmiUnavailable
    );
}

#[test]
fn an_unused_driver_leads_to_the_versions() {
    assert_eq!(
        go(State::CheckingDriver, Event::Driver(DriverUse::Loaded(0))),
        (State::CheckingVersions, vec![Action::ReadVersions])
    );
}

#[test]
fn no_metax_line_blocks_with_driver_not_loaded() {
    assert_eq!(
        blocked_with(State::CheckingDriver, Event::Driver(DriverUse::NotLoaded)),
        BlockedReason::DriverNotLoaded
    );
}

#[test]
fn a_used_driver_blocks_with_driver_in_use() {
    assert_eq!(
        blocked_with(State::CheckingDriver, Event::Driver(DriverUse::Loaded(3))),
        BlockedReason::DriverInUse
    );
}

#[test]
fn an_unreadable_use_count_blocks_with_driver_in_use() {
    assert_eq!(
        blocked_with(
            State::CheckingDriver,
            Event::Driver(DriverUse::Unreadable("?".into()))
        ),
        BlockedReason::DriverInUse
    );
}

#[test]
fn recent_versions_lead_to_the_processes() {
    let (state, actions) = go(
        State::CheckingVersions,
        Event::Versions(Ok(VersionCheck::default())),
    );
    assert_eq!(
        (state, actions),
        (State::CheckingProcesses, vec![Action::ListProcesses])
    );
}

#[test]
fn an_unreadable_version_is_a_warning_and_the_preflight_goes_on() {
    let check = warm_reset::metax::mx_smi::check_versions(&versions("2.2.1", "3.8.30", None));
    let (state, actions) = go(State::CheckingVersions, Event::Versions(Ok(check)));
    assert_eq!(state, State::CheckingProcesses);
    assert!(matches!(actions.first(), Some(Action::Warn(_))));
    assert_eq!(actions.last(), Some(&Action::ListProcesses));
}

#[test]
fn an_old_version_blocks_with_driver_too_old() {
    let check =
        warm_reset::metax::mx_smi::check_versions(&versions("2.0.0", "3.8.30", Some("1.33.5.0")));
    assert_eq!(
        blocked_with(State::CheckingVersions, Event::Versions(Ok(check))),
        BlockedReason::DriverTooOld
    );
}

#[test]
fn a_version_query_that_fails_blocks_with_mx_smi_unavailable() {
    assert_eq!(
        blocked_with(
            State::CheckingVersions,
            Event::Versions(Err(why("not MetaX")))
        ),
        BlockedReason::MxSmiUnavailable
    );
}

#[test]
fn no_process_leads_to_the_target() {
    assert_eq!(
        go(State::CheckingProcesses, Event::Processes(Ok(vec![]))),
        (State::ResolvingTarget, vec![Action::ListGpus])
    );
}

#[test]
fn a_process_blocks_with_gpu_busy_and_names_its_pid_and_name() {
    let busy = GpuProcess::new(0, 4242, "python3 train.py", 1024);
    match go(State::CheckingProcesses, Event::Processes(Ok(vec![busy]))) {
        (
            State::Blocked {
                reason: BlockedReason::GpuBusy,
                detail,
            },
            _,
        ) => assert!(detail.contains("4242 python3 train.py"), "{detail}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_process_listing_that_fails_blocks_with_mx_smi_unavailable() {
    assert_eq!(
        blocked_with(State::CheckingProcesses, Event::Processes(Err(why("x")))),
        BlockedReason::MxSmiUnavailable
    );
}

#[test]
fn a_resolved_target_reads_the_topology() {
    assert_eq!(
        go(State::ResolvingTarget, Event::Listing(Ok(listing()))),
        (
            State::ReadingTopology { target: target() },
            vec![Action::ReadTopology]
        )
    );
}

#[test]
fn the_topology_is_kept_with_the_target_and_the_kernel_log_is_marked() {
    assert_eq!(
        go(
            State::ReadingTopology { target: target() },
            Event::Topology(Ok(linked()))
        ),
        (
            State::CheckingKernelLog {
                target: linked_target()
            },
            vec![Action::MarkKernelLog]
        )
    );
    assert_eq!(linked_target().group(), Some(vec![0, 1]));
}

#[test]
fn a_topology_that_does_not_read_is_a_warning_and_the_groups_stay_unknown() {
    let (state, actions) = go(
        State::ReadingTopology { target: target() },
        Event::Topology(Err(why("line 3: …"))),
    );
    assert_eq!(state, State::CheckingKernelLog { target: target() });
    assert!(matches!(
        actions.as_slice(),
        [Action::Warn(_), Action::MarkKernelLog]
    ));
    assert_eq!(target().group(), None);
}

#[test]
fn a_kernel_log_that_cannot_be_read_blocks_before_anything_is_changed() {
    assert_eq!(
        blocked_with(
            State::CheckingKernelLog { target: target() },
            Event::KernelLog(Err(why("/dev/kmsg: EACCES")))
        ),
        BlockedReason::KernelLogUnreadable
    );
}

#[test]
fn a_readable_kernel_log_journals_and_issues_one_reset_with_the_window() {
    let (state, actions) = go(
        State::CheckingKernelLog { target: target() },
        Event::KernelLog(Ok(())),
    );
    let deadline = NOW + Duration::from_secs(90);
    assert_eq!(
        state,
        State::Resetting {
            target: target(),
            deadline
        }
    );
    assert_eq!(
        actions,
        [
            Action::WriteJournal { target: target() },
            Action::IssueReset {
                mx_smi_id: "0".into(),
                deadline
            },
        ]
    );
}

#[test]
fn a_dry_run_ends_after_the_preflight_and_issues_nothing() {
    let mut config = config();
    config.dry_run = true;
    let (state, actions) = step(
        &config,
        State::CheckingKernelLog { target: target() },
        Event::KernelLog(Ok(())),
        NOW,
    )
    .unwrap();
    assert_eq!(
        (state, actions),
        (State::DryRun { target: target() }, vec![])
    );
}

#[test]
fn an_id_that_names_no_gpu_blocks_with_unknown_device() {
    let config = MachineConfig::new("9");
    match step(
        &config,
        State::ResolvingTarget,
        Event::Listing(Ok(listing())),
        NOW,
    ) {
        Ok((State::Blocked { reason, .. }, _)) => {
            assert_eq!(reason, BlockedReason::UnknownDevice)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_listing_that_fails_before_the_reset_blocks_with_mx_smi_unavailable() {
    assert_eq!(
        blocked_with(State::ResolvingTarget, Event::Listing(Err(why("x")))),
        BlockedReason::MxSmiUnavailable
    );
}

#[test]
fn a_finished_reset_is_verified_within_the_same_window() {
    let (state, actions) = go(resetting(), Event::ResetExited(Ok(())));
    assert_eq!(
        (state, actions),
        (
            verifying(NOW + Duration::from_secs(60)),
            vec![Action::ListGpus]
        )
    );
}

#[test]
fn a_reset_that_reports_an_error_needs_a_cold_reboot() {
    assert_eq!(
        cold_with(resetting(), Event::ResetExited(Err(why("x")))),
        ColdRebootReason::ResetError
    );
}

#[test]
fn a_reset_that_hangs_past_the_window_needs_a_cold_reboot() {
    assert_eq!(
        cold_with(resetting(), Event::ResetHung),
        ColdRebootReason::ResetHung
    );
}

#[test]
fn every_gpu_back_in_its_place_leads_to_the_kernel_log() {
    let (state, actions) = go(
        verifying(NOW + Duration::from_secs(60)),
        Event::Listing(Ok(listing())),
    );
    assert_eq!(
        (state, actions),
        (
            State::CheckingKernel { target: target() },
            vec![Action::ReadKernelErrors]
        )
    );
}

#[test]
fn a_gpu_not_back_with_time_left_waits_a_poll_and_lists_again() {
    let rows = vec![
        row(0, GpuState::NotAvailable("resetting".into())),
        row(1, GpuState::Available),
    ];
    let state = verifying(NOW + Duration::from_secs(60));
    let (next, actions) = go(state.clone(), Event::Listing(Ok(rows)));
    assert_eq!(
        (next.clone(), actions),
        (state, vec![Action::Wait(Duration::from_secs(1))])
    );
    assert_eq!(go(next, Event::Tick).1, [Action::ListGpus]);
}

#[test]
fn a_failed_listing_with_time_left_waits_and_lists_again() {
    let (_, actions) = go(
        verifying(NOW + Duration::from_secs(60)),
        Event::Listing(Err(why("busy"))),
    );
    assert_eq!(actions, [Action::Wait(Duration::from_secs(1))]);
}

#[test]
fn a_gpu_absent_when_the_window_ends_is_gpu_missing() {
    assert_eq!(
        cold_with(
            verifying(NOW),
            Event::Listing(Ok(vec![row(0, GpuState::Available)]))
        ),
        ColdRebootReason::GpuMissing
    );
}

#[test]
fn a_failed_listing_when_the_window_ends_is_gpu_missing() {
    assert_eq!(
        cold_with(verifying(NOW), Event::Listing(Err(why("x")))),
        ColdRebootReason::GpuMissing
    );
}

#[test]
fn a_gpu_present_but_not_available_when_the_window_ends_is_gpu_unavailable() {
    let rows = vec![
        row(0, GpuState::Available),
        row(1, GpuState::NotAvailable(String::new())),
    ];
    assert_eq!(
        cold_with(verifying(NOW), Event::Listing(Ok(rows))),
        ColdRebootReason::GpuUnavailable
    );
}

#[test]
fn a_gpu_back_at_another_pci_address_is_topology_wrong() {
    let mut rows = listing();
    rows[1].bdf = "0000:0f:00.0".parse().unwrap();
    assert_eq!(
        cold_with(
            verifying(NOW + Duration::from_secs(60)),
            Event::Listing(Ok(rows))
        ),
        ColdRebootReason::TopologyWrong
    );
}

#[test]
fn a_gpu_back_with_another_uuid_is_topology_wrong() {
    let mut rows = listing();
    rows[0].uuid = Some("GPU-other".into());
    assert_eq!(
        cold_with(
            verifying(NOW + Duration::from_secs(60)),
            Event::Listing(Ok(rows))
        ),
        ColdRebootReason::TopologyWrong
    );
}

#[test]
fn every_gpu_back_with_links_known_before_reads_the_topology_again() {
    let state = State::Verifying {
        target: linked_target(),
        deadline: NOW + Duration::from_secs(60),
    };
    assert_eq!(
        go(state, Event::Listing(Ok(listing()))),
        (
            State::CheckingTopology {
                target: linked_target()
            },
            vec![Action::ReadTopology]
        )
    );
}

#[test]
fn every_metaxlink_back_leads_to_the_kernel_log() {
    assert_eq!(
        go(
            State::CheckingTopology {
                target: linked_target()
            },
            Event::Topology(Ok(linked()))
        ),
        (
            State::CheckingKernel {
                target: linked_target()
            },
            vec![Action::ReadKernelErrors]
        )
    );
}

#[test]
fn a_metaxlink_that_was_there_before_and_is_not_after_is_topology_wrong() {
    let after = Topology::new(vec![0, 1], []);
    assert_eq!(
        cold_with(
            State::CheckingTopology {
                target: linked_target()
            },
            Event::Topology(Ok(after))
        ),
        ColdRebootReason::TopologyWrong
    );
}

#[test]
fn a_topology_that_does_not_read_after_the_reset_is_a_warning() {
    let (state, actions) = go(
        State::CheckingTopology {
            target: linked_target(),
        },
        Event::Topology(Err(why("x"))),
    );
    assert_eq!(
        state,
        State::CheckingKernel {
            target: linked_target()
        }
    );
    assert!(matches!(
        actions.as_slice(),
        [Action::Warn(_), Action::ReadKernelErrors]
    ));
}

#[test]
fn a_clean_kernel_log_is_done_and_closes_the_journal() {
    let (state, actions) = go(
        State::CheckingKernel { target: target() },
        Event::KernelErrors(Ok(vec![])),
    );
    assert_eq!(
        (state, actions),
        (State::Done { target: target() }, vec![Action::CloseJournal])
    );
}

#[test]
fn kernel_errors_after_the_reset_need_a_cold_reboot() {
    let event = Event::KernelErrors(Ok(vec!["link down".into()]));
    assert_eq!(
        cold_with(State::CheckingKernel { target: target() }, event),
        ColdRebootReason::KernelErrors
    );
}

#[test]
fn a_kernel_log_that_cannot_be_read_is_a_warning_and_done() {
    let (state, actions) = go(
        State::CheckingKernel { target: target() },
        Event::KernelErrors(Err(why("EACCES"))),
    );
    assert_eq!(state, State::Done { target: target() });
    assert!(matches!(
        actions.as_slice(),
        [Action::Warn(_), Action::CloseJournal]
    ));
}

fn all_states() -> Vec<State> {
    vec![
        State::Planned,
        State::Locking,
        State::ReadingJournal,
        State::CheckingRoot,
        State::CheckingMxSmi,
        State::CheckingDriver,
        State::CheckingVersions,
        State::CheckingProcesses,
        State::ResolvingTarget,
        State::ReadingTopology { target: target() },
        State::CheckingKernelLog { target: target() },
        resetting(),
        verifying(NOW + Duration::from_secs(60)),
        State::CheckingTopology {
            target: linked_target(),
        },
        State::CheckingKernel { target: target() },
        State::Done { target: target() },
        State::DryRun { target: target() },
        State::Blocked {
            reason: BlockedReason::GpuBusy,
            detail: String::new(),
        },
        State::ColdRebootRequired {
            reason: ColdRebootReason::ResetHung,
            detail: String::new(),
            target: target(),
        },
    ]
}

fn all_events() -> Vec<Event> {
    vec![
        Event::Start,
        Event::Lock(true),
        Event::Journal(JournalView::Clear),
        Event::Root(true),
        Event::MxSmi(Ok(())),
        Event::Driver(DriverUse::Loaded(0)),
        Event::Versions(Ok(VersionCheck::default())),
        Event::Processes(Ok(vec![])),
        Event::Listing(Ok(listing())),
        Event::ResetExited(Ok(())),
        Event::ResetHung,
        Event::Tick,
        Event::KernelErrors(Ok(vec![])),
        Event::Topology(Ok(linked())),
        Event::KernelLog(Ok(())),
    ]
}

/// The event kinds each state answers to (the rules above); index into `all_events`.
fn answers(state: &State) -> &'static [usize] {
    match state {
        State::Planned => &[0],
        State::Locking => &[1],
        State::ReadingJournal => &[2],
        State::CheckingRoot => &[3],
        State::CheckingMxSmi => &[4],
        State::CheckingDriver => &[5],
        State::CheckingVersions => &[6],
        State::CheckingProcesses => &[7],
        State::ResolvingTarget => &[8],
        State::ReadingTopology { .. } => &[13],
        State::CheckingKernelLog { .. } => &[14],
        State::Resetting { .. } => &[9, 10],
        State::Verifying { .. } => &[8, 11],
        State::CheckingTopology { .. } => &[13],
        State::CheckingKernel { .. } => &[12],
        _ => &[],
    }
}

#[test]
fn every_other_state_and_event_pair_is_an_invalid_transition_that_keeps_the_state() {
    let mut pairs = 0;
    for state in all_states() {
        for (index, event) in all_events().into_iter().enumerate() {
            let result = step(&config(), state.clone(), event.clone(), NOW);
            if answers(&state).contains(&index) {
                let (next, actions) = result.unwrap_or_else(|invalid| panic!("{invalid}"));
                assert!(
                    next != state || !actions.is_empty(),
                    "{state:?} ignores {event:?}"
                );
            } else {
                let invalid = result.expect_err("an invalid pair is refused");
                assert_eq!(
                    (&invalid.from, &invalid.event),
                    (&state, &event),
                    "{state:?} + {event:?}"
                );
                pairs += 1;
            }
        }
    }
    assert_eq!(pairs, 19 * 15 - 17);
}

#[test]
fn an_invalid_transition_names_the_event_and_the_state() {
    let invalid = step(&config(), State::Planned, Event::Tick, NOW).unwrap_err();
    assert_eq!(
        invalid.to_string(),
        "the event `tick` does not belong to the state `planned`"
    );
}

#[test]
fn ended_states_refuse_every_event_and_stay_ended() {
    for state in all_states().into_iter().filter(State::is_end) {
        for event in all_events() {
            let invalid = step(&config(), state.clone(), event, NOW).unwrap_err();
            assert_eq!(invalid.from, state);
        }
    }
}
