//! How an apply ends once it wrote: each GPU's stop turned into its report's outcome, the
//! apply's worst, the record's outcome of an apply's, and the sync that classifies the host.

use super::ctx::Stop;
use super::options::ApplyOptions;
use super::run::ApplyError;
use crate::report::{ApplyOutcome, ApplyReason, End, GpuReport, HostAfter};
use gpu_host_probe::HostLock;
use gpu_host_probe::helper::Helper;
use gpu_partition_types::Token;
use host_sync::{AfterBoot, LayoutOutcome, StateStore, StoredReason, SyncOptions, sync_under};

/// The record's outcome of an apply's (a dry run and an apply that named nothing record none;
/// they are never asked for one).
pub(super) fn recorded(outcome: ApplyOutcome) -> LayoutOutcome {
    let reason = StoredReason::of_token;
    match outcome {
        ApplyOutcome::Done | ApplyOutcome::NothingNamed | ApplyOutcome::DryRun => {
            LayoutOutcome::Done
        }
        ApplyOutcome::Blocked(why) => LayoutOutcome::Blocked(reason(why.as_str())),
        ApplyOutcome::Failed(why) => LayoutOutcome::Failed(reason(why.as_str())),
        ApplyOutcome::ColdRebootRequired(why) => {
            LayoutOutcome::ColdRebootRequired(reason(why.as_str()))
        }
    }
}

/// Each GPU's report outcome from its stop (done when it has none; a stop of a cancelled apply
/// failed as cancelled, not as its own reason), and how the apply ends: as its worst GPU — a
/// cold reboot before a failure; among equals the first in index order gives the reason —,
/// with a detail naming every GPU that stopped; done when none did.
pub(super) fn worst(mut gpus: Vec<(&mut GpuReport, &mut Option<Stop>)>, cancelled: bool) -> End {
    for (report, stop) in &mut gpus {
        let Some(stop) = stop.as_mut() else {
            report.outcome = Some(ApplyOutcome::Done);
            continue;
        };
        if let ApplyOutcome::Failed(reason) = stop.outcome {
            if reason != ApplyReason::Cancelled && cancelled {
                stop.outcome = ApplyOutcome::Failed(ApplyReason::Cancelled);
                stop.detail = format!("the apply was cancelled: {}", stop.detail);
            }
        }
        report.outcome = Some(stop.outcome);
        report.detail = Some(stop.detail.clone());
        report.failure = stop.failure.as_deref().cloned();
    }
    let severity = |outcome: ApplyOutcome| match outcome {
        ApplyOutcome::ColdRebootRequired(_) => 2,
        ApplyOutcome::Failed(_) => 1,
        ApplyOutcome::Done
        | ApplyOutcome::NothingNamed
        | ApplyOutcome::DryRun
        | ApplyOutcome::Blocked(_) => 0,
    };
    let stops: Vec<&Stop> = gpus.iter().filter_map(|(_, stop)| stop.as_ref()).collect();
    let Some(most) = stops.iter().map(|stop| severity(stop.outcome)).max() else {
        return End::new(ApplyOutcome::Done, None);
    };
    let outcome = stops
        .iter()
        .find(|stop| severity(stop.outcome) == most)
        .map_or(ApplyOutcome::Done, |stop| stop.outcome);
    let each: Vec<&str> = stops.iter().map(|stop| stop.detail.as_str()).collect();
    let held = gpus.len() - stops.len();
    let detail = if held > 0 {
        format!(
            "{}; the other {held} GPU(s) of the layout hold it",
            each.join("; ")
        )
    } else {
        each.join("; ")
    };
    End::new(outcome, Some(detail))
}

/// The sync that ends an apply, under its lock, stamped by the run's clock.
pub(super) fn classify(
    lock: &HostLock,
    helper: &Helper,
    store: &mut dyn StateStore,
    clock: &dyn gpu_host_probe::Clock,
    options: &ApplyOptions,
) -> Result<HostAfter, ApplyError> {
    let mut sync = SyncOptions::new(options.pool, AfterBoot::No);
    if let Some(cancel) = &options.cancel {
        sync = sync.cancel(cancel.clone());
    }
    let after = match sync_under(lock, helper, store, clock, &sync) {
        Ok(after) => after,
        // Cancelled, it still wrote the host as it found it: that is the host after.
        Err(host_sync::SyncError::Cancelled {
            written: Some(after),
        }) => *after,
        Err(error) => return Err(error.into()),
    };
    // The declaration as that sync left it, judged now; a store that does not read says
    // nothing holds.
    let holding = match store.load() {
        Ok(state) => state
            .and_then(|state| state.declared)
            .map(|declared| declared.holding(&lock.host().now())),
        Err(_) => Some(layout_model::Holding::Unknown(
            layout_model::Unchecked::WritesUntold("the state store did not read".to_owned()),
        )),
    };
    Ok(HostAfter {
        status: after.status,
        reason: after.reason,
        message: after.message,
        declared: holding.as_ref().map(layout_model::Holding::state),
        differences: holding
            .map(|holding| holding.differences().to_vec())
            .unwrap_or_default(),
    })
}

/// How the apply ends: a pre-hook that failed blocks it.
pub(super) fn hook_failed(failed: &super::hook_run::HookRun) -> End {
    let said = failed.stderr.trim();
    End::blocked(
        ApplyReason::HookFailed,
        if said.is_empty() {
            format!("{failed}; nothing was changed")
        } else {
            format!("{failed} ({said}); nothing was changed")
        },
    )
}

/// How the apply ends: the caller cancelled it before any write.
pub(super) fn cancelled(when: &str) -> End {
    End::blocked(
        ApplyReason::Cancelled,
        format!("the apply was cancelled {when}; nothing was changed"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_an_apply_records_is_a_stored_reason_as_it_is() {
        let tokens = ApplyReason::ALL
            .iter()
            .map(|reason| reason.as_str())
            .chain(warm_reset::ColdRebootReason::ALL.iter().map(|r| r.as_str()))
            .chain(warm_reset::BlockedReason::ALL.iter().map(|r| r.as_str()));
        for token in tokens {
            assert_eq!(
                StoredReason::new(token).map(|reason| reason.as_str().to_owned()),
                Ok(token.to_owned()),
                "{token}"
            );
        }
    }
}
