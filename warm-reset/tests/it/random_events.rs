//! The machine driven by random answers to its actions, and random stray events: it never
//! panics, never issues a reset once blocked, never issues two resets, and always ends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use std::collections::VecDeque;
use std::time::Duration;
use warm_reset::metax::MetaxTarget;
use warm_reset::metax::mx_smi::{GpuRow, GpuState};
use warm_reset::{
    Action, Back, BackendError, BlockedReason, ColdRebootReason, Event, JournalView, LockAnswer,
    MachineConfig, NotBack, PendingColdReboot, Refusal, ResetEnd, State, Target, TargetFacts, step,
};

/// What a host says when it does not answer.
fn why(text: &str) -> BackendError {
    warm_reset::metax::MxSmiError::SaidFailed {
        command: "mx-smi".to_owned(),
        line: text.to_owned(),
    }
    .into()
}

/// Random choices, consumed one at a time (0 when exhausted).
struct Dice(VecDeque<u8>);

impl Dice {
    fn roll(&mut self, sides: u8) -> u8 {
        self.0.pop_front().unwrap_or(0) % sides.max(1)
    }
}

fn target() -> Target {
    let rows = [GpuRow::new(
        0,
        "MXC500",
        "0000:06:00.0".parse().unwrap(),
        GpuState::Available,
        Some("GPU-0"),
    )];
    Target::new(
        "0",
        TargetFacts::Metax(MetaxTarget::resolve(&"0".parse().unwrap(), &rows).unwrap()),
    )
}

fn refused(dice: &mut Dice) -> Refusal {
    let reasons = [
        BlockedReason::GpuBusy,
        BlockedReason::DriverInUse,
        BlockedReason::UnknownDevice,
        BlockedReason::ResetUnsupported,
        BlockedReason::GroupInUse,
    ];
    Refusal::new(reasons[usize::from(dice.roll(5))], "refused")
}

fn checked(dice: &mut Dice) -> Result<Vec<warm_reset::ResetWarning>, Refusal> {
    match dice.roll(5) {
        0 => Err(refused(dice)),
        1 => Ok(vec![warm_reset::ResetWarning::VerifyingEarlierReset]),
        _ => Ok(vec![]),
    }
}

fn back(dice: &mut Dice) -> Back {
    let not_back = |reason| NotBack::new(reason, "not back");
    match dice.roll(6) {
        0 => Back::NotYet(not_back(ColdRebootReason::GpuMissing)),
        1 => Back::NotYet(not_back(ColdRebootReason::GpuUnavailable)),
        2 => Back::Wrong(not_back(ColdRebootReason::TopologyWrong)),
        _ => Back::Yes { warnings: vec![] },
    }
}

fn answer(action: &Action, dice: &mut Dice, now: &mut Duration) -> Option<Event> {
    Some(match action {
        Action::TakeLock => Event::Lock(if dice.roll(4) != 0 {
            LockAnswer::Taken
        } else {
            LockAnswer::Held("pid 4242".to_owned())
        }),
        Action::ReadJournal => match dice.roll(4) {
            0 => Event::Journal(JournalView::InFlight {
                target: target(),
                window_spent: dice.roll(2) == 0,
            }),
            _ => Event::Journal(JournalView::Clear),
        },
        Action::CheckRoot => Event::Root(dice.roll(5) != 0),
        Action::CheckHost => Event::Host(checked(dice)),
        Action::Resolve => Event::Resolved(match dice.roll(5) {
            0 => Err(refused(dice)),
            _ => Ok((target(), vec![])),
        }),
        Action::ReadColdReboots { .. } => Event::ColdReboots(match dice.roll(6) {
            0 => vec![PendingColdReboot::new(
                target().devices(),
                "0",
                ColdRebootReason::GpuMissing,
                0,
                None,
            )],
            _ => Vec::new(),
        }),
        Action::CheckUse { .. } => Event::Use(checked(dice)),
        Action::IssueReset { deadline, .. } => match dice.roll(5) {
            0 => {
                *now = *deadline;
                Event::ResetEnded(ResetEnd::Hung)
            }
            1 => Event::ResetEnded(ResetEnd::Failed(why("failed"))),
            2 => Event::ResetEnded(ResetEnd::Refused(refused(dice))),
            _ => {
                *now += Duration::from_secs(u64::from(dice.roll(100)));
                Event::ResetEnded(ResetEnd::Finished)
            }
        },
        Action::CheckBack { .. } => Event::Back(back(dice)),
        Action::Wait(duration) => {
            *now += *duration;
            Event::Tick
        }
        Action::MarkKernelLog => Event::KernelLog(if dice.roll(5) == 0 {
            Err(why("EACCES"))
        } else {
            Ok(())
        }),
        Action::ReadKernelErrors { .. } => Event::KernelErrors(match dice.roll(4) {
            0 => Ok(vec!["error".into()]),
            1 => Err(why("EACCES")),
            _ => Ok(vec![]),
        }),
        // Actions that answer nothing.
        _ => return None,
    })
}

fn stray(dice: &mut Dice) -> Event {
    match dice.roll(10) {
        0 => Event::Start,
        1 => Event::Lock(LockAnswer::Taken),
        2 => Event::Root(true),
        3 => Event::Back(Back::Yes { warnings: vec![] }),
        4 => Event::ResetEnded(ResetEnd::Finished),
        5 => Event::ResetEnded(ResetEnd::Hung),
        6 => Event::Tick,
        7 => Event::Use(Ok(vec![])),
        8 => Event::Host(Ok(vec![])),
        _ => Event::KernelErrors(Ok(vec![])),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_answers_never_reset_twice_never_reset_when_blocked_and_always_end(
        choices in proptest::collection::vec(any::<u8>(), 0..400),
        dry_run in any::<bool>(),
    ) {
        let mut dice = Dice(choices.into());
        let mut config = MachineConfig::new("0".parse().unwrap());
        config.dry_run = dry_run;
        let mut now = Duration::ZERO;
        let mut state = State::Planned;
        let mut queue = VecDeque::from([Event::Start]);
        let mut resets = 0;
        let mut steps = 0;
        while let Some(event) = queue.pop_front() {
            steps += 1;
            // Now and then, before the answer, an event of another kind that nobody asked for:
            // it must be refused as an invalid transition that keeps the state.
            if dice.roll(10) == 0 {
                let odd = stray(&mut dice);
                // Verifying answers to checks and ticks; resetting to every end of the reset.
                let also_answers = match state {
                    State::Verifying { .. } => matches!(odd, Event::Back(_) | Event::Tick),
                    State::Resetting { .. } => matches!(
                        odd,
                        Event::ResetEnded(_)
                    ),
                    _ => false,
                };
                if std::mem::discriminant(&odd) != std::mem::discriminant(&event) && !also_answers {
                    let before = state.clone();
                    let refused = match step(&config, state, odd, now) {
                        Err(invalid) => invalid.from,
                        Ok((next, _)) => {
                            prop_assert!(false, "a stray event was taken in {}", before.name());
                            next
                        }
                    };
                    let unchanged = refused == before;
                    state = refused;
                    prop_assert!(unchanged, "a stray event changed the state");
                }
            }
            prop_assert!(steps < 10_000, "did not end");
            let (next, actions) = step(&config, state, event, now)
                .unwrap_or_else(|invalid| panic!("{invalid}"));
            let issued = actions.iter().filter(|a| matches!(a, Action::IssueReset { .. })).count();
            let blocked = matches!(next, State::Blocked { .. });
            prop_assert!(!(blocked && issued > 0), "a reset while blocked");
            resets += issued;
            prop_assert!(resets <= 1, "two resets");
            prop_assert!(!(dry_run && resets > 0), "a dry run reset");
            state = next;
            for action in &actions {
                queue.extend(answer(action, &mut dice, &mut now));
            }
        }
        prop_assert!(state.is_end(), "stopped in {}", state.name());
    }
}
