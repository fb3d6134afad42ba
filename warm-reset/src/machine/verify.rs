//! The verification's clock: the backend says whether the group is back; the machine waits
//! for it until the window ends, then takes the last answer's reason.

use super::event::Action;
use super::state::State;
use super::{MachineConfig, Transition, cold};
use crate::backend::Back;
use crate::target::Target;
use std::time::Duration;

/// An answer while verifying: back → the kernel log; wrong → a cold reboot now; not yet →
/// wait and ask again while the window lasts, then a cold reboot for its reason.
pub(super) fn back(
    config: &MachineConfig,
    target: Target,
    deadline: Duration,
    back: Back,
    now: Duration,
) -> Transition {
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
        Back::Wrong(not_back) => cold(not_back.reason, not_back.detail, target),
        Back::NotYet(_) if now + config.poll <= deadline => Ok((
            State::Verifying { target, deadline },
            vec![Action::Wait(config.poll)],
        )),
        Back::NotYet(not_back) => cold(not_back.reason, not_back.detail, target),
    }
}
