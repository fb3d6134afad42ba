//! The helper client: `--version` once per run, then `read` per card, several cards at once,
//! and only under the host lock.

use super::config::HelperConfig;
use super::reason::reason_of;
use crate::host::Host;
use crate::lock::{HostLock, LockError};
use crate::run::{self, Run};
use gpu_partition_types::{
    ApplyAnswer, ApplyRequest, Bdf, FormatVersion, JsonPointer, LostMember, Outcome, Reply,
    UnreadableReason, VersionReply,
};
use serde::ser::SerializeStruct;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What reading one card gave.
///
/// It serializes to the shape of one card of `mxctl --json probe`: `device`, `outcome`,
/// `partition_mode`, `reason` (`""` unless unreadable), `message` (why, `null` unless
/// unreadable), `elapsed_ms`, `lost` and `unknown` (JSON Pointers).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CardRead {
    /// The card.
    pub device: Bdf,
    /// What the read says of it.
    pub outcome: Outcome,
    /// Why it is unreadable, for people: what the run did (with the end of its stderr), the
    /// member that refused the reply, the helper's own message, or why the helper was not run.
    /// `None` when the card was read.
    pub message: Option<String>,
    /// How long its helper run took (for a host-wide failure: the `--version` run's time).
    pub elapsed: Duration,
    /// Lenient members the reply lost.
    pub lost: Vec<LostMember>,
    /// Enumeration values the reply held that this reader does not know.
    pub unknown: Vec<JsonPointer>,
    /// The whole reply, when one was decoded (whatever its case): what a caller that compares
    /// the card with a layout reads.
    pub reply: Option<Box<Reply>>,
}

impl CardRead {
    /// The whole reply, or why there is none: a run that gave no reply, or a reply whose case
    /// is `unreadable`, is the failure with its reason and message (as [`Helper::read_reply`]).
    pub fn into_reply(self) -> Result<Reply, ReadFailure> {
        match (self.outcome, self.reply) {
            (Outcome::Unreadable(reason), _) => Err(ReadFailure::new(
                reason,
                self.message
                    .unwrap_or_else(|| format!("{} is unreadable", self.device)),
            )),
            (_, Some(reply)) => Ok(*reply),
            (_, None) => Err(ReadFailure::new(
                UnreadableReason::Undecodable,
                format!("{}: the read gave no reply", self.device),
            )),
        }
    }

    fn failed(device: Bdf, failure: ReadFailure, elapsed: Duration) -> Self {
        Self {
            device,
            outcome: Outcome::Unreadable(failure.reason),
            message: Some(failure.message),
            elapsed,
            lost: Vec::new(),
            unknown: Vec::new(),
            reply: None,
        }
    }
}

impl serde::Serialize for CardRead {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut card = serializer.serialize_struct("CardRead", 8)?;
        card.serialize_field("device", &self.device.to_string())?;
        card.serialize_field("outcome", &self.outcome.case())?;
        card.serialize_field("partition_mode", &self.outcome.partition_mode())?;
        let reason = self.outcome.reason().map(ToString::to_string);
        card.serialize_field("reason", reason.as_deref().unwrap_or(""))?;
        card.serialize_field("message", &self.message)?;
        card.serialize_field(
            "elapsed_ms",
            &u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
        )?;
        let lost: Vec<String> = self.lost.iter().map(|l| l.pointer.to_string()).collect();
        card.serialize_field("lost", &lost)?;
        let unknown: Vec<String> = self.unknown.iter().map(ToString::to_string).collect();
        card.serialize_field("unknown", &unknown)?;
        card.end()
    }
}

/// Why the helper gave no usable answer: the protocol's reason, and the message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadFailure {
    /// The reason (a token of the protocol).
    pub reason: UnreadableReason,
    /// What happened, with its causes.
    pub message: String,
}

/// Why `--version` gave no format to read with: the failure, which holds for every card, and
/// how long the run took (each card's read is reported with it).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unnegotiated {
    /// The failure.
    pub failure: ReadFailure,
    /// How long `--version` ran.
    pub elapsed: Duration,
}

impl ReadFailure {
    /// A failure for `reason`, explained by `message`.
    pub fn new(reason: UnreadableReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// Why the helper's `apply` gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ApplyFailure {
    /// The write could not be recorded in the machine's record of writes, so the helper was not
    /// run: nothing was written.
    #[error("the write could not be recorded, so the helper was not run")]
    NotRecorded(#[source] crate::RecordError),
    /// The helper may not run on this host (the machine's own, on a host whose roots are not
    /// the machine's): nothing was run, nothing written.
    #[error("the helper may not run on this host")]
    Refused(#[source] crate::ProgramRefused),
    /// The helper's run gave no usable answer (the batch may have written part of its steps).
    #[error("{0}")]
    Run(ReadFailure),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

/// The least stdout a run of a fan-out may capture, however many share the budget: a reply of a
/// card with many instances and vGPUs is some hundreds of kilobytes.
pub const MIN_SHARE: usize = 512 << 10;

/// How much of a failed run's stderr a message keeps (its end, where the cause usually is).
const STDERR_TAIL: usize = 512;

/// Runs the helper.
#[derive(Debug, Clone)]
pub struct Helper {
    config: HelperConfig,
}

impl Helper {
    /// A client for the helper `config` describes.
    pub fn new(config: HelperConfig) -> Self {
        Self { config }
    }

    /// The configuration.
    pub fn config(&self) -> &HelperConfig {
        &self.config
    }

    /// The same helper, every run of it ended when `cancel` (if any) is triggered.
    pub fn ending_on(&self, cancel: Option<&crate::Cancel>) -> Helper {
        match cancel {
            Some(cancel) => Helper::new(self.config.clone().cancel(cancel.clone())),
            None => self.clone(),
        }
    }

    /// Runs `--version` and picks the `read` format: the highest of major 1. A failure here
    /// holds for every card: the reason of the run, `undecodable`, or `incompatible`, with
    /// its message. (It reads no card, so it needs no lock.)
    pub fn negotiate(&self) -> Result<FormatVersion, Unnegotiated> {
        self.negotiate_command("read")
    }

    /// Runs `--version` and picks the `apply` format: the highest of major 1 (`incompatible`
    /// for a helper that only reads).
    pub fn negotiate_apply(&self) -> Result<FormatVersion, ReadFailure> {
        self.negotiate_command("apply")
            .map_err(|unnegotiated| unnegotiated.failure)
    }

    fn negotiate_command(&self, command: &str) -> Result<FormatVersion, Unnegotiated> {
        let run = self.run(vec!["--version".into()], "--version");
        let negotiated = match self.run_failure(&run, "--version") {
            Some(failure) => Err(failure),
            None => match VersionReply::from_json(&run.stdout) {
                Err(refusal) => Err(ReadFailure::new(
                    UnreadableReason::Undecodable,
                    format!("{} --version: {refusal}", self.name()),
                )),
                Ok(version) => version.negotiate(command).map_err(|incompatible| {
                    ReadFailure::new(
                        UnreadableReason::Incompatible,
                        format!("{}: {incompatible}", self.name()),
                    )
                }),
            },
        };
        negotiated.map_err(|failure| {
            tracing::debug!("{failure}");
            Unnegotiated {
                failure,
                elapsed: run.elapsed,
            }
        })
    }

    /// Reads one card with the negotiated `format`, under the host lock `_lock` (held, so the
    /// card is never read inside a warm reset's window).
    pub fn read(&self, lock: &HostLock, device: Bdf, format: FormatVersion) -> CardRead {
        if let Some(failure) = self.refused_under(lock) {
            return CardRead::failed(device, failure, Duration::ZERO);
        }
        self.read_one(device, format)
    }

    fn read_one(&self, device: Bdf, format: FormatVersion) -> CardRead {
        self.read_within(device, format, self.config.limits.stdout)
    }

    /// Reads one card, its captured output bounded by `stdout_cap`.
    fn read_within(&self, device: Bdf, format: FormatVersion, stdout_cap: usize) -> CardRead {
        match self.run_read(device, format, stdout_cap) {
            Err((failure, elapsed)) => CardRead::failed(device, failure, elapsed),
            Ok((reply, elapsed)) => {
                let outcome = reply.outcome();
                let message = unreadable_message(&reply, &outcome);
                if let Some(message) = &message {
                    tracing::debug!("{message}");
                }
                CardRead {
                    device,
                    outcome,
                    message,
                    elapsed,
                    lost: reply.lost().into_iter().cloned().collect(),
                    unknown: reply.unknown(),
                    reply: Some(Box::new(reply)),
                }
            }
        }
    }

    /// Reads one card with the negotiated `format`, under the host lock `_lock`, and gives the
    /// whole reply (its instances with their placements and compute instances, the catalogue,
    /// the vGPUs, the processes): what a planner diffs. A run that gives no reply, and a reply
    /// whose case is `unreadable`, are the failure, with its reason and message.
    pub fn read_reply(
        &self,
        lock: &HostLock,
        device: Bdf,
        format: FormatVersion,
    ) -> Result<Reply, ReadFailure> {
        if let Some(failure) = self.refused_under(lock) {
            return Err(failure);
        }
        let (reply, _) = self
            .run_read(device, format, self.config.limits.stdout)
            .map_err(|(failure, _)| failure)?;
        let outcome = reply.outcome();
        match (&outcome, unreadable_message(&reply, &outcome)) {
            (Outcome::Unreadable(reason), Some(message)) => {
                Err(ReadFailure::new(reason.clone(), message))
            }
            _ => Ok(reply),
        }
    }

    /// Runs `read` and decodes its reply (of any case), or why there is none.
    fn run_read(
        &self,
        device: Bdf,
        format: FormatVersion,
        stdout_cap: usize,
    ) -> Result<(Reply, Duration), (ReadFailure, Duration)> {
        let (mut spec, what) = self.device_command("read", device, format);
        spec.limits.stdout = stdout_cap;
        let run = self.run_spec(spec, &what);
        if let Some(failure) = self.run_failure(&run, &what) {
            return Err((failure, run.elapsed));
        }
        match Reply::from_json(&run.stdout, Some(&device)) {
            Ok(reply) => Ok((reply, run.elapsed)),
            Err(refusal) => {
                let failure = ReadFailure::new(
                    UnreadableReason::Undecodable,
                    format!("{} {what}: {refusal}", self.name()),
                );
                tracing::debug!("{failure}");
                Err((failure, run.elapsed))
            }
        }
    }

    /// Runs `apply` on `device` with `request` (the `format` of [`Helper::negotiate_apply`]),
    /// under the host lock `lock`: the helper's answer, or why there is none (the reasons of
    /// a read: `timeout`, `busy` for exit 75, `crash` for any other failure — a request the
    /// helper refuses exits 2 —, `undecodable` for an answer that does not read), with its
    /// message. Before the helper runs, the write is recorded in the machine's record of writes
    /// ([`HostLock::record_write`]): an observation of the card made before it is over, whatever
    /// the batch then does; a write that cannot be recorded is not made.
    pub fn apply(
        &self,
        lock: &HostLock,
        device: Bdf,
        format: FormatVersion,
        request: &ApplyRequest,
    ) -> Result<ApplyAnswer, ApplyFailure> {
        self.config
            .program
            .allowed_on(lock.host())
            .map_err(ApplyFailure::Refused)?;
        lock.record_write(&[device], crate::Writer::HelperApply)
            .map_err(ApplyFailure::NotRecorded)?;
        self.run_apply(device, format, request)
            .map_err(ApplyFailure::Run)
    }

    fn run_apply(
        &self,
        device: Bdf,
        format: FormatVersion,
        request: &ApplyRequest,
    ) -> Result<ApplyAnswer, ReadFailure> {
        let (spec, what) = self.device_command("apply", device, format);
        let spec = spec.stdin(request.to_json());
        let run = self.run_spec(spec, &what);
        if let Some(failure) = self.run_failure(&run, &what) {
            return Err(failure);
        }
        ApplyAnswer::from_json(&run.stdout, &device).map_err(|refused| {
            ReadFailure::new(
                UnreadableReason::Undecodable,
                format!("{} {what}: {refused}", self.name()),
            )
        })
    }

    /// Reads every card in `devices` under the host lock of `host` (waiting up to `lock_wait`
    /// for another GPU operation to let go, [`crate::DEFAULT_LOCK_WAIT`] as a sync does):
    /// `--version` once, then the cards several at once (up to the configured concurrency).
    /// Each card gets its own outcome, in the order given; a host-wide failure is given to
    /// every card without forking per card.
    ///
    /// It blocks at worst for `lock_wait`, the `--version` deadline, then one read deadline
    /// per `concurrency` cards (with the kill grace of a run that overran). With
    /// [`HelperConfig::cancel`](super::HelperConfig::cancel) set, a cancel ends the wait for
    /// the lock ([`LockError::Cancelled`]) or, once the lock is held, every run in progress as
    /// a deadline would and every card not read yet, each then `unknown (cancelled)`.
    pub fn probe(
        &self,
        host: &Host,
        devices: &[Bdf],
        lock_wait: Duration,
    ) -> Result<Vec<CardRead>, LockError> {
        let lock = host.lock_unless(lock_wait, self.config.cancel.as_ref())?;
        Ok(self.probe_locked(&lock, devices))
    }

    /// [`Helper::probe`] for a caller that already holds the host lock.
    pub fn probe_locked(&self, lock: &HostLock, devices: &[Bdf]) -> Vec<CardRead> {
        if devices.is_empty() {
            return Vec::new();
        }
        let format = match self.negotiate() {
            Ok(format) => format,
            Err(Unnegotiated { failure, elapsed }) => {
                return devices
                    .iter()
                    .map(|device| CardRead::failed(*device, failure.clone(), elapsed))
                    .collect();
            }
        };
        self.read_all(lock, devices, format)
    }

    /// Reads every card in `devices` with a `format` already negotiated, under the host lock
    /// `_lock`, several at once (up to the configured concurrency); each card gets its own
    /// outcome, in the order given.
    pub fn read_all(
        &self,
        lock: &HostLock,
        devices: &[Bdf],
        format: FormatVersion,
    ) -> Vec<CardRead> {
        if devices.is_empty() {
            return Vec::new();
        }
        if let Some(failure) = self.refused_under(lock) {
            return devices
                .iter()
                .map(|device| CardRead::failed(*device, failure.clone(), Duration::ZERO))
                .collect();
        }
        let next = AtomicUsize::new(0);
        let reads: Vec<Mutex<Option<CardRead>>> =
            devices.iter().map(|_| Mutex::new(None)).collect();
        let workers = self.config.concurrency.clamp(1, devices.len());
        // One budget for the captured output of every run in flight: each has its share, so
        // the memory a fan-out holds does not grow with it; a run over its share is output too
        // large, as over the whole cap, and the others are unharmed.
        let share = share_of(self.config.limits.stdout, workers);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(device) = devices.get(index) else {
                            break;
                        };
                        // A card not begun when the call is cancelled is not read at all (a
                        // run is never started then; one in progress ends as at a deadline).
                        let read = self.read_within(*device, format, share);
                        if let Some(Ok(mut slot)) = reads.get(index).map(Mutex::lock) {
                            *slot = Some(read);
                        }
                    }
                });
            }
        });
        reads
            .into_iter()
            .zip(devices)
            .map(|(slot, device)| {
                slot.into_inner().ok().flatten().unwrap_or_else(|| {
                    // Only a panicking worker leaves a slot empty; the card is then unread.
                    let failure = ReadFailure::new(
                        UnreadableReason::Crash,
                        format!("the reader of {device} panicked"),
                    );
                    CardRead::failed(*device, failure, Duration::ZERO)
                })
            })
            .collect()
    }

    fn run(&self, args: Vec<std::ffi::OsString>, what: &str) -> Run {
        self.run_spec(self.config.spec(args), what)
    }

    /// The run of the helper's `command` on `device` in `format`, and the words messages name
    /// it by: `read` and `apply`, the commands about one device, are called alike.
    fn device_command(
        &self,
        command: &str,
        device: Bdf,
        format: FormatVersion,
    ) -> (run::RunSpec, String) {
        let args = vec![
            command.into(),
            "--device".into(),
            device.to_string().into(),
            "--format".into(),
            format.major.to_string().into(),
        ];
        (
            self.config.spec(args),
            format!("{command} --device {device}"),
        )
    }

    fn run_spec(&self, spec: run::RunSpec, what: &str) -> Run {
        // With a wrapper the runner checks the wrapper; the helper must exist all the same.
        let run = match (
            &self.config.wrapper,
            run::check_program(self.config.program.path()),
        ) {
            (Some(_), Err(error)) => Run::not_started(error),
            _ => run::run(&spec),
        };
        tracing::debug!(
            "{} ({what}): {} in {:?}",
            self.name(),
            run.result,
            run.elapsed
        );
        if !run.stderr.is_empty() {
            tracing::debug!(
                "{} ({what}) stderr: {}",
                self.name(),
                String::from_utf8_lossy(&run.stderr).trim_end()
            );
        }
        run
    }

    /// Why `run` gave no stdout to decode, as the protocol's reason and a message: what the
    /// run did, with the end of its stderr when it wrote any.
    fn run_failure(&self, run: &Run, what: &str) -> Option<ReadFailure> {
        let reason = reason_of(&run.result)?;
        let mut message = match &run.result {
            run::RunResult::CouldNotStart(error) => format!("{error}"),
            run::RunResult::TimedOut => format!(
                "{} {what} did not answer within {:?}",
                self.name(),
                self.config.deadline
            ),
            result => format!("{} {what} {result}", self.name()),
        };
        let stderr = String::from_utf8_lossy(&run.stderr);
        let stderr = stderr.trim();
        if !stderr.is_empty() {
            let start = stderr
                .char_indices()
                .map(|(at, _)| at)
                .find(|at| stderr.len() - at <= STDERR_TAIL)
                .unwrap_or(stderr.len());
            let tail = stderr.get(start..).unwrap_or_default();
            let cut = if start > 0 { "…" } else { "" };
            message.push_str(&format!("; stderr: {cut}{}", tail.replace('\n', " / ")));
        }
        Some(ReadFailure::new(reason, message))
    }

    fn name(&self) -> String {
        self.config.program.path().display().to_string()
    }

    /// Why a read under `lock` may not start: the machine's own helper on a host whose roots
    /// are not the machine's would read the real machine's cards under the tree's addresses
    /// (`helper_unsafe`).
    fn refused_under(&self, lock: &HostLock) -> Option<ReadFailure> {
        let refused = self.config.program.allowed_on(lock.host()).err()?;
        Some(ReadFailure::new(
            UnreadableReason::HelperUnsafe,
            refused.to_string(),
        ))
    }
}

/// Each run's share of a fan-out's stdout budget, with `workers` runs in flight: the budget
/// divided among them, at least [`MIN_SHARE`], never more than the budget.
fn share_of(budget: usize, workers: usize) -> usize {
    (budget / workers.max(1)).max(MIN_SHARE).min(budget)
}

/// The message of a reply whose case is `unreadable`: the helper's own words when it gave some.
fn unreadable_message(reply: &Reply, outcome: &Outcome) -> Option<String> {
    let device = reply.device;
    match outcome {
        Outcome::Unreadable(_) => Some(match reply.unreadable.as_ref() {
            Some(unreadable) => match unreadable.message.read() {
                Some(said) => format!("the helper could not read {device}: {said}"),
                None => format!("the helper could not read {device} and gave no message"),
            },
            None => format!("the helper could not read {device}"),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fan_out_divides_its_stdout_budget_among_the_runs_in_flight() {
        const MIB: usize = 1 << 20;
        assert_eq!(share_of(4 * MIB, 1), 4 * MIB);
        assert_eq!(share_of(4 * MIB, 8), MIB / 2);
        assert_eq!(share_of(4 * MIB, 16), MIN_SHARE);
        assert_eq!(share_of(256 << 10, 8), 256 << 10);
        // Whatever the fan-out, the runs in flight hold at most the budget (or their minimum).
        for workers in 1..64 {
            assert!(share_of(4 * MIB, workers) * workers <= (4 * MIB).max(MIN_SHARE * workers));
        }
    }
}
