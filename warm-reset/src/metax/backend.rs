//! [`MetaxBackend`]: the machine's questions answered on a MetaX host, from what a
//! [`MetaxHost`] prints, read by the [`mx_smi`](super::mx_smi) parsers: the same rules for the
//! real host ([`MxSmiBackend`]) and the simulated one ([`crate::SimMetax`]).

use super::error::MxSmiError;
use super::host::{MetaxHost, MxSmiHost};
use super::modules::DriverUse;
use super::mx_smi::{self, GpuRow, GpuState};
use super::target::MetaxTarget;
use crate::backend::{Back, Backend, BackendError, NotBack, Refusal, ResetEnd, Survey};
use crate::host_backend::HostBackend;
use crate::kmsg::error_messages;
use crate::reasons::{BlockedReason, ColdRebootReason};
use crate::reset_target::ResetTarget;
use crate::target::{Target, TargetFacts};
use crate::tool::{ToolEnd, ToolError};
use crate::warning::ResetWarning;
use gpu_host_probe::run::RunResult;
use std::time::Duration;

/// A MetaX host behind the machine's questions.
pub type MetaxBackend<H> = HostBackend<MetaxTarget, H>;

/// The real MetaX host: `mx-smi`, `/proc/modules`, the kernel log.
pub type MxSmiBackend = MetaxBackend<MxSmiHost>;

impl<H: MetaxHost> MetaxBackend<H> {
    /// Plain `mx-smi`, which must be MetaX's: its output is read for the versions and the
    /// processes.
    fn plain(&mut self) -> Result<String, BackendError> {
        let text = self.host_mut().plain()?;
        if !mx_smi::is_metax(&text) {
            return Err(MxSmiError::NotMetax {
                program: self.host().mx_smi_path(),
            }
            .into());
        }
        Ok(text)
    }

    fn rows(&mut self) -> Result<Vec<GpuRow>, BackendError> {
        let text = self.host_mut().listing()?;
        Ok(mx_smi::parse_listing(&text).map_err(MxSmiError::from)?)
    }

    fn topology(&mut self) -> Result<mx_smi::Topology, BackendError> {
        let text = self.host_mut().topology()?;
        Ok(mx_smi::parse_topology(&text).map_err(MxSmiError::from)?)
    }
}

impl<H: MetaxHost> Backend for MetaxBackend<H> {
    backend_asks_host!();

    fn prepare(&mut self) -> Result<Vec<ResetWarning>, Refusal> {
        self.host_mut().find_mx_smi()?;
        match self.host_mut().driver_use() {
            DriverUse::Loaded(0) => {}
            DriverUse::NotLoaded => {
                return Err(Refusal::new(
                    BlockedReason::DriverNotLoaded,
                    "no metax line in /proc/modules",
                ));
            }
            DriverUse::Loaded(count) => {
                return Err(Refusal::new(
                    BlockedReason::DriverInUse,
                    format!("the metax driver's use count is {count}"),
                ));
            }
            DriverUse::Unreadable(line) => {
                return Err(Refusal::new(
                    BlockedReason::DriverInUse,
                    format!("cannot read the metax use count: {line}"),
                ));
            }
        }
        // One plain `mx-smi` serves the versions and the processes.
        let text = self.plain()?;
        let unreadable = |error| Refusal::from(BackendError::from(MxSmiError::from(error)));
        let versions = mx_smi::parse_header(&text).map_err(unreadable)?;
        let check = mx_smi::check_versions(&versions);
        if !check.too_old.is_empty() {
            return Err(Refusal::new(
                BlockedReason::DriverTooOld,
                check.too_old.join("; "),
            ));
        }
        // Any process on any GPU blocks: the guide asks that nothing uses the driver, and the
        // kernel driver resets whole groups.
        let processes = mx_smi::parse_processes(&text).map_err(unreadable)?;
        if !processes.is_empty() {
            return Err(Refusal::new(
                BlockedReason::GpuBusy,
                format!(
                    "processes use the GPUs: {}",
                    mx_smi::describe_processes(&processes)
                ),
            ));
        }
        Ok(check
            .unreadable
            .into_iter()
            .map(ResetWarning::VersionUnchecked)
            .collect())
    }

    fn resolve(&mut self, target: &ResetTarget) -> Result<(Target, Vec<ResetWarning>), Refusal> {
        if let ResetTarget::Named(ids) = target
            && ids.len() > 1
        {
            return Err(Refusal::new(
                BlockedReason::UnknownDevice,
                format!(
                    "{:?} names {} GPUs; mx-smi resets one GPU, or all, a command",
                    target.to_string(),
                    ids.len()
                ),
            ));
        }
        let rows = self.rows()?;
        let Some(mut metax) = MetaxTarget::resolve(target, &rows) else {
            return Err(Refusal::new(
                BlockedReason::UnknownDevice,
                format!("{:?} names no GPU of mx-smi -L", target.to_string()),
            ));
        };
        let mut warnings = Vec::new();
        match self.topology() {
            Ok(topology) => metax.topology = Some(topology),
            Err(why) => warnings.push(ResetWarning::TopologyUnread {
                after_reset: false,
                why: why.said(),
            }),
        }
        Ok((
            Target::new(&target.to_string(), TargetFacts::Metax(metax)),
            warnings,
        ))
    }

    fn check_use(&mut self, _target: &Target) -> Result<Vec<ResetWarning>, Refusal> {
        // The process check is host-wide and ran with the host's (the guide's order).
        Ok(Vec::new())
    }

    fn reset(&mut self, target: &Target, within: Duration) -> ResetEnd {
        let metax = match target.facts_of::<MetaxTarget>() {
            Ok(metax) => metax,
            Err(error) => return ResetEnd::Failed(error),
        };
        match self.host_mut().reset(&metax.mx_smi_id, within) {
            ToolEnd::Exited {
                command,
                code: 0,
                said,
            } => match mx_smi::reset_failure(&said) {
                Some(line) => ResetEnd::Failed(MxSmiError::SaidFailed { command, line }.into()),
                None => ResetEnd::Finished,
            },
            ToolEnd::Exited {
                command,
                code,
                said,
            } => ResetEnd::Failed(
                MxSmiError::Tool(ToolError::Failed {
                    command,
                    result: RunResult::Exited(code),
                    stderr: said.into_bytes(),
                })
                .into(),
            ),
            ToolEnd::Hung => ResetEnd::Hung,
            ToolEnd::Failed(error) => ResetEnd::Failed(error),
        }
    }

    fn check_back(&mut self, target: &Target) -> Back {
        let metax = match target.facts_to_verify::<MetaxTarget>() {
            Ok(metax) => metax,
            Err(wrong) => return wrong,
        };
        let rows = match self.rows() {
            Ok(rows) => rows,
            Err(why) => {
                return Back::NotYet(NotBack::new(
                    ColdRebootReason::GpuMissing,
                    format!("mx-smi -L failed: {}", why.said()),
                ));
            }
        };
        match rows_back(&metax, &rows) {
            Err(not_back) => not_back,
            Ok(()) => match &metax.topology {
                None => Back::Yes {
                    warnings: Vec::new(),
                },
                Some(before) => match self.topology() {
                    Ok(after) => links_back(before, &after),
                    Err(why) => Back::Yes {
                        warnings: vec![ResetWarning::TopologyUnread {
                            after_reset: true,
                            why: why.said(),
                        }],
                    },
                },
            },
        }
    }

    fn kernel_errors(&mut self, _target: &Target) -> Result<Vec<String>, BackendError> {
        Ok(error_messages(
            self.host_mut().kernel_log().records_since_mark()?,
        ))
    }

    fn survey(&mut self) -> Result<Survey, BackendError> {
        let rows = self.rows()?;
        Ok(Survey {
            listed: rows.len(),
            not_available: not_available(&rows),
        })
    }
}

/// The rows that are not `Available`, as `GPU#n is STATE`.
fn not_available<'a>(rows: impl IntoIterator<Item = &'a GpuRow>) -> Vec<String> {
    rows.into_iter()
        .filter(|row| row.state != GpuState::Available)
        .map(|row| format!("GPU#{} is {}", row.node, row.state))
        .collect()
}

/// Whether every GPU listed before the reset is listed again, `Available`, in its place: `Ok`,
/// or why not (moved is wrong at once; missing or not available may still come).
fn rows_back(target: &MetaxTarget, rows: &[GpuRow]) -> Result<(), Back> {
    let back = |before: &GpuRow| rows.iter().find(|row| row.node == before.node);
    let missing: Vec<String> = target
        .before
        .iter()
        .filter(|before| back(before).is_none())
        .map(|before| format!("GPU#{} ({})", before.node, before.bdf))
        .collect();
    if !missing.is_empty() {
        return Err(Back::NotYet(NotBack::new(
            ColdRebootReason::GpuMissing,
            format!("not listed: {}", missing.join(", ")),
        )));
    }
    let unavailable = not_available(target.before.iter().filter_map(back));
    if !unavailable.is_empty() {
        return Err(Back::NotYet(NotBack::new(
            ColdRebootReason::GpuUnavailable,
            unavailable.join(", "),
        )));
    }
    let moved: Vec<String> = target
        .before
        .iter()
        .filter(|before| back(before).is_some_and(|row| !row.same_place(before)))
        .map(|before| format!("GPU#{}", before.node))
        .collect();
    if !moved.is_empty() {
        return Err(Back::Wrong(NotBack::new(
            ColdRebootReason::TopologyWrong,
            format!("PCI address or UUID changed: {}", moved.join(", ")),
        )));
    }
    Ok(())
}

/// Every MetaXLink link of before is back, or which are not.
fn links_back(before: &mx_smi::Topology, after: &mx_smi::Topology) -> Back {
    let lost = before.lost_links(after);
    if lost.is_empty() {
        return Back::Yes {
            warnings: Vec::new(),
        };
    }
    let lost: Vec<String> = lost
        .iter()
        .map(|(a, b)| format!("GPU#{a}-GPU#{b}"))
        .collect();
    Back::Wrong(NotBack::new(
        ColdRebootReason::TopologyWrong,
        format!("MetaXLink not back: {}", lost.join(", ")),
    ))
}
