//! What refuses a plan before anything is written: processes on the card, a vGPU on a GPU
//! instance the plan destroys (or any vGPU on a card whose mode changes), and the members that
//! say so when they did not read.

use crate::plan::CardPlan;
use crate::report::ApplyReason;
use gpu_partition_types::{Lenient, Reply, Step};

/// Why `plan` may not run on the card of `reply`, if it may not: the reason and the detail
/// naming what holds the card.
pub fn refusal(reply: &Reply, plan: &CardPlan) -> Option<(ApplyReason, String)> {
    if plan.is_empty() {
        return None;
    }
    processes(reply).or_else(|| vgpus(reply, plan))
}

/// Processes on the card (or a list that did not read) refuse any plan.
fn processes(reply: &Reply) -> Option<(ApplyReason, String)> {
    let device = reply.device;
    let processes = match &reply.processes {
        Lenient::Read(processes) => processes,
        Lenient::Lost(lost) => {
            return Some((
                ApplyReason::GpuUnreadable,
                format!(
                    "{device}: the processes on the card did not read ({}), so it cannot be \
                     known idle",
                    lost.message
                ),
            ));
        }
    };
    let named: Vec<String> = processes
        .iter()
        .map(|process| match process {
            Lenient::Read(process) => match process.name.read() {
                Some(name) => format!("pid {} ({name})", process.pid),
                None => format!("pid {}", process.pid),
            },
            Lenient::Lost(_) => "a process whose entry did not read".to_owned(),
        })
        .collect();
    (!named.is_empty()).then(|| {
        (
            ApplyReason::GpuBusy,
            format!(
                "{device} has clients: {}; nothing is changed while a process holds the card",
                named.join(", ")
            ),
        )
    })
}

/// A vGPU on a GPU instance the plan destroys, or any vGPU on a card whose mode changes (or a
/// list that did not read), refuses the plan.
fn vgpus(reply: &Reply, plan: &CardPlan) -> Option<(ApplyReason, String)> {
    let device = reply.device;
    let vgpus = match &reply.vgpus {
        Lenient::Read(vgpus) => vgpus,
        Lenient::Lost(lost) => {
            return Some((
                ApplyReason::GpuUnreadable,
                format!(
                    "{device}: the vGPUs on the card did not read ({}), so none can be known \
                     safe to remove",
                    lost.message
                ),
            ));
        }
    };
    let destroyed: Vec<u32> = plan
        .destroy
        .iter()
        .filter_map(|step| match step {
            Step::DestroyGpuInstance { gpu_instance_id } => Some(*gpu_instance_id),
            Step::DestroyComputeInstance { .. }
            | Step::SetMigMode { .. }
            | Step::CreateGpuInstance { .. }
            | Step::CreateComputeInstance { .. }
            | Step::SetVgpuHeterogeneousMode { .. } => None,
        })
        .collect();
    let mode_changes = plan.set_mode.is_some() || plan.reset;
    let vgpu = vgpus.iter().filter_map(Lenient::read).find(|vgpu| {
        match vgpu.gpu_instance_id.into_option() {
            Some(instance) => destroyed.contains(&instance) || mode_changes,
            None => mode_changes,
        }
    })?;
    let on = vgpu.gpu_instance_id.into_option();
    let vm = vgpu
        .vm
        .as_option()
        .map(|vm| format!(" of VM {vm}"))
        .unwrap_or_default();
    let place = on.map_or_else(
        || "on the whole card".to_owned(),
        |instance| format!("on GPU instance {instance}"),
    );
    Some((
        ApplyReason::GpuBusy,
        format!(
            "{device}: vGPU {}{vm} is {place}, which the layout would {}",
            vgpu.uuid,
            if mode_changes {
                "take away with the mode change"
            } else {
                "destroy"
            }
        ),
    ))
}
