//! The transition function over every (state, event) pair: one named case per rule, and a
//! table showing that every other pair is refused as an invalid transition that keeps the
//! state. The machine knows no vendor: its targets here are MetaX ones only because some
//! target is needed. This module holds the rules up to the reset (the lock, the journal, the
//! preflight) and the helpers; [`super::machine_window`] the reset inside its window, its
//! verification and the table of every other pair.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;
use warm_reset::ResetWarning;
use warm_reset::metax::MetaxTarget;
use warm_reset::metax::mx_smi::{GpuRow, GpuState};
use warm_reset::{
    Action, Back, BackendError, BlockedReason, ColdRebootReason, Event, JournalView, LockAnswer,
    MachineConfig, Method, NotBack, Refusal, State, Target, TargetFacts, step,
};

pub(crate) const NOW: Duration = Duration::from_secs(100);

fn row(node: u32) -> GpuRow {
    GpuRow::new(
        node,
        "MXC500",
        format!("0000:0{}:00.0", node + 6).parse().unwrap(),
        GpuState::Available,
        Some(&format!("GPU-{node}")),
    )
}

pub(crate) fn target() -> Target {
    let metax = MetaxTarget::resolve(&"0".parse().unwrap(), &[row(0), row(1)]).unwrap();
    Target::new("0", TargetFacts::Metax(metax))
}

pub(crate) fn config() -> MachineConfig {
    MachineConfig::new("0".parse().unwrap())
}

pub(crate) fn go(state: State, event: Event) -> (State, Vec<Action>) {
    step(&config(), state, event, NOW).unwrap_or_else(|invalid| panic!("{invalid}"))
}

/// What a host says when it does not answer.
pub(crate) fn why(text: &str) -> BackendError {
    warm_reset::metax::MxSmiError::SaidFailed {
        command: "mx-smi".to_owned(),
        line: text.to_owned(),
    }
    .into()
}

pub(crate) fn refusal(reason: BlockedReason) -> Refusal {
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

pub(crate) fn cold_with(state: State, event: Event) -> ColdRebootReason {
    match go(state, event) {
        (State::ColdRebootRequired { reason, .. }, actions) => {
            assert_eq!(actions, [Action::CloseJournal]);
            reason
        }
        other => panic!("not a cold reboot: {other:?}"),
    }
}

pub(crate) fn resetting() -> State {
    State::Resetting {
        target: target(),
        deadline: NOW + Duration::from_secs(90),
    }
}

pub(crate) fn verifying(deadline: Duration) -> State {
    State::Verifying {
        target: target(),
        deadline,
        interval: warm_reset::FIRST_POLL,
    }
}

pub(crate) fn not_yet(reason: ColdRebootReason) -> Event {
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

/// The resolved target, given that `device` is owned by `ownership` (not ours).
fn resolved_sparing(
    device: gpu_partition_types::Bdf,
    ownership: gpu_host_probe::Ownership,
) -> (State, Vec<Action>) {
    let config = config().sparing(std::collections::BTreeMap::from([(device, ownership)]));
    let resolved = Event::Resolved(Ok((target(), vec![])));
    step(&config, State::ResolvingTarget, resolved, NOW).unwrap()
}

#[test]
fn a_resolved_group_that_takes_a_gpu_not_ours_is_blocked_before_anything_is_touched() {
    // The target names node 0; its group (MetaXLink) takes node 1 too, which is another's.
    let theirs = *target().verified().last().unwrap();
    let (state, actions) = resolved_sparing(theirs, gpu_host_probe::Ownership::Dynamic);
    let State::Blocked { reason, detail } = state else {
        panic!("not blocked: {state:?}");
    };
    assert_eq!(reason, BlockedReason::GpuNotOurs);
    assert!(
        detail.contains(&theirs.to_string()) && detail.contains("dynamic"),
        "{detail}"
    );
    assert!(actions.is_empty());
}

#[test]
fn a_resolved_group_of_gpus_all_ours_goes_on_when_another_gpu_is_not_ours() {
    let elsewhere = "0000:99:00.0".parse().unwrap();
    let (state, _) = resolved_sparing(elsewhere, gpu_host_probe::Ownership::External);
    assert_eq!(state, State::CheckingColdReboot { target: target() });
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
