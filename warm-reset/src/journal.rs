//! The journal: a reset in flight (target, start, boot id) in the host's state directory, so a
//! restarted run never issues a second reset inside the window; how the last run ended (for
//! monitoring); and the results of plan steps, so a step run twice does its work once.
//!
//! It is written only under the host lock: the writer, [`Journal`], is made from a held
//! [`HostLock`] and lives in the lock's own state directory, so no run can write another
//! directory's journal, or write this one while another operation holds the lock. Anyone may
//! read it ([`read_journal`], [`last_reset`]): it is replaced whole, so a read sees one whole
//! file.

use crate::machine::{JournalView, PendingColdReboot};
use crate::plan_step_report::PlanStepReport;
use crate::reasons::ResetOutcome;
use crate::target::Target;
use gpu_host_probe::{Host, HostLock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The journal file's name inside the state directory.
pub const JOURNAL_FILE: &str = "warm-reset-journal.json";

/// A reset in flight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InFlight {
    /// Its GPUs.
    pub target: Target,
    /// When the reset was issued (Unix milliseconds).
    pub started_unix_ms: u64,
    /// Its window in milliseconds.
    pub window_ms: u64,
    /// The kernel's boot id then, when it was readable.
    pub boot_id: Option<String>,
}

impl InFlight {
    pub(crate) fn new(
        target: Target,
        started_unix_ms: u64,
        window_ms: u64,
        boot_id: Option<String>,
    ) -> Self {
        Self {
            target,
            started_unix_ms,
            window_ms,
            boot_id,
        }
    }
}

/// The result of one plan step, kept so a rerun reports it instead of acting again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StepRecord {
    /// The step's whole report, as `--json` printed it.
    pub report: RecordedStep,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: ResetOutcome,
}

impl StepRecord {
    pub(crate) fn new(report: PlanStepReport) -> Self {
        Self {
            outcome: report.outcome,
            report: RecordedStep::Read(Box::new(report)),
        }
    }
}

/// A step's report as the journal holds it: read, or — a hand edit, a later version's — kept
/// as it was, so the journal's other records still read and a save loses nothing of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedStep {
    /// The report.
    Read(Box<PlanStepReport>),
    /// What the journal holds instead, which does not read as a report.
    Unread(serde_json::Value),
}

impl RecordedStep {
    /// The report, or why what the journal holds is none.
    pub fn report(&self) -> Result<PlanStepReport, serde_json::Error> {
        match self {
            Self::Read(report) => Ok(report.as_ref().clone()),
            Self::Unread(value) => serde_json::from_value(value.clone()),
        }
    }
}

impl Serialize for RecordedStep {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Read(report) => report.serialize(serializer),
            Self::Unread(value) => value.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for RecordedStep {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(
            match serde_json::from_value::<PlanStepReport>(value.clone()) {
                Ok(report) => Self::Read(Box::new(report)),
                Err(_) => Self::Unread(value),
            },
        )
    }
}

/// How the last reset on this host ended: done or needing a cold reboot, recorded by the run
/// that issued it (or that verified it after an earlier run died). A blocked run and a dry run
/// record nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LastReset {
    /// How it ended (`outcome` and `reason` in the file).
    #[serde(flatten)]
    pub outcome: ResetOutcome,
    /// The ID it was given.
    pub target: String,
    /// When it ended (Unix milliseconds).
    pub ended_unix_ms: u64,
}

impl LastReset {
    pub(crate) fn new(outcome: ResetOutcome, target: &str, ended_unix_ms: u64) -> Self {
        Self {
            outcome,
            target: target.to_owned(),
            ended_unix_ms,
        }
    }
}

/// What the journal file holds (read with [`read_journal`]; written only by the runs).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JournalFile {
    /// The reset in flight, if any.
    #[serde(default)]
    pub in_flight: Option<InFlight>,
    /// How the last run ended, once one has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastReset>,
    /// Finished plan steps, by key.
    #[serde(default)]
    pub steps: BTreeMap<String, StepRecord>,
    /// The resets that ended needing a cold reboot, in the boot they ended in (those of an
    /// earlier boot are dropped once the boot id tells).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cold_reboot: Vec<PendingColdReboot>,
}

impl JournalFile {
    /// The resets of the boot `boot_id` (or of a boot that cannot be told apart) that ended
    /// needing a cold reboot of one of `devices`.
    pub fn cold_reboots(
        &self,
        boot_id: Option<&str>,
        devices: &[gpu_partition_types::Bdf],
    ) -> Vec<PendingColdReboot> {
        self.cold_reboot
            .iter()
            .filter(|pending| pending.holds_in(boot_id))
            .filter(|pending| {
                pending
                    .devices
                    .iter()
                    .any(|device| devices.contains(device))
            })
            .cloned()
            .collect()
    }
}

/// The journal could not be used; a run never guesses past it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The file could not be read.
    #[error("cannot read the reset journal {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file does not read; it is left as it is for a person to look at.
    #[error("the reset journal {} does not read; look at it, then move it away", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        #[source]
        source: serde_json::Error,
    },
    /// The journal could not be put into JSON.
    #[error("cannot encode the reset journal")]
    Encode(#[source] serde_json::Error),
    /// The file could not be written.
    #[error("cannot write the reset journal")]
    Write(#[from] gpu_host_probe::fs::WriteError),
}

impl InFlight {
    /// Whether its window is over at `now_unix_ms` (its start plus its window).
    fn spent(&self, now_unix_ms: u64) -> bool {
        now_unix_ms >= self.started_unix_ms.saturating_add(self.window_ms)
    }

    /// How long its window has left at `now_unix_ms` (none once it is over).
    fn left(&self, now_unix_ms: u64) -> Option<std::time::Duration> {
        let ends = self.started_unix_ms.saturating_add(self.window_ms);
        (!self.spent(now_unix_ms))
            .then(|| std::time::Duration::from_millis(ends.saturating_sub(now_unix_ms)))
    }

    /// Whether it was journalled in another boot than `boot_id` (both known): the host was
    /// rebooted since, and it is over.
    fn of_another_boot(&self, boot_id: Option<&str>) -> bool {
        matches!((self.boot_id.as_deref(), boot_id), (Some(then), Some(now)) if then != now)
    }
}

/// A reset the journal of `lock`'s host records in flight, of this boot, whose window is not
/// over on `clock`: what it resets, and how long its window has left. What a caller that must
/// not issue a second reset inside it waits out, on the clock it was given, before it runs the
/// machine (which then verifies that reset rather than refuse): the journal's rule, asked of
/// the journal, never re-derived.
pub fn window_left(
    lock: &HostLock,
    clock: &dyn gpu_host_probe::Clock,
) -> Result<Option<(Target, std::time::Duration)>, JournalError> {
    let file = load(lock.state_dir())?;
    let Some(in_flight) = file.in_flight else {
        return Ok(None);
    };
    let boot_id = gpu_host_probe::read_boot_id(lock.host().proc_root());
    if in_flight.of_another_boot(boot_id.as_deref()) {
        return Ok(None);
    }
    Ok(in_flight
        .left(clock.unix_ms())
        .map(|left| (in_flight.target, left)))
}

/// What the journal of `host` holds now (empty when there is none). It needs no lock: the file
/// is replaced whole, so this is one whole file, as of some moment.
pub fn read_journal(host: &Host) -> Result<JournalFile, JournalError> {
    load(host.state_dir())
}

/// How the last reset on `host` ended, once one has.
pub fn last_reset(host: &Host) -> Result<Option<LastReset>, JournalError> {
    Ok(read_journal(host)?.last)
}

fn load(dir: &Path) -> Result<JournalFile, JournalError> {
    let path = dir.join(JOURNAL_FILE);
    match gpu_host_probe::fs::read_own(&path) {
        Ok(Some(bytes)) => {
            serde_json::from_slice(&bytes).map_err(|source| JournalError::Corrupt { path, source })
        }
        Ok(None) => Ok(JournalFile::default()),
        Err(source) => Err(JournalError::Read { path, source }),
    }
}

/// The journal's writer: made only from the held host lock, in the lock's state directory.
#[derive(Debug)]
pub(crate) struct Journal<'lock> {
    lock: &'lock HostLock,
}

impl<'lock> Journal<'lock> {
    /// The journal of the host whose lock is `lock`.
    pub(crate) fn new(lock: &'lock HostLock) -> Self {
        Self { lock }
    }

    fn dir(&self) -> &Path {
        self.lock.state_dir()
    }

    /// Reads the file (empty when there is none).
    pub(crate) fn load(&self) -> Result<JournalFile, JournalError> {
        load(self.dir())
    }

    /// Writes the file whole.
    fn store(&self, file: &JournalFile) -> Result<(), JournalError> {
        let mut bytes = serde_json::to_vec_pretty(file).map_err(JournalError::Encode)?;
        bytes.push(b'\n');
        gpu_host_probe::fs::remove_stale_temporaries(self.dir(), JOURNAL_FILE);
        gpu_host_probe::fs::write_atomic(self.dir(), JOURNAL_FILE, &bytes)?;
        Ok(())
    }

    /// What the journal says now. A reset recorded under another boot id is closed (the host
    /// was rebooted); without a readable boot id the record holds until its window ends.
    pub(crate) fn view(
        &self,
        now_unix_ms: u64,
        boot_id: Option<&str>,
    ) -> Result<JournalView, JournalError> {
        let mut file = self.load()?;
        let Some(in_flight) = file.in_flight.clone() else {
            return Ok(JournalView::Clear);
        };
        if in_flight.of_another_boot(boot_id) {
            tracing::info!(
                "the host was rebooted since the reset of {}; journal closed",
                in_flight.target.id
            );
            file.in_flight = None;
            self.store(&file)?;
            return Ok(JournalView::Clear);
        }
        let window_spent = in_flight.spent(now_unix_ms);
        Ok(JournalView::InFlight {
            target: in_flight.target,
            window_spent,
        })
    }

    /// Records a reset in flight.
    pub(crate) fn begin(&self, in_flight: InFlight) -> Result<(), JournalError> {
        let mut file = self.load()?;
        file.in_flight = Some(in_flight);
        self.store(&file)
    }

    /// Records how the last run ended.
    pub(crate) fn record_last(&self, last: LastReset) -> Result<(), JournalError> {
        let mut file = self.load()?;
        file.last = Some(last);
        self.store(&file)
    }

    /// Records a reset that ended needing a cold reboot (dropping those of other boots).
    pub(crate) fn record_cold_reboot(
        &self,
        pending: PendingColdReboot,
    ) -> Result<(), JournalError> {
        let mut file = self.load()?;
        let boot_id = pending.boot_id.clone();
        file.cold_reboot
            .retain(|earlier| earlier.holds_in(boot_id.as_deref()));
        file.cold_reboot.push(pending);
        self.store(&file)
    }

    /// Records a finished plan step, keeping everything else the file holds.
    pub(crate) fn record_step(&self, key: String, record: StepRecord) -> Result<(), JournalError> {
        let mut file = self.load()?;
        file.steps.insert(key, record);
        self.store(&file)
    }

    /// Records that the reset in flight ended.
    pub(crate) fn close(&self) -> Result<(), JournalError> {
        let mut file = self.load()?;
        if file.in_flight.take().is_some() {
            self.store(&file)?;
        }
        Ok(())
    }
}
