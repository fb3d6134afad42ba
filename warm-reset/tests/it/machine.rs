//! The transition function over every (state, event) pair: one named case per rule, and a
//! table showing that every other pair is refused as an invalid transition that keeps the
//! state. The machine knows no vendor: its targets here are MetaX ones only because some
//! target is needed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;
use warm_reset::ResetWarning;
use warm_reset::metax::MetaxTarget;
use warm_reset::metax::mx_smi::{GpuRow, GpuState};
use warm_reset::{
    Action, Back, BackendError, BlockedReason, ColdRebootReason, Event, JournalView, LockAnswer,
    MachineConfig, Method, NotBack, Refusal, ResetEnd, State, Target, TargetFacts, step,
};

const NOW: Duration = Duration::from_secs(100);

fn row(node: u32) -> GpuRow {
    GpuRow::new(
        node,
        "MXC500",
        format!("0000:0{}:00.0", node + 6).parse().unwrap(),
        GpuState::Available,
        Some(&format!("GPU-{node}")),
    )
}

fn target() -> Target {
    let metax = MetaxTarget::resolve(&"0".parse().unwrap(), &[row(0), row(1)]).unwrap();
    Target::new("0", TargetFacts::Metax(metax))
}

fn config() -> MachineConfig {
    MachineConfig::new("0".parse().unwrap())
}

fn go(state: State, event: Event) -> (State, Vec<Action>) {
    step(&config(), state, event, NOW).unwrap_or_else(|invalid| panic!("{invalid}"))
}

/// What a host says when it does not answer.
fn why(text: &str) -> BackendError {
    warm_reset::metax::MxSmiError::SaidFailed {
        command: "mx-smi".to_owned(),
        line: text.to_owned(),
    }
    .into()
}

fn refusal(reason: BlockedReason) -> Refusal {
    Refusal::new(reason, "found")
}

fn blocked_with(state: State, event: Event) -> BlockedReason {
    match go(state, event) {
        (State::Blocked { reason, .. }, actions) => {
            assert!(
                !actions
                    .iter()
                    .any(|a| matches!(a, Action::IssueReset { .. }))
            );
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
        other => panic!("not a cold reboot: {other:?}"),
    }
}

fn resetting() -> State {
    State::Resetting {
        target: target(),
        deadline: NOW + Duration::from_secs(90),
    }
}

fn verifying(deadline: Duration) -> State {
    State::Verifying {
        target: target(),
        deadline,
        interval: warm_reset::FIRST_POLL,
    }
}

fn not_yet(reason: ColdRebootReason) -> Event {
    Event::Back(Back::NotYet(NotBack::new(reason, "not yet")))
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
        go(State::Locking, Event::Lock(LockAnswer::Taken)),
        (State::ReadingJournal, vec![Action::ReadJournal])
    );
}

#[test]
fn a_held_lock_blocks_with_lock_busy() {
    assert_eq!(
        blocked_with(
            State::Locking,
            Event::Lock(LockAnswer::Held("pid 4242".to_owned()))
        ),
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
    assert_eq!(state, verifying(NOW));
    assert_eq!(
        actions.last(),
        Some(&Action::CheckBack { target: target() })
    );
    assert!(
        !actions
            .iter()
            .any(|a| matches!(a, Action::IssueReset { .. }))
    );
}

#[test]
fn a_reset_in_flight_of_another_method_is_left_to_that_method() {
    let event = Event::Journal(JournalView::InFlight {
        target: target(),
        window_spent: true,
    });
    let config = config().method(Method::Pci);
    match step(&config, State::ReadingJournal, event, NOW).unwrap() {
        (State::Blocked { reason, detail }, actions) => {
            assert_eq!(reason, BlockedReason::ResetInFlight);
            assert!(detail.contains("only the metax method"), "{detail}");
            assert!(actions.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn root_leads_to_the_hosts_own_checks() {
    assert_eq!(
        go(State::CheckingRoot, Event::Root(true)),
        (State::CheckingHost, vec![Action::CheckHost])
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
fn a_host_that_passes_its_checks_resolves_the_target_after_its_warnings() {
    assert_eq!(
        go(
            State::CheckingHost,
            Event::Host(Ok(vec![ResetWarning::VersionUnchecked("odd".into())]))
        ),
        (
            State::ResolvingTarget,
            vec![
                Action::Warn(ResetWarning::VersionUnchecked("odd".into())),
                Action::Resolve
            ]
        )
    );
}

#[test]
fn a_host_that_refuses_blocks_with_its_reason_and_detail() {
    let event = Event::Host(Err(Refusal::new(BlockedReason::DriverTooOld, "KMD 2.3")));
    assert_eq!(
        go(State::CheckingHost, event),
        (
            State::Blocked {
                reason: BlockedReason::DriverTooOld,
                detail: "KMD 2.3".into()
            },
            vec![]
        )
    );
}

#[test]
fn a_resolved_target_is_checked_for_a_pending_cold_reboot_after_its_warnings() {
    let (state, actions) = go(
        State::ResolvingTarget,
        Event::Resolved(Ok((target(), vec![ResetWarning::VerifyingEarlierReset]))),
    );
    assert_eq!(state, State::CheckingColdReboot { target: target() });
    assert_eq!(
        actions,
        [
            Action::Warn(ResetWarning::VerifyingEarlierReset),
            Action::ReadColdReboots { target: target() }
        ]
    );
}

#[test]
fn a_target_no_reset_of_this_boot_left_needing_a_cold_reboot_is_checked_for_use() {
    let (state, actions) = go(
        State::CheckingColdReboot { target: target() },
        Event::ColdReboots(Vec::new()),
    );
    assert_eq!(state, State::CheckingUse { target: target() });
    assert_eq!(actions, [Action::CheckUse { target: target() }]);
}

#[test]
fn a_device_an_earlier_reset_of_this_boot_left_needing_a_cold_reboot_blocks_naming_it() {
    let pending = warm_reset::PendingColdReboot::new(
        target().devices(),
        "0",
        ColdRebootReason::GpuMissing,
        1_767_229_200_000,
        Some("5a3c".into()),
    );
    let (state, actions) = go(
        State::CheckingColdReboot { target: target() },
        Event::ColdReboots(vec![pending]),
    );
    let State::Blocked { reason, detail } = state else {
        panic!("not blocked: {state:?}");
    };
    assert_eq!(reason, BlockedReason::ColdRebootPending);
    assert!(detail.contains("gpu_missing"), "{detail}");
    assert!(actions.is_empty());
}

#[test]
fn a_target_that_does_not_resolve_blocks_with_the_backends_reason() {
    for reason in [
        BlockedReason::UnknownDevice,
        BlockedReason::ResetUnsupported,
        BlockedReason::DriverInUse,
    ] {
        assert_eq!(
            blocked_with(
                State::ResolvingTarget,
                Event::Resolved(Err(refusal(reason)))
            ),
            reason
        );
    }
}

#[test]
fn an_unused_group_leads_to_the_kernel_log() {
    assert_eq!(
        go(
            State::CheckingUse { target: target() },
            Event::Use(Ok(vec![]))
        ),
        (
            State::CheckingKernelLog { target: target() },
            vec![Action::MarkKernelLog]
        )
    );
}

#[test]
fn a_group_in_use_blocks_with_the_backends_reason() {
    for reason in [BlockedReason::GpuBusy, BlockedReason::GroupInUse] {
        assert_eq!(
            blocked_with(
                State::CheckingUse { target: target() },
                Event::Use(Err(refusal(reason)))
            ),
            reason
        );
    }
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
    assert_eq!(state, resetting());
    assert_eq!(
        actions,
        [
            Action::WriteJournal { target: target() },
            Action::IssueReset {
                target: target(),
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
fn a_finished_reset_is_verified_within_the_same_window() {
    let (state, actions) = go(resetting(), Event::ResetEnded(ResetEnd::Finished));
    assert_eq!(state, verifying(NOW + Duration::from_secs(90)));
    assert_eq!(actions, [Action::CheckBack { target: target() }]);
}

#[test]
fn a_reset_that_reports_an_error_needs_a_cold_reboot() {
    assert_eq!(
        cold_with(resetting(), Event::ResetEnded(ResetEnd::Failed(why("x")))),
        ColdRebootReason::ResetError
    );
}

#[test]
fn a_reset_the_tool_refused_is_blocked_and_leaves_nothing_in_flight() {
    let event = Event::ResetEnded(ResetEnd::Refused(Refusal::new(
        BlockedReason::GpuBusy,
        "in use",
    )));
    assert_eq!(
        go(resetting(), event),
        (
            State::Blocked {
                reason: BlockedReason::GpuBusy,
                detail: "in use".into()
            },
            vec![Action::CloseJournal]
        )
    );
}

#[test]
fn a_reset_that_hangs_past_the_window_needs_a_cold_reboot() {
    assert_eq!(
        cold_with(resetting(), Event::ResetEnded(ResetEnd::Hung)),
        ColdRebootReason::ResetHung
    );
}

#[test]
fn a_group_back_leads_to_the_kernel_log_after_its_warnings() {
    let back = Event::Back(Back::Yes {
        warnings: vec![ResetWarning::KernelLogUnchecked(
            "links not verified".into(),
        )],
    });
    assert_eq!(
        go(verifying(NOW + Duration::from_secs(60)), back),
        (
            State::CheckingKernel { target: target() },
            vec![
                Action::Warn(ResetWarning::KernelLogUnchecked(
                    "links not verified".into()
                )),
                Action::ReadKernelErrors { target: target() }
            ]
        )
    );
}

#[test]
fn a_group_not_back_with_time_left_waits_and_asks_again_backing_off_from_100_ms_to_the_poll() {
    // The first check comes as the reset ends; then 100 ms, doubling to the 1 s poll.
    let mut state = verifying(NOW + Duration::from_secs(60));
    let mut waits = Vec::new();
    for _ in 0..7 {
        let (next, actions) = go(state, not_yet(ColdRebootReason::GpuUnavailable));
        let [Action::Wait(wait)] = actions.as_slice() else {
            panic!("{actions:?}");
        };
        waits.push(wait.as_millis());
        assert_eq!(
            go(next.clone(), Event::Tick).1,
            [Action::CheckBack { target: target() }]
        );
        state = next;
    }
    assert_eq!(waits, [100, 200, 400, 800, 1000, 1000, 1000]);
}

#[test]
fn a_group_not_back_when_the_window_ends_is_a_cold_reboot_for_the_last_answers_reason() {
    for reason in [
        ColdRebootReason::GpuMissing,
        ColdRebootReason::GpuUnavailable,
    ] {
        assert_eq!(cold_with(verifying(NOW), not_yet(reason)), reason);
    }
}

#[test]
fn a_group_back_but_wrong_is_a_cold_reboot_at_once_even_with_time_left() {
    let event = Event::Back(Back::Wrong(NotBack::new(
        ColdRebootReason::TopologyWrong,
        "moved",
    )));
    assert_eq!(
        cold_with(verifying(NOW + Duration::from_secs(60)), event),
        ColdRebootReason::TopologyWrong
    );
}

#[test]
fn a_clean_kernel_log_is_done_and_closes_the_journal() {
    assert_eq!(
        go(
            State::CheckingKernel { target: target() },
            Event::KernelErrors(Ok(vec![]))
        ),
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
    assert!(matches!(actions.first(), Some(Action::Warn(_))));
    assert_eq!(actions.last(), Some(&Action::CloseJournal));
}

fn all_states() -> Vec<State> {
    vec![
        State::Planned,
        State::Locking,
        State::ReadingJournal,
        State::CheckingRoot,
        State::CheckingHost,
        State::ResolvingTarget,
        State::CheckingColdReboot { target: target() },
        State::CheckingUse { target: target() },
        State::CheckingKernelLog { target: target() },
        resetting(),
        verifying(NOW + Duration::from_secs(60)),
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
            not_back: Vec::new(),
        },
    ]
}

fn all_events() -> Vec<Event> {
    vec![
        Event::Start,
        Event::Lock(LockAnswer::Taken),
        Event::Journal(JournalView::Clear),
        Event::Root(true),
        Event::Host(Ok(vec![])),
        Event::Resolved(Ok((target(), vec![]))),
        Event::ColdReboots(Vec::new()),
        Event::Use(Ok(vec![])),
        Event::KernelLog(Ok(())),
        Event::ResetEnded(ResetEnd::Finished),
        Event::ResetEnded(ResetEnd::Refused(refusal(BlockedReason::GpuBusy))),
        Event::ResetEnded(ResetEnd::Hung),
        Event::Back(Back::Yes { warnings: vec![] }),
        Event::Tick,
        Event::KernelErrors(Ok(vec![])),
    ]
}

/// The event kinds each state answers to (the rules above); index into `all_events`.
fn answers(state: &State) -> &'static [usize] {
    match state {
        State::Planned => &[0],
        State::Locking => &[1],
        State::ReadingJournal => &[2],
        State::CheckingRoot => &[3],
        State::CheckingHost => &[4],
        State::ResolvingTarget => &[5],
        State::CheckingColdReboot { .. } => &[6],
        State::CheckingUse { .. } => &[7],
        State::CheckingKernelLog { .. } => &[8],
        State::Resetting { .. } => &[9, 10, 11],
        State::Verifying { .. } => &[12, 13],
        State::CheckingKernel { .. } => &[14],
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
    assert_eq!(pairs, 16 * 15 - 15);
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

#[test]
fn a_full_90_s_window_of_a_group_never_back_makes_at_most_94_checks() {
    // The machine alone, on its own time: every wait taken, every check answered not yet.
    let config = config();
    let mut now = NOW;
    let mut state = verifying(NOW + Duration::from_secs(90));
    let mut checks = 1; // the one made as the reset ended
    loop {
        let (next, actions) = step(&config, state, not_yet(ColdRebootReason::GpuMissing), now)
            .unwrap_or_else(|invalid| panic!("{invalid}"));
        match actions.as_slice() {
            [Action::Wait(wait)] => {
                now += *wait;
                let (again, actions) =
                    step(&config, next, Event::Tick, now).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(actions, [Action::CheckBack { target: target() }]);
                checks += 1;
                state = again;
            }
            _ => {
                assert!(next.is_end(), "{next:?}");
                break;
            }
        }
    }
    assert!(checks <= 94, "{checks} checks");
    assert!(checks >= 90, "{checks} checks: the window was not used");
    assert!(now <= NOW + Duration::from_secs(90));
}
