//! Whether a layout is applied ([`assert_applied`]): every GPU it names read under the host
//! lock, several at once, and compared with it by the rules of `layout_model::differences` (GPU
//! instances, compute instances and placements apart). It writes nothing.

use crate::apply::vgpu::{catalogue, counted};
use crate::apply::{ApplyError, ApplyOptions, resolve, resolve_vgpu};
use crate::document::Spec;
use crate::document::vgpu::VgpuSpec;
use crate::report::{ApplyReason, ApplyWarning, Draft};
use crate::select::HostGpu;
use crate::select::{VgpuJob, Wanted, want_of};
use gpu_host_probe::helper::{Helper, ReadFailure};
use gpu_host_probe::{Host, HostLock, LockError};
use gpu_partition_types::{Bdf, Reply};
use layout_model::Unnamed;
use layout_model::amd::AmdDeclared;
use layout_model::{Difference, Fact, differences};
use serde::Serialize;

/// What an assert reads with, the same for every vendor's assert ([`assert_applied`],
/// [`assert_vgpu`](crate::vgpu::assert_vgpu), [`assert_amd`](crate::amd::assert_amd)): the
/// host, its helper (which reads NVIDIA's cards) and the state store (which keeps AMD's memory
/// requests still waiting for a reload). An assert writes no card and saves no state; the store
/// is loaded, so give a read-only one (`host_sync::FileStore::read_only`), under which not even a
/// torn state file is set aside.
pub struct AssertRun<'a> {
    host: &'a Host,
    helper: &'a Helper,
    store: &'a mut dyn host_sync::StateStore,
}

impl std::fmt::Debug for AssertRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertRun")
            .field("host", self.host)
            .field("helper", self.helper)
            .finish_non_exhaustive()
    }
}

impl<'a> AssertRun<'a> {
    /// An assert on `host`, reading NVIDIA's cards through `helper` and the requests waiting
    /// from `store`.
    pub fn new(
        host: &'a Host,
        helper: &'a Helper,
        store: &'a mut dyn host_sync::StateStore,
    ) -> Self {
        Self {
            host,
            helper,
            store,
        }
    }
}

/// One GPU of the layout and how it differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GpuAssert {
    /// The card.
    pub device: Bdf,
    /// Its index.
    pub index: u32,
    /// The line of the layout's entry that names it (`None`: not read from a document).
    pub line: Option<usize>,
    /// How it differs (a card that did not read differs as `unread`); empty: as wanted.
    pub differences: Vec<Difference>,
}

/// How an assert ended: the layout holds, it does not, it names no GPU of this host, or the
/// cards could not be read at all (blocked, as an apply is: the lock held by another GPU
/// operation, the caller's cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssertOutcome {
    /// Every GPU the layout names is as it wants.
    Applied,
    /// The layout names no GPU of this host: nothing was read, and nothing is said to hold
    /// (as an apply of it ends [`ApplyOutcome::NothingNamed`](crate::ApplyOutcome)).
    NothingNamed,
    /// Some GPU differs (or did not read): the differences say how.
    Differs,
    /// Nothing was read.
    Blocked(ApplyReason),
}

impl AssertOutcome {
    /// Its token: `applied`, `nothing_named`, `differs` or `blocked`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::NothingNamed => "nothing_named",
            Self::Differs => "differs",
            Self::Blocked(_) => "blocked",
        }
    }
}

impl AssertOutcome {
    /// Why it was blocked; `None` otherwise.
    pub fn reason(self) -> Option<ApplyReason> {
        match self {
            Self::Blocked(reason) => Some(reason),
            Self::Applied | Self::NothingNamed | Self::Differs => None,
        }
    }
}

/// Whether a layout is applied: the document of `mxctl --json partition assert` (`label`,
/// `outcome` — `applied`, `nothing_named`, `differs`, `blocked` —, `reason` and `detail` of a
/// blocked one,
/// `applied`, `gpus`, `warnings`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AssertReport {
    /// The layout's label.
    pub label: String,
    /// How it ended (`outcome` and `reason` in JSON).
    pub outcome: AssertOutcome,
    /// What blocked it, for people (the lock's holder); `None` otherwise.
    pub detail: Option<String>,
    /// Every GPU it names is as it wants (`outcome` is `applied`).
    pub applied: bool,
    /// Each GPU it names, in index order.
    pub gpus: Vec<GpuAssert>,
    /// What a person should know (devices the layout lists that the host does not have).
    pub warnings: Vec<ApplyWarning>,
}

impl Serialize for AssertReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut report = serializer.serialize_struct("AssertReport", 7)?;
        report.serialize_field("label", &self.label)?;
        report.serialize_field("outcome", self.outcome.as_str())?;
        report.serialize_field(
            "reason",
            &self
                .outcome
                .reason()
                .map(gpu_partition_types::Token::as_str),
        )?;
        report.serialize_field("detail", &self.detail)?;
        report.serialize_field("applied", &self.applied)?;
        report.serialize_field("gpus", &self.gpus)?;
        report.serialize_field("warnings", &self.warnings)?;
        report.end()
    }
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

/// Whether the layout `specs` (labelled `label`) holds on this host: of `options`, the GPUs
/// asked for (`devices`, by the one rule an apply keeps), the wait for the lock (`lock_wait`;
/// held past it, the assert is blocked `lock_busy` naming the holder, as an apply is) and the
/// cancel.
pub fn assert_applied(
    run: AssertRun<'_>,
    label: &str,
    specs: &[Spec],
    options: &ApplyOptions,
) -> Result<AssertReport, ApplyError> {
    // The GPUs an apply of the same layout and options would want, each treating the
    // instances the layout does not name as the options say: one rule for both.
    let mut draft = Draft::new(label);
    let wanted = resolve(run.host, label, specs, options, &mut draft)?;
    assert_wanted(
        run.host,
        run.helper,
        label,
        wanted,
        draft.warnings,
        options,
        |w, reply| differences(reply, &w.want),
    )
}

/// Whether the vGPU config `specs` (named `label`) holds on this host: every GPU it names read
/// under the host lock, its MIG layout (as its catalogue sizes the config) compared as
/// [`assert_applied`] compares a layout, and its VFs' types with the config's counts (as a
/// sync compares a declaration). A config the card cannot hold differs (`vgpu_type`, with
/// why). It writes nothing.
pub fn assert_vgpu(
    run: AssertRun<'_>,
    label: &str,
    specs: &[VgpuSpec],
    options: &ApplyOptions,
) -> Result<AssertReport, ApplyError> {
    let mut draft = Draft::new(label);
    let AssertRun { host, helper, .. } = run;
    let wanted = resolve_vgpu(host, label, specs, options, &mut draft)?;
    let unnamed = options.unnamed.unwrap_or(Unnamed::Match);
    assert_wanted(
        host,
        helper,
        label,
        wanted,
        draft.warnings,
        options,
        |w, reply| {
            let Some(VgpuJob::Apply(spec)) = &w.vgpu else {
                return differences(reply, &w.want);
            };
            let Some(catalogue) = catalogue(reply) else {
                return vec![Difference::new(
                    w.gpu.bdf,
                    Fact::VgpuType {
                        why: "its vGPU type catalogue did not read".to_owned(),
                    },
                )];
            };
            let layout = match spec.sized_by(&catalogue) {
                Ok(layout) => layout,
                Err(error) => {
                    return vec![Difference::new(
                        w.gpu.bdf,
                        Fact::VgpuType {
                            why: error.to_string(),
                        },
                    )];
                }
            };
            let want = want_of(&layout).unnamed(unnamed);
            let mut found = differences(reply, &want);
            found.extend(counted(spec, &catalogue).drift(
                w.gpu.bdf,
                &host_sync::sriov::read_vf_types(host.sysfs_root(), w.gpu.bdf),
            ));
            found
        },
    )
}

/// The one assert: the cards of `wanted` read under the lock, each compared by `compare`.
fn assert_wanted(
    host: &Host,
    helper: &Helper,
    label: &str,
    wanted: Vec<Wanted>,
    warnings: Vec<ApplyWarning>,
    options: &ApplyOptions,
    compare: impl Fn(&Wanted, &Reply) -> Vec<Difference>,
) -> Result<AssertReport, ApplyError> {
    let unread = |outcome, detail: String, warnings| AssertReport {
        label: label.to_owned(),
        outcome,
        detail: Some(detail),
        applied: false,
        gpus: Vec::new(),
        warnings,
    };
    if wanted.is_empty() {
        return Ok(unread(
            AssertOutcome::NothingNamed,
            "the layout names no GPU of this host: nothing was read".to_owned(),
            warnings,
        ));
    }
    let lock = match assert_lock(host, options)? {
        Ok(lock) => lock,
        Err((reason, detail)) => {
            return Ok(unread(AssertOutcome::Blocked(reason), detail, Vec::new()));
        }
    };
    let gpus: Vec<HostGpu> = wanted.iter().map(|w| w.gpu.clone()).collect();
    let replies = read_cards(&lock, helper, &gpus);
    // The VFs are read under the lock too (an assert of a vGPU config).
    let compared: Vec<Vec<Difference>> = wanted
        .iter()
        .zip(replies)
        .map(|(w, reply)| match reply {
            Ok(reply) => compare(w, &reply),
            Err(failure) => vec![Difference::new(
                w.gpu.bdf,
                Fact::Unread {
                    reason: failure.reason,
                    detail: failure.message,
                },
            )],
        })
        .collect();
    drop(lock);
    let gpus: Vec<GpuAssert> = wanted
        .iter()
        .zip(compared)
        .map(|(w, differences)| GpuAssert {
            device: w.gpu.bdf,
            index: w.gpu.index,
            line: w.line,
            differences,
        })
        .collect();
    Ok(concluded(label, gpus, warnings))
}

/// The host lock for an assert, or why it is blocked (held past the wait, the caller's
/// cancel).
fn assert_lock(
    host: &Host,
    options: &ApplyOptions,
) -> Result<Result<HostLock, (ApplyReason, String)>, ApplyError> {
    match host.lock_unless(options.lock_wait, options.cancel.as_ref()) {
        Ok(lock) => Ok(Ok(lock)),
        Err(busy) if busy.is_busy() => Ok(Err((ApplyReason::LockBusy, busy.to_string()))),
        Err(cancelled @ LockError::Cancelled { .. }) => {
            Ok(Err((ApplyReason::Cancelled, cancelled.to_string())))
        }
        Err(error) => Err(ApplyError::Lock(error)),
    }
}

/// The report of an assert that read its GPUs: applied when none differs.
fn concluded(label: &str, gpus: Vec<GpuAssert>, warnings: Vec<ApplyWarning>) -> AssertReport {
    let applied = gpus.iter().all(|gpu| gpu.differences.is_empty());
    let outcome = if applied {
        AssertOutcome::Applied
    } else {
        AssertOutcome::Differs
    };
    AssertReport {
        label: label.to_owned(),
        outcome,
        detail: None,
        applied,
        gpus,
        warnings,
    }
}

/// Whether the Device Config Manager profile `profile` (named `label`) holds on this host's
/// AMD GPUs: each GPU it gives partitions (of `options.devices`, when given) read from sysfs
/// under the host lock and compared with them, by the rules a sync compares a declaration by
/// (a memory request of ours that still waits for a reload, from `store`, for another mode
/// differs: the next reload carries it out). It writes nothing.
pub fn assert_amd(
    run: AssertRun<'_>,
    label: &str,
    profile: &crate::amd::DcmProfile,
    options: &ApplyOptions,
) -> Result<AssertReport, ApplyError> {
    let AssertRun { host, store, .. } = run;
    let wanted = crate::apply::resolve_amd(host, label, profile, options)?;
    let report = |outcome, detail: &str| AssertReport {
        label: label.to_owned(),
        outcome,
        detail: Some(detail.to_owned()),
        applied: false,
        gpus: Vec::new(),
        warnings: Vec::new(),
    };
    if wanted.is_empty() {
        return Ok(report(
            AssertOutcome::NothingNamed,
            "the profile gives no AMD GPU of this host a partition: nothing was read",
        ));
    }
    let lock = match assert_lock(host, options)? {
        Ok(lock) => lock,
        Err((reason, detail)) => return Ok(report(AssertOutcome::Blocked(reason), &detail)),
    };
    let state = store.load()?.unwrap_or_default();
    let boot = host.boot().or(&state.boot);
    let gpus: Vec<GpuAssert> = wanted
        .iter()
        .map(|w| {
            let read = gpu_host_probe::amdgpu::read_partitions(host.sysfs_root(), w.gpu.bdf);
            let requested = match &read {
                Ok(Some(held)) => state
                    .gpus
                    .get(&w.gpu.bdf)
                    .and_then(|gpu| gpu.waiting_request(held, &boot)),
                Ok(None) | Err(_) => None,
            };
            GpuAssert {
                device: w.gpu.bdf,
                index: w.gpu.index,
                line: w.line,
                differences: AmdDeclared::new(w.want, Vec::new())
                    .drift(w.gpu.bdf, &layout_model::amd::AmdRead::of(&read, requested)),
            }
        })
        .collect();
    drop(lock);
    Ok(concluded(label, gpus, Vec::new()))
}
