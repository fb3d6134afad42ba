//! The verification's clock: the backend says whether the group is back; the machine waits
//! for it until the window ends, then takes the last answer's reason.

use super::event::Action;
use super::state::State;
use super::{MachineConfig, Transition, cold_not_back};
use crate::backend::Back;
use crate::target::Target;
use std::time::Duration;

/// An answer while verifying: back → the kernel log; wrong → a cold reboot now; not yet →
/// wait `interval` (then twice as long, up to the poll) and ask again while the window lasts,
/// then a cold reboot for its reason.
pub(super) fn back(
    config: &MachineConfig,
    target: Target,
    deadline: Duration,
    interval: Duration,
    back: Back,
    now: Duration,
) -> Transition {
    let wait = interval.min(config.poll).max(Duration::from_millis(1));
    match back {
        Back::Yes { warnings } => {
            let read = Action::ReadKernelErrors {
                target: target.clone(),
            };
            Ok((
                State::CheckingKernel { target },
                super::warned(warnings, read),
            ))
        }
        Back::Wrong(not_back) => {
            cold_not_back(not_back.reason, not_back.detail, target, not_back.devices)
        }
        Back::NotYet(_) if now + wait <= deadline => Ok((
            State::Verifying {
                target,
                deadline,
                interval: wait.saturating_mul(2).min(config.poll),
            },
            vec![Action::Wait(wait)],
        )),
        Back::NotYet(not_back) => {
            cold_not_back(not_back.reason, not_back.detail, target, not_back.devices)
        }
    }
}
