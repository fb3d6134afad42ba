//! Whether a layout is applied ([`assert_applied`]): every GPU it names read under the host
//! lock, several at once, and compared with it by the rules of `layout_model::differences` (GPU
//! instances, compute instances and placements apart). It writes nothing.

use crate::apply::ApplyError;
use crate::document::Spec;
use crate::report::ApplyWarning;
use crate::select::{HostGpu, host_gpus, select};
use gpu_host_probe::helper::{Helper, ReadFailure};
use gpu_host_probe::{Host, HostLock};
use gpu_partition_types::{Bdf, Reply};
use layout_model::{Difference, Fact, differences};
use serde::Serialize;
use std::time::Duration;

/// One GPU of the layout and how it differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GpuAssert {
    /// The card.
    #[serde(serialize_with = "crate::report::bdf")]
    pub device: Bdf,
    /// Its index.
    pub index: u32,
    /// The line of the layout's entry that names it (`None`: not read from a document).
    pub line: Option<usize>,
    /// How it differs (a card that did not read differs as `unreadable`); empty: as wanted.
    pub differences: Vec<Difference>,
}

/// Whether a layout is applied: the document of `mxctl --json partition assert` (`label`,
/// `applied`, `gpus`, `warnings`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AssertReport {
    /// The layout's label.
    pub label: String,
    /// Every GPU it names is as it wants.
    pub applied: bool,
    /// Each GPU it names, in index order.
    pub gpus: Vec<GpuAssert>,
    /// What a person should know (devices the layout lists that the host does not have).
    pub warnings: Vec<ApplyWarning>,
}

/// Reads every GPU of `gpus` under `lock`, several at once: `--version` once, then each card's
/// whole reply, or why there is none.
pub(crate) fn read_cards(
    lock: &HostLock,
    helper: &Helper,
    gpus: &[HostGpu],
) -> Vec<Result<Reply, ReadFailure>> {
    let devices: Vec<Bdf> = gpus.iter().map(|gpu| gpu.bdf).collect();
    helper
        .probe_locked(lock, &devices)
        .into_iter()
        .map(gpu_host_probe::helper::CardRead::into_reply)
        .collect()
}

/// Whether the layout `specs` (labelled `label`) holds on this host (only on `devices` when
/// given), waiting up to `lock_wait` for the host lock.
pub fn assert_applied(
    host: &Host,
    helper: &Helper,
    specs: &[Spec],
    label: &str,
    devices: &[Bdf],
    lock_wait: Duration,
) -> Result<AssertReport, ApplyError> {
    let selection = select(specs, &host_gpus(host.sysfs_root())?)?;
    let mut wanted = selection.wanted;
    for device in devices {
        if !wanted.iter().any(|w| w.gpu.bdf == *device) {
            return Err(ApplyError::NotNamed {
                device: *device,
                label: label.to_owned(),
            });
        }
    }
    if !devices.is_empty() {
        wanted.retain(|w| devices.contains(&w.gpu.bdf));
    }
    let lock = host.lock(lock_wait).map_err(ApplyError::Lock)?;
    let gpus: Vec<HostGpu> = wanted.iter().map(|w| w.gpu.clone()).collect();
    let replies = read_cards(&lock, helper, &gpus);
    drop(lock);
    let gpus: Vec<GpuAssert> = wanted
        .iter()
        .zip(replies)
        .map(|(w, reply)| GpuAssert {
            device: w.gpu.bdf,
            index: w.gpu.index,
            line: w.line,
            differences: match reply {
                Ok(reply) => differences(&reply, &w.want),
                Err(failure) => vec![Difference::new(
                    w.gpu.bdf,
                    Fact::Unread {
                        reason: failure.reason,
                        detail: failure.message,
                    },
                )],
            },
        })
        .collect();
    Ok(AssertReport {
        label: label.to_owned(),
        applied: gpus.iter().all(|gpu| gpu.differences.is_empty()),
        gpus,
        warnings: selection
            .absent
            .into_iter()
            .map(ApplyWarning::Absent)
            .collect(),
    })
}
