//! `apply`: a request's steps run in order through NVML's write calls, stopping at the first
//! that does not succeed, and answered with one result per step and a fresh read of the card.
//! The helper writes only what a step asks.

use crate::api::{Nvml, NvmlCard, NvmlFailure, NvmlHost};
use crate::read::{Answer, read_card};
use gpu_partition_types::{
    ApplyAnswer, ApplyRequest, Bdf, Enumerated, RefusalKind, Step, StepOutcome, StepResult,
};

/// What `apply` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Applied {
    /// The results and the card after them.
    Answer(Box<ApplyAnswer>),
    /// Another NVML client holds the card: exit 75, with this message (and what the steps
    /// did, if any ran) on stderr.
    Busy(String),
}

/// The refusal kind of an NVML failure.
pub fn refusal_kind(failure: &NvmlFailure) -> RefusalKind {
    match failure {
        NvmlFailure::InUse(_) => RefusalKind::InUse,
        NvmlFailure::InsufficientResources(_) => RefusalKind::InsufficientResources,
        NvmlFailure::NotSupported => RefusalKind::NotSupported,
        NvmlFailure::NoPermission(_) => RefusalKind::NoPermission,
        NvmlFailure::NotFound(_) => RefusalKind::NotFound,
        NvmlFailure::InvalidArgument => RefusalKind::InvalidArgument,
        NvmlFailure::ResetRequired(_) => RefusalKind::ResetRequired,
        NvmlFailure::FunctionMissing(_)
        | NvmlFailure::LibraryMissing(_)
        | NvmlFailure::Driver(_) => RefusalKind::DriverError,
    }
}

fn refused(what: &str, failure: &NvmlFailure) -> StepOutcome {
    StepOutcome::Refused {
        kind: Enumerated::Known(refusal_kind(failure)),
        message: format!("{what}: {failure}"),
    }
}

/// Runs one step on `card`.
fn run(card: &dyn NvmlCard, step: &Step) -> StepOutcome {
    let done = |result: Nvml<()>, what: &str| match result {
        Ok(()) => StepOutcome::done(),
        Err(failure) => refused(what, &failure),
    };
    match *step {
        Step::SetMigMode { enabled } => set_mig_mode(card, enabled),
        Step::CreateGpuInstance {
            profile_id,
            placement,
        } => match card.create_gpu_instance(profile_id, placement.start, placement.size) {
            Ok(id) => StepOutcome::Done {
                gpu_instance_id: Some(id),
                compute_instance_id: None,
                pending: false,
            },
            Err(failure) => refused(
                &format!(
                    "creating a GPU instance of profile {profile_id} at {}+{}",
                    placement.start, placement.size
                ),
                &failure,
            ),
        },
        Step::CreateComputeInstance {
            gpu_instance_id,
            profile_id,
            placement,
        } => match card.create_compute_instance(
            gpu_instance_id,
            profile_id,
            placement.map(|p| (p.start, p.size)),
        ) {
            Ok(id) => StepOutcome::Done {
                gpu_instance_id: None,
                compute_instance_id: Some(id),
                pending: false,
            },
            Err(failure) => refused(
                &format!(
                    "creating a compute instance of profile {profile_id} in GPU instance \
                     {gpu_instance_id}"
                ),
                &failure,
            ),
        },
        Step::DestroyComputeInstance {
            gpu_instance_id,
            compute_instance_id,
        } => done(
            card.destroy_compute_instance(gpu_instance_id, compute_instance_id),
            &format!(
                "destroying compute instance {compute_instance_id} of GPU instance \
                 {gpu_instance_id}"
            ),
        ),
        Step::DestroyGpuInstance { gpu_instance_id } => done(
            card.destroy_gpu_instance(gpu_instance_id),
            &format!("destroying GPU instance {gpu_instance_id}"),
        ),
        Step::SetVgpuHeterogeneousMode { enabled } => done(
            card.set_vgpu_heterogeneous_mode(enabled),
            &format!(
                "setting heterogeneous vGPU mode {}",
                if enabled { "on" } else { "off" }
            ),
        ),
    }
}

/// `set_mig_mode` reads both results — the call's return and the activation status — then the
/// mode again: a change the card holds pending (current is not yet the mode asked for) is done
/// with `pending`.
fn set_mig_mode(card: &dyn NvmlCard, enabled: bool) -> StepOutcome {
    let what = format!("setting MIG {}", if enabled { "on" } else { "off" });
    let activation = match card.set_mig_mode(enabled) {
        Err(failure) => return refused(&what, &failure),
        Ok(activation) => activation,
    };
    if let Err(failure) = activation {
        let why = match &failure {
            NvmlFailure::InUse(_) => format!(
                "{what}: the card is in use, and the change needs it idle (activation status: \
                 {failure})"
            ),
            NvmlFailure::ResetRequired(_) => format!(
                "{what}: the change needs a reset this environment does not expose \
                 (activation status: {failure})"
            ),
            _ => format!("{what}: activation status: {failure}"),
        };
        return StepOutcome::Refused {
            kind: Enumerated::Known(refusal_kind(&failure)),
            message: why,
        };
    }
    match card.mig_mode() {
        Ok((current, pending)) => StepOutcome::Done {
            gpu_instance_id: None,
            compute_instance_id: None,
            pending: current != enabled && pending == enabled,
        },
        Err(failure) => refused(&format!("{what}: reading the mode back"), &failure),
    }
}

/// Runs `request` on the card at `device`, then reads it afresh for the answer.
pub fn apply(host: &dyn NvmlHost, device: Bdf, request: &ApplyRequest) -> Applied {
    let mut results = Vec::with_capacity(request.steps.len());
    {
        let card = match host.card(&device.to_string()) {
            Ok(card) => Some(card),
            Err(NvmlFailure::InUse(why)) => return Applied::Busy(format!("{device}: {why}")),
            Err(failure) => {
                let outcome = refused("finding the card", &failure);
                let mut steps = request.steps.iter();
                if let Some(first) = steps.next() {
                    results.push(StepResult::new(first.op(), outcome));
                }
                results.extend(steps.map(|step| StepResult::new(step.op(), StepOutcome::Skipped)));
                None
            }
        };
        if let Some(card) = card {
            let mut stopped = false;
            for step in &request.steps {
                let outcome = if stopped {
                    StepOutcome::Skipped
                } else {
                    run(card.as_ref(), step)
                };
                stopped = stopped || !matches!(outcome, StepOutcome::Done { .. });
                results.push(StepResult::new(step.op(), outcome));
            }
        }
    }
    // A fresh read: the card as `read` finds it now (handles of before are not reused).
    match read_card(host, device) {
        Answer::Reply(reply) => Applied::Answer(Box::new(ApplyAnswer::new(results, *reply))),
        Answer::Busy(message) => Applied::Busy(format!(
            "{message}; the steps gave: {}",
            results
                .iter()
                .map(|r| format!("{} {}", r.op, r.outcome.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
