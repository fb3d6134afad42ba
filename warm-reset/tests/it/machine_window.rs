//! The machine from the reset on: the reset inside its window, the verification that polls until
//! the group is back or the window ends, the kernel log after it, and the table showing that
//! every pair the rules leave out is an invalid transition that keeps the state. The helpers
//! are [`super::machine`]'s.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::machine::{
    NOW, cold_with, config, go, not_yet, refusal, resetting, target, verifying, why,
};
use std::time::Duration;
use warm_reset::ResetWarning;
use warm_reset::{
    Action, Back, BlockedReason, ColdRebootReason, Event, JournalView, LockAnswer, NotBack,
    Refusal, ResetEnd, State, step,
};
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
