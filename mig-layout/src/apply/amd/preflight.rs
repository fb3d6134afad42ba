//! The AMD side's preflight: every AMD GPU of the host read, who holds them, the client
//! services, and the plan; refused before any write as `docs/amd.md` says.

use super::{AmdGpu, AmdPlanned, AmdWith, with_own};
use crate::amd_plan::{AmdCard, AmdStep, plan_amd};
use crate::amd_services::running_services;
use crate::apply::run::ApplyError;
use crate::apply::side::Refusal;
use crate::plan::{Impossible, ImpossibleKind};
use crate::report::{AmdWork, ApplyReason, GpuReport, GpuWork};
use crate::select::{AmdWanted, amd_gpus};
use gpu_host_probe::amdgpu::{AmdPartitions, read_partitions};
use gpu_host_probe::{Holder, Host, holders};
use gpu_partition_types::Bdf;
use host_sync::StateStore;
use layout_model::amd::AmdWant;
use std::path::PathBuf;
use warm_reset::amd::{KFD, render_files, render_nodes};

/// What holds each GPU: its render nodes' holders and `/dev/kfd`'s (a ROCm process opens it
/// whatever GPUs it uses); or why who holds them cannot be told.
fn holders_of(host: &Host, devices: &[Bdf]) -> Result<Vec<Vec<Holder>>, String> {
    let mut files: Vec<Vec<PathBuf>> = Vec::new();
    for device in devices {
        let dir = host
            .sysfs_root()
            .join("bus/pci/devices")
            .join(device.to_string());
        let nodes = render_nodes(&dir).map_err(|error| {
            format!(
                "{device}: cannot tell who holds it: its render nodes did not read: {}",
                gpu_host_probe::chain::Chain(&error)
            )
        })?;
        files.push(render_files(&nodes));
    }
    let kfd = PathBuf::from(KFD);
    let all: Vec<PathBuf> = files
        .iter()
        .flatten()
        .cloned()
        .chain(std::iter::once(kfd.clone()))
        .collect();
    let found = holders(host.proc_root(), &all).map_err(|error| error.to_string())?;
    Ok(files
        .into_iter()
        .map(|nodes| {
            found
                .iter()
                .filter(|holder| holder.file == kfd || nodes.contains(&holder.file))
                .cloned()
                .collect()
        })
        .collect())
}

/// A GPU's report before anything is done.
fn report_of(wanted: &AmdWanted) -> GpuReport {
    GpuReport::for_amd(wanted.gpu.bdf, wanted.gpu.index, wanted.line)
}

/// Every AMD GPU of the host read, who holds them, the client services and the plan: the GPUs
/// planned, or why the apply is refused before any write (with each GPU's report as far as it
/// got).
pub(super) fn preflight(
    host: &Host,
    with: &AmdWith<'_>,
    wanted: Vec<AmdWanted>,
    store: &mut dyn StateStore,
) -> Result<Result<AmdPlanned, (Refusal, Vec<GpuReport>)>, ApplyError> {
    if wanted.is_empty() {
        return Ok(Ok(AmdPlanned::none()));
    }
    let mut reports: Vec<GpuReport> = wanted.iter().map(report_of).collect();
    let refused = |reason, detail: String, gpus: Vec<GpuReport>| {
        Ok(Err((Refusal::new(reason, detail), gpus)))
    };
    let impossible = |refusal: Refusal, gpus| Ok(Err((refusal, gpus)));
    let is_wanted = |device: Bdf| wanted.iter().any(|w| w.gpu.bdf == device);
    // The services given and those the declarations kept: one running blocks the writes.
    let services = wanted.iter().fold(with.client_services.clone(), |all, w| {
        with_own(&all, &w.client_services)
    });
    let mut read = Vec::new();
    let mut unread = Vec::new();
    for gpu in amd_gpus(host.sysfs_root())? {
        match read_partitions(host.sysfs_root(), gpu.bdf) {
            Ok(Some(partitions)) => read.push((gpu.bdf, partitions)),
            Ok(None) if is_wanted(gpu.bdf) => {
                let detail =
                    format!("{gpu}: it shows no partition files: amdgpu cannot partition it");
                let mut refusal = Refusal::new(ApplyReason::LayoutImpossible, detail.clone());
                refusal.impossible = Some(Impossible::new(
                    gpu.bdf,
                    None,
                    ImpossibleKind::AmdNotPartitionable,
                    detail,
                ));
                return impossible(refusal, reports);
            }
            Ok(None) => {}
            Err(error) if is_wanted(gpu.bdf) => {
                let detail = format!("{gpu}: {}", gpu_host_probe::chain::Chain(&error));
                return refused(ApplyReason::GpuUnreadable, detail, reports);
            }
            Err(error) => unread.push(format!("{gpu}: {}", gpu_host_probe::chain::Chain(&error))),
        }
    }
    let devices: Vec<Bdf> = read.iter().map(|(device, _)| *device).collect();
    let held = match holders_of(host, &devices) {
        Ok(held) => held,
        Err(detail) => return refused(ApplyReason::GpuBusy, detail, reports),
    };
    // The memory requests of ours that still wait for a reload (the kernel shows none).
    let state = store.load()?.unwrap_or_default();
    let boot = host.boot().or(&state.boot);
    let requested = |device: &Bdf, partitions: &AmdPartitions| {
        state.gpus.get(device)?.waiting_request(partitions, &boot)
    };
    let cards: Vec<AmdCard<'_>> = read
        .iter()
        .zip(&held)
        .map(|((device, partitions), holders)| AmdCard {
            device: *device,
            partitions,
            holders,
            requested: requested(device, partitions),
        })
        .collect();
    let wants: Vec<(Bdf, AmdWant)> = wanted.iter().map(|w| (w.gpu.bdf, w.want)).collect();
    let steps = match plan_amd(&cards, &wants) {
        Ok(steps) => steps,
        Err(refusal) => {
            let mut refused = Refusal::new(refusal.reason(), refusal.to_string());
            refused.impossible = refusal.impossible();
            return impossible(refused, reports);
        }
    };
    // A plan that reloads the driver through the kernel's side runs modprobe only when root may
    // (before any write, as the helper's own check).
    if steps.contains(&AmdStep::ReloadDriver) && with.writes.is_none() {
        if let Err(why) = with.modprobe.program.for_host(host) {
            let detail = gpu_host_probe::chain::Chain(&why).to_string();
            return refused(ApplyReason::ToolUnavailable, detail, reports);
        }
    }
    for report in &mut reports {
        let plan = steps
            .iter()
            .filter(|step| step.device() == Some(report.device))
            .copied()
            .collect();
        report.work = GpuWork::Amd(AmdWork {
            plan,
            done: Vec::new(),
        });
    }
    if !steps.is_empty() {
        // A GPU that did not read could be in a hive a request reaches, and a reload takes it
        // too: nothing is written while one does not.
        if let Some(first) = unread
            .first()
            .filter(|_| steps.contains(&AmdStep::ReloadDriver))
        {
            return refused(
                ApplyReason::GpuUnreadable,
                format!("{first}; the driver reload would reach it"),
                reports,
            );
        }
        let running =
            running_services(host.sysfs_root(), &services).map_err(ApplyError::ClientServices)?;
        if !running.is_empty() {
            let each: Vec<String> = running.iter().map(ToString::to_string).collect();
            return refused(
                ApplyReason::GpuBusy,
                format!(
                    "{}: a client service of the GPUs holds them; stop it before a repartition \
                     (an apply-start hook may, and an apply-exit hook start it again)",
                    each.join("; ")
                ),
                reports,
            );
        }
    }
    let gpus = wanted
        .into_iter()
        .zip(reports)
        .map(|(wanted, report)| AmdGpu {
            wanted,
            report,
            stop: None,
        })
        .collect();
    Ok(Ok(AmdPlanned {
        gpus,
        read,
        steps,
        wrote: false,
        reloads: 0,
        warnings: Vec::new(),
        services: with.client_services.clone(),
    }))
}
