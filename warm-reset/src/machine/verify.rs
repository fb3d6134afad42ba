//! The verification after the reset: is every GPU back, in its place and available, and is
//! every MetaXLink link back?

use super::event::Action;
use super::state::State;
use super::{MachineConfig, Transition, cold, said};
use crate::backend::BackendError;
use crate::metax::mx_smi::{GpuRow, GpuState, Topology};
use crate::reasons::ColdRebootReason;
use crate::target::Target;
use std::time::Duration;

/// The rows that are not `Available`, as `GPU#n is STATE` (empty when all are).
pub(crate) fn not_available<'a>(rows: impl IntoIterator<Item = &'a GpuRow>) -> Vec<String> {
    rows.into_iter()
        .filter(|row| row.state != GpuState::Available)
        .map(|row| format!("GPU#{} is {}", row.node, row.state))
        .collect()
}

/// A listing while verifying: every GPU back and in its place → check the links (or the kernel
/// log); some not back with time left → wait and list again; the window spent → why not.
pub(super) fn listed(
    config: &MachineConfig,
    target: Target,
    deadline: Duration,
    listing: Result<Vec<GpuRow>, BackendError>,
    now: Duration,
) -> Transition {
    let rows = listing.as_ref().map(Vec::as_slice).unwrap_or_default();
    let back = |before: &GpuRow| rows.iter().find(|row| row.node == before.node);
    let all_available = listing.is_ok()
        && target
            .before
            .iter()
            .all(|before| back(before).is_some_and(|row| row.state == GpuState::Available));
    if all_available {
        let moved: Vec<String> = target
            .before
            .iter()
            .filter(|before| back(before).is_some_and(|row| !row.same_place(before)))
            .map(|before| format!("GPU#{}", before.node))
            .collect();
        if !moved.is_empty() {
            return cold(
                ColdRebootReason::TopologyWrong,
                format!("PCI address or UUID changed: {}", moved.join(", ")),
                target,
            );
        }
        if target.topology.is_some() {
            return Ok((
                State::CheckingTopology { target },
                vec![Action::ReadTopology],
            ));
        }
        return Ok((
            State::CheckingKernel { target },
            vec![Action::ReadKernelErrors],
        ));
    }
    if now + config.poll <= deadline {
        return Ok((
            State::Verifying { target, deadline },
            vec![Action::Wait(config.poll)],
        ));
    }
    if let Err(why) = &listing {
        return cold(
            ColdRebootReason::GpuMissing,
            format!("mx-smi -L failed: {}", said(why)),
            target,
        );
    }
    let missing: Vec<String> = target
        .before
        .iter()
        .filter(|before| back(before).is_none())
        .map(|before| format!("GPU#{} ({})", before.node, before.bdf))
        .collect();
    if !missing.is_empty() {
        return cold(
            ColdRebootReason::GpuMissing,
            format!("not listed: {}", missing.join(", ")),
            target,
        );
    }
    let unavailable = not_available(target.before.iter().filter_map(back));
    cold(
        ColdRebootReason::GpuUnavailable,
        unavailable.join(", "),
        target,
    )
}

/// The topology after the reset: every link of before is back → check the kernel log.
pub(super) fn links(target: Target, after: &Topology) -> Transition {
    let lost = target
        .topology
        .as_ref()
        .map(|before| before.lost_links(after))
        .unwrap_or_default();
    if lost.is_empty() {
        return Ok((
            State::CheckingKernel { target },
            vec![Action::ReadKernelErrors],
        ));
    }
    let lost: Vec<String> = lost
        .iter()
        .map(|(a, b)| format!("GPU#{a}-GPU#{b}"))
        .collect();
    cold(
        ColdRebootReason::TopologyWrong,
        format!("MetaXLink not back: {}", lost.join(", ")),
        target,
    )
}
