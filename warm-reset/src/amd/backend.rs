//! [`AmdBackend`]: the machine's questions answered for AMD Instinct GPUs through `amd-smi
//! reset --gpureset`, with the checks it leaves to its operator: the whole XGMI hive is the
//! group (the kernel resets a hive together), nobody holds `/dev/kfd` (a reset ends every
//! process that does) or a render node of the group, and every GPU of the hive is read back from
//! sysfs as it was.

use super::amd_smi::{AmdSmiGpu, parse_list, read_reset_output};
use super::error::AmdSmiError;
use super::host::{AmdHost, AmdSmiHost};
use super::sysfs::{AmdGpuState, KFD};
use super::target::{AmdGpu, AmdTarget};
use super::verify::{Fault, amd_device_errors, partition_back};
use crate::backend::{Back, Backend, BackendError, NotBack, Refusal, ResetEnd, Survey};
use crate::host_backend::HostBackend;
use crate::pci::GONE_VENDOR;
use crate::reasons::{BlockedReason, ColdRebootReason};
use crate::reset_target::{ResetId, ResetTarget};
use crate::target::{Target, TargetFacts};
use crate::tool::said_last;
use crate::warning::ResetWarning;
use gpu_host_probe::{Holder, describe_holders};
use gpu_partition_types::Bdf;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

/// An AMD host behind the machine's questions.
pub type AmdBackend<H> = HostBackend<AmdTarget, H>;

/// The real AMD host: `amd-smi`, sysfs, `/proc`, the kernel log.
pub type AmdSmiBackend = AmdBackend<AmdSmiHost>;

/// A GPU as the facts keep it: as it was before the reset.
fn before(state: &AmdGpuState) -> AmdGpu {
    AmdGpu {
        bdf: state.bdf,
        identity: state.identity,
        hive: state.hive,
        compute_partition: state.compute_partition.text().map(str::to_owned),
        memory_partition: state.memory_partition.text().map(str::to_owned),
    }
}

fn unknown(detail: String) -> Refusal {
    Refusal::new(BlockedReason::UnknownDevice, detail)
}

impl<H: AmdHost> AmdBackend<H> {
    /// Every AMD GPU of the host now, as sysfs shows it.
    fn states(&mut self) -> Result<Vec<AmdGpuState>, BackendError> {
        let mut states = Vec::new();
        for bdf in self.host_mut().gpus()? {
            // Gone between the listing and the read: not a GPU of the host any more.
            if let Some(state) = self.host_mut().gpu(bdf)? {
                states.push(state);
            }
        }
        Ok(states)
    }

    fn listing(&mut self) -> Result<Vec<AmdSmiGpu>, BackendError> {
        let text = self.host_mut().list()?;
        Ok(parse_list(&text).map_err(AmdSmiError::from)?)
    }

    /// The GPUs of sysfs one ID names: a PCI address directly; an amd-smi ID or UUID through
    /// `amd-smi list` (`listing`, read once when first needed).
    fn named_by(
        &mut self,
        id: &ResetId,
        states: &[AmdGpuState],
        listing: &mut Option<Vec<AmdSmiGpu>>,
    ) -> Result<AmdGpuState, Refusal> {
        let in_sysfs = |bdf: Bdf| states.iter().find(|state| state.bdf == bdf).cloned();
        if let ResetId::Bus(bdf) = id {
            return in_sysfs(*bdf).ok_or_else(|| unknown(format!("{bdf} is no AMD GPU in sysfs")));
        }
        let rows = match listing {
            Some(rows) => rows,
            None => listing.insert(self.listing()?),
        };
        let hits: Vec<&AmdSmiGpu> = rows
            .iter()
            .filter(|row| match row.bdf {
                Some(bdf) => id.names(row.index, bdf, row.uuid.as_deref()),
                None => matches!(id, ResetId::Index(index) if *index == row.index),
            })
            .collect();
        let row = match hits.as_slice() {
            [] => {
                return Err(unknown(format!(
                    "{:?} names no GPU of amd-smi list",
                    id.to_string()
                )));
            }
            [row] => *row,
            [..] => {
                let ids: Vec<String> = hits.iter().map(|row| row.index.to_string()).collect();
                return Err(unknown(format!(
                    "{:?} names {} GPUs of amd-smi list (IDs {}); name one by its PCI address",
                    id.to_string(),
                    hits.len(),
                    ids.join(", ")
                )));
            }
        };
        let Some(bdf) = row.bdf else {
            return Err(unknown(format!(
                "amd-smi list gives GPU {} no PCI address (BDF: N/A)",
                row.index
            )));
        };
        in_sysfs(bdf).ok_or_else(|| {
            unknown(format!(
                "GPU {} of amd-smi list is at {bdf}, which is no AMD GPU in sysfs (in CPX a \
                 partition shows its GPU's address with the partition as function); name the \
                 GPU by its PCI address",
                row.index
            ))
        })
    }

    /// Why a GPU of the group may not be reset now, if anything: not driven by amdgpu, or in
    /// reset already. `named` tells the GPU asked for from another GPU of its hive.
    fn unready(state: &AmdGpuState, named: bool) -> Option<Refusal> {
        let (reason, what) = if !state.on_amdgpu() {
            (
                BlockedReason::DriverNotLoaded,
                format!(
                    "is bound to {}, not amdgpu: amd-smi resets only the GPUs amdgpu drives",
                    state.driver.as_deref().unwrap_or("no driver")
                ),
            )
        } else if state.in_reset() {
            (
                BlockedReason::GpuBusy,
                "is in reset now (its partition files answer EPERM)".to_owned(),
            )
        } else {
            return None;
        };
        Some(if named {
            Refusal::new(reason, format!("{} {what}", state.bdf))
        } else {
            Refusal::new(
                BlockedReason::GroupInUse,
                format!(
                    "the kernel resets the XGMI hive together, and {} of the hive {what}",
                    state.bdf
                ),
            )
        })
    }
}

impl<H: AmdHost> Backend for AmdBackend<H> {
    backend_asks_host!();

    fn prepare(&mut self) -> Result<Vec<ResetWarning>, Refusal> {
        // The `amdgpu` module's use count is no idle test (KFD and DRM clients hold it); who
        // holds the group's device files is looked at once the group is known.
        self.host_mut().find_amd_smi()?;
        Ok(Vec::new())
    }

    fn resolve(&mut self, target: &ResetTarget) -> Result<(Target, Vec<ResetWarning>), Refusal> {
        let states = self.states()?;
        let named: Vec<AmdGpuState> = match target {
            ResetTarget::All => {
                if states.is_empty() {
                    return Err(unknown("no AMD GPU in sysfs".to_owned()));
                }
                states.clone()
            }
            ResetTarget::Named(ids) => {
                let mut listing = None;
                let mut named: Vec<AmdGpuState> = Vec::new();
                for id in ids {
                    let gpu = self.named_by(id, &states, &mut listing)?;
                    if !named.iter().any(|other| other.bdf == gpu.bdf) {
                        named.push(gpu);
                    }
                }
                named
            }
        };
        let mut group: Vec<&AmdGpuState> = states
            .iter()
            .filter(|state| {
                named.iter().any(|gpu| {
                    gpu.bdf == state.bdf || (gpu.hive.is_some() && gpu.hive == state.hive)
                })
            })
            .collect();
        group.sort_by_key(|state| state.bdf);
        for state in &group {
            let is_named = named.iter().any(|gpu| gpu.bdf == state.bdf);
            if let Some(refusal) = Self::unready(state, is_named) {
                return Err(refusal);
            }
        }
        // One GPU a hive: the kernel takes the rest of the hive along.
        let mut hives = BTreeSet::new();
        let reset: Vec<Bdf> = named
            .iter()
            .filter(|gpu| gpu.hive.is_none_or(|hive| hives.insert(hive)))
            .map(|gpu| gpu.bdf)
            .collect();
        let mut warnings = Vec::new();
        let peers: Vec<String> = group
            .iter()
            .filter(|state| !named.iter().any(|gpu| gpu.bdf == state.bdf))
            .map(|state| state.bdf.to_string())
            .collect();
        if !peers.is_empty() {
            warnings.push(ResetWarning::HiveResetToo { peers });
        }
        let facts = AmdTarget {
            named: named.iter().map(before).collect(),
            group: group.into_iter().map(before).collect(),
            reset,
        };
        Ok((
            Target::new(&target.to_string(), TargetFacts::Amd(facts)),
            warnings,
        ))
    }

    fn check_use(&mut self, target: &Target) -> Result<Vec<ResetWarning>, Refusal> {
        let amd = target.facts_of::<AmdTarget>()?.clone();
        let named: Vec<Bdf> = amd.devices();
        // Whose render node each file is: the named GPUs' and /dev/kfd make the GPU busy; a
        // hive peer's makes the group in use.
        let mut files: Vec<(PathBuf, bool)> = vec![(PathBuf::from(KFD), true)];
        for gpu in &amd.group {
            let state = self
                .host_mut()
                .gpu(gpu.bdf)?
                .ok_or_else(|| unknown(format!("{} of the group is gone from sysfs", gpu.bdf)))?;
            let is_named = named.contains(&gpu.bdf);
            files.extend(
                state
                    .render_files()
                    .into_iter()
                    .map(|file| (file, is_named)),
            );
        }
        let paths: Vec<PathBuf> = files.iter().map(|(file, _)| file.clone()).collect();
        let holders = self.host_mut().holders(&paths)?;
        let busy = |holder: &&Holder| files.iter().any(|(file, own)| *own && *file == holder.file);
        let (own, peers): (Vec<Holder>, Vec<Holder>) = holders.into_iter().partition(|h| busy(&h));
        if !own.is_empty() {
            return Err(Refusal::new(
                BlockedReason::GpuBusy,
                format!(
                    "processes hold the GPU (a reset ends every holder of {KFD}): {}",
                    describe_holders(&own)
                ),
            ));
        }
        if !peers.is_empty() {
            return Err(Refusal::new(
                BlockedReason::GroupInUse,
                format!(
                    "the kernel resets the XGMI hive together, and processes hold other GPUs of \
                     it: {}",
                    describe_holders(&peers)
                ),
            ));
        }
        Ok(Vec::new())
    }

    fn reset(&mut self, target: &Target, within: Duration) -> ResetEnd {
        let amd = match target.facts_of::<AmdTarget>() {
            Ok(amd) => amd.clone(),
            Err(error) => return ResetEnd::Failed(error),
        };
        let (command, code, text) = match self.host_mut().reset(&amd.reset, within).exited() {
            Ok(exited) => exited,
            Err(end) => return end,
        };
        let said = read_reset_output(&text);
        if code == 0 && said.failed.is_empty() {
            if !said.says_reset(amd.reset.len()) {
                // The success words are amd-smi's source's, not a published run's: the
                // read-back of sysfs decides.
                tracing::warn!(
                    %command,
                    unknown = ?said.unknown,
                    succeeded = said.succeeded,
                    "amd-smi reset ended 0 without the words this version knows; verifying"
                );
            }
            return ResetEnd::Finished;
        }
        ResetEnd::Failed(
            AmdSmiError::ResetFailed {
                command,
                code,
                said: said_last(&text),
            }
            .into(),
        )
    }

    fn check_back(&mut self, target: &Target) -> Back {
        let amd = match target.facts_to_verify::<AmdTarget>() {
            Ok(amd) => amd,
            Err(wrong) => return wrong,
        };
        let mut faults: Vec<(Fault, Bdf, String)> = Vec::new();
        let mut wrong: Vec<String> = Vec::new();
        for was in &amd.group {
            let bdf = was.bdf;
            let now = match self.host_mut().gpu(bdf) {
                Err(error) => {
                    faults.push((Fault::Missing, bdf, error.said()));
                    continue;
                }
                Ok(None) => {
                    faults.push((Fault::Missing, bdf, "is gone from sysfs".to_owned()));
                    continue;
                }
                Ok(Some(now)) => now,
            };
            if now.identity.vendor == GONE_VENDOR {
                faults.push((
                    Fault::Missing,
                    bdf,
                    "reads vendor 0xffff (it fell off the bus)".to_owned(),
                ));
                continue;
            }
            if now.identity != was.identity {
                wrong.push(format!(
                    "{bdf} reads {} where it read {}",
                    now.identity, was.identity
                ));
                continue;
            }
            if now.hive != was.hive {
                let hive =
                    |hive: Option<u64>| hive.map_or("no hive".to_owned(), |h| format!("hive {h}"));
                wrong.push(format!(
                    "{bdf} is in {} where it was in {}",
                    hive(now.hive),
                    hive(was.hive)
                ));
                continue;
            }
            if !now.on_amdgpu() {
                faults.push((
                    Fault::Unavailable,
                    bdf,
                    format!(
                        "is bound to {}, not amdgpu",
                        now.driver.as_deref().unwrap_or("no driver")
                    ),
                ));
                continue;
            }
            for (name, before, file) in [
                (
                    "current_compute_partition",
                    was.compute_partition.as_deref(),
                    &now.compute_partition,
                ),
                (
                    "current_memory_partition",
                    was.memory_partition.as_deref(),
                    &now.memory_partition,
                ),
            ] {
                if let Some((fault, what)) = partition_back(name, before, file) {
                    faults.push((fault, bdf, what));
                }
            }
        }
        if !wrong.is_empty() {
            return Back::Wrong(NotBack::new(
                ColdRebootReason::TopologyWrong,
                wrong.join("; "),
            ));
        }
        let Some(worst) = faults.iter().map(|(fault, _, _)| *fault).max() else {
            return Back::Yes {
                warnings: Vec::new(),
            };
        };
        let mut devices: Vec<Bdf> = faults.iter().map(|(_, bdf, _)| *bdf).collect();
        devices.dedup();
        let detail: Vec<String> = faults
            .iter()
            .map(|(_, bdf, what)| format!("{bdf} {what}"))
            .collect();
        Back::NotYet(NotBack::new(worst.reason(), detail.join("; ")).devices(devices))
    }

    fn kernel_errors(&mut self, target: &Target) -> Result<Vec<String>, BackendError> {
        target.kernel_errors_of::<AmdTarget>(self.host_mut().kernel_log(), amd_device_errors)
    }

    fn survey(&mut self) -> Result<Survey, BackendError> {
        let states = self.states()?;
        let not_available = states
            .iter()
            .filter_map(|state| {
                if !state.on_amdgpu() {
                    Some(format!("{} is not driven by amdgpu", state.bdf))
                } else if state.in_reset() {
                    Some(format!("{} is in reset", state.bdf))
                } else {
                    None
                }
            })
            .collect();
        Ok(Survey {
            listed: states.len(),
            not_available,
        })
    }
}
