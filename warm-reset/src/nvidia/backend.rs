//! [`NvidiaBackend`]: the machine's questions answered for NVIDIA GPUs through `nvidia-smi`,
//! with the checks `nvidia-smi -r` leaves to its operator: the NVLink peers reset in the same
//! command, nobody holding the group's `/dev/nvidia<minor>`, no compute app on it.

use super::error::NvidiaSmiError;
use super::host::{NvidiaHost, NvidiaSmiHost};
use super::nvidia_smi::{
    NvidiaGpu, device_minor, parse_compute_apps, parse_gpus, parse_nvlinks, read_reset_output,
};
use super::target::NvidiaTarget;
use crate::backend::{Back, Backend, BackendError, NotBack, Refusal, ResetEnd, Survey};
use crate::host_backend::HostBackend;
use crate::kmsg::device_errors;
use crate::reasons::{BlockedReason, ColdRebootReason};
use crate::reset_target::ResetTarget;
use crate::target::{Target, TargetFacts};
use crate::tool::said_last;
use crate::warning::ResetWarning;
use gpu_host_probe::describe_holders;
use gpu_partition_types::Bdf;
use std::path::PathBuf;
use std::time::Duration;

/// An NVIDIA host behind the machine's questions.
pub type NvidiaBackend<H> = HostBackend<NvidiaTarget, H>;

/// The real NVIDIA host: `nvidia-smi`, `/proc`, the kernel log.
pub type NvidiaSmiBackend = NvidiaBackend<NvidiaSmiHost>;

/// The GPUs `target` names, as `nvidia-smi -i` reads it: `all`, or each ID's GPUs (an index, a
/// bus ID, a UUID), each once. An ID that names none makes the whole list name none.
fn named(target: &ResetTarget, gpus: &[NvidiaGpu]) -> Vec<NvidiaGpu> {
    let ids = match target {
        ResetTarget::All => return gpus.to_vec(),
        ResetTarget::Named(ids) => ids,
    };
    let mut named: Vec<NvidiaGpu> = Vec::new();
    for id in ids {
        let found: Vec<&NvidiaGpu> = gpus
            .iter()
            .filter(|gpu| id.names(gpu.index, gpu.bdf, Some(&gpu.uuid)))
            .collect();
        if found.is_empty() {
            return Vec::new();
        }
        for gpu in found {
            if !named.contains(gpu) {
                named.push(gpu.clone());
            }
        }
    }
    named
}

impl<H: NvidiaHost> NvidiaBackend<H> {
    fn gpus(&mut self) -> Result<Vec<NvidiaGpu>, BackendError> {
        let text = self.host_mut().query_gpus()?;
        Ok(parse_gpus(&text).map_err(NvidiaSmiError::from)?)
    }

    fn device_file(&mut self, bdf: Bdf) -> Result<PathBuf, BackendError> {
        let text = self.host_mut().information(bdf)?;
        let minor = device_minor(&text).map_err(NvidiaSmiError::from)?;
        Ok(PathBuf::from(format!("/dev/nvidia{minor}")))
    }
}

impl<H: NvidiaHost> Backend for NvidiaBackend<H> {
    backend_asks_host!();

    fn prepare(&mut self) -> Result<Vec<ResetWarning>, Refusal> {
        // The `nvidia` module's use count is no idle test: dependent modules keep it above 0.
        self.host_mut().find_nvidia_smi()?;
        Ok(Vec::new())
    }

    fn resolve(&mut self, target: &ResetTarget) -> Result<(Target, Vec<ResetWarning>), Refusal> {
        let gpus = self.gpus()?;
        let named = named(target, &gpus);
        if named.is_empty() {
            return Err(Refusal::new(
                BlockedReason::UnknownDevice,
                format!(
                    "{:?} names no GPU of nvidia-smi --query-gpu",
                    target.to_string()
                ),
            ));
        }
        // The peers must be reset in the same command when Fabric Manager is absent or a GPU
        // predates Ampere; always taking them is the safe superset.
        let text = self.host_mut().topology().map_err(|error| {
            Refusal::new(
                BlockedReason::NvidiaSmiUnavailable,
                format!(
                    "the NVLink peers are unknown, so no GPU can be reset alone: {}",
                    error.said()
                ),
            )
        })?;
        let links = parse_nvlinks(&text).map_err(|error| {
            Refusal::new(
                BlockedReason::NvidiaSmiUnavailable,
                format!("the NVLink peers are unknown, so no GPU can be reset alone: {error}"),
            )
        })?;
        let indices: Vec<u32> = named.iter().map(|gpu| gpu.index).collect();
        let group_indices = links.closure(&indices);
        let group: Vec<NvidiaGpu> = gpus
            .iter()
            .filter(|gpu| group_indices.contains(&gpu.index))
            .cloned()
            .collect();
        let mut warnings = Vec::new();
        if group.len() > named.len() {
            warnings.push(ResetWarning::PeersResetToo {
                peers: group
                    .iter()
                    .filter(|gpu| !named.contains(gpu))
                    .map(|gpu| format!("GPU {} ({})", gpu.index, gpu.bus_id))
                    .collect(),
            });
        }
        let facts = NvidiaTarget { named, group };
        Ok((
            Target::new(&target.to_string(), TargetFacts::Nvidia(facts)),
            warnings,
        ))
    }

    fn check_use(&mut self, target: &Target) -> Result<Vec<ResetWarning>, Refusal> {
        let nvidia = target.facts_of::<NvidiaTarget>()?.clone();
        let mut files = Vec::new();
        for gpu in &nvidia.group {
            files.push(self.device_file(gpu.bdf)?);
        }
        let holders = self.host_mut().holders(&files)?;
        if !holders.is_empty() {
            return Err(Refusal::new(
                BlockedReason::GpuBusy,
                format!("processes hold the GPUs: {}", describe_holders(&holders)),
            ));
        }
        let text = self.host_mut().compute_apps()?;
        let apps = parse_compute_apps(&text)
            .map_err(|error| Refusal::from(BackendError::from(NvidiaSmiError::from(error))))?;
        let busy: Vec<String> = apps
            .iter()
            .filter(|app| nvidia.group.iter().any(|gpu| gpu.bdf == app.bdf))
            .map(|app| format!("{} on {}", app.pid, app.bdf))
            .collect();
        if !busy.is_empty() {
            return Err(Refusal::new(
                BlockedReason::GpuBusy,
                format!("compute apps run on the GPUs: {}", busy.join(", ")),
            ));
        }
        Ok(Vec::new())
    }

    fn reset(&mut self, target: &Target, within: Duration) -> ResetEnd {
        let nvidia = match target.facts_of::<NvidiaTarget>() {
            Ok(nvidia) => nvidia.clone(),
            Err(error) => return ResetEnd::Failed(error),
        };
        let (command, code, text) = match self.host_mut().reset(&nvidia.group, within).exited() {
            Ok(exited) => exited,
            Err(end) => return end,
        };
        let output = read_reset_output(&text);
        // The busy block: nothing was reset, as long as no GPU says it was.
        if !output.in_use.is_empty() && output.reset.is_empty() {
            return ResetEnd::Refused(Refusal::new(
                BlockedReason::GpuBusy,
                format!("nvidia-smi refused the reset: {}", output.in_use.join("; ")),
            ));
        }
        let missing: Vec<&str> = nvidia
            .group
            .iter()
            .filter(|gpu| !output.reset.contains(&gpu.bdf))
            .map(|gpu| gpu.bus_id.as_str())
            .collect();
        if code == 0 && missing.is_empty() {
            return ResetEnd::Finished;
        }
        ResetEnd::Failed(
            NvidiaSmiError::ResetFailed {
                command,
                code,
                missing: if missing.is_empty() {
                    "(it said it reset every GPU)".to_owned()
                } else {
                    missing.join(",")
                },
                said: said_last(&text),
            }
            .into(),
        )
    }

    fn check_back(&mut self, target: &Target) -> Back {
        let nvidia = match target.facts_to_verify::<NvidiaTarget>() {
            Ok(nvidia) => nvidia,
            Err(wrong) => return wrong,
        };
        let gpus = match self.gpus() {
            Ok(gpus) => gpus,
            Err(error) => {
                return Back::NotYet(NotBack::new(
                    ColdRebootReason::GpuMissing,
                    format!("nvidia-smi --query-gpu failed: {}", error.said()),
                ));
            }
        };
        let mut missing = Vec::new();
        let mut moved = Vec::new();
        for before in &nvidia.group {
            match gpus.iter().find(|gpu| gpu.uuid == before.uuid) {
                None => missing.push(format!("{} ({})", before.bus_id, before.uuid)),
                Some(now) if now.bdf != before.bdf => moved.push(format!(
                    "{} is at {} where it was at {}",
                    before.uuid, now.bus_id, before.bus_id
                )),
                Some(_) => {}
            }
        }
        if !moved.is_empty() {
            return Back::Wrong(NotBack::new(
                ColdRebootReason::TopologyWrong,
                moved.join(", "),
            ));
        }
        if !missing.is_empty() {
            let devices = nvidia
                .group
                .iter()
                .filter(|before| !gpus.iter().any(|gpu| gpu.uuid == before.uuid))
                .map(|before| before.bdf)
                .collect();
            return Back::NotYet(
                NotBack::new(
                    ColdRebootReason::GpuMissing,
                    format!("not listed: {}", missing.join(", ")),
                )
                .devices(devices),
            );
        }
        Back::Yes {
            warnings: Vec::new(),
        }
    }

    fn kernel_errors(&mut self, target: &Target) -> Result<Vec<String>, BackendError> {
        target.kernel_errors_of::<NvidiaTarget>(self.host_mut().kernel_log(), device_errors)
    }

    fn survey(&mut self) -> Result<Survey, BackendError> {
        Ok(Survey {
            listed: self.gpus()?.len(),
            not_available: Vec::new(),
        })
    }
}
