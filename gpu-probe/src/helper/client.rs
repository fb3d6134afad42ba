//! The helper client: `--version` once per run, then `read` per card, several cards at once.

use super::config::HelperConfig;
use super::reason::reason_of;
use crate::run::{self, Run};
use gpu_partition_types::{
    Bdf, FormatVersion, JsonPointer, LostMember, Outcome, Reply, UnreadableReason, VersionReply,
};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What reading one card gave.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CardRead {
    /// The card.
    pub device: Bdf,
    /// What the read says of it.
    pub outcome: Outcome,
    /// How long its helper run took (for a host-wide failure: the `--version` run's time).
    pub elapsed: Duration,
    /// Lenient members the reply lost.
    pub lost: Vec<LostMember>,
    /// Enumeration values the reply held that this reader does not know.
    pub unknown: Vec<JsonPointer>,
}

impl CardRead {
    fn failed(device: Bdf, reason: UnreadableReason, elapsed: Duration) -> Self {
        Self {
            device,
            outcome: Outcome::Unreadable(reason),
            elapsed,
            lost: Vec::new(),
            unknown: Vec::new(),
        }
    }
}

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

    /// Runs `--version` and picks the `read` format: the highest of major 1. A failure here
    /// holds for every card: the reason of the run, `undecodable`, or `incompatible`.
    pub fn negotiate(&self) -> (Result<FormatVersion, UnreadableReason>, Duration) {
        let run = self.run(vec!["--version".into()], "--version");
        let negotiated = match reason_of(&run.result) {
            Some(reason) => Err(reason),
            None => match VersionReply::from_json(&run.stdout) {
                Err(refusal) => {
                    tracing::debug!("{}: --version reply undecodable: {refusal}", self.name());
                    Err(UnreadableReason::Undecodable)
                }
                Ok(version) => version.negotiate_read().map_err(|incompatible| {
                    tracing::debug!("{}: {incompatible}", self.name());
                    UnreadableReason::Incompatible
                }),
            },
        };
        (negotiated, run.elapsed)
    }

    /// Reads one card with the negotiated `format`.
    pub fn read(&self, device: Bdf, format: FormatVersion) -> CardRead {
        let args = vec![
            "read".into(),
            "--device".into(),
            device.to_string().into(),
            "--format".into(),
            format.major.to_string().into(),
        ];
        let run = self.run(args, &device.to_string());
        if let Some(reason) = reason_of(&run.result) {
            return CardRead::failed(device, reason, run.elapsed);
        }
        match Reply::from_json(&run.stdout, Some(&device)) {
            Ok(reply) => {
                if let Some(unreadable) = &reply.unreadable {
                    if let Some(message) = unreadable.message.read() {
                        tracing::debug!("{device}: helper could not read it: {message}");
                    }
                }
                CardRead {
                    device,
                    outcome: reply.outcome(),
                    elapsed: run.elapsed,
                    lost: reply.lost().into_iter().cloned().collect(),
                    unknown: reply.unknown(),
                }
            }
            Err(refusal) => {
                tracing::debug!("{device}: reply undecodable: {refusal}");
                CardRead::failed(device, UnreadableReason::Undecodable, run.elapsed)
            }
        }
    }

    /// Reads every card in `devices`: `--version` once, then the cards several at once (up to
    /// the configured concurrency). Each card gets its own outcome, in the order given; a
    /// host-wide failure is given to every card without forking per card.
    pub fn probe(&self, devices: &[Bdf]) -> Vec<CardRead> {
        if devices.is_empty() {
            return Vec::new();
        }
        let format = match self.negotiate() {
            (Ok(format), _) => format,
            (Err(reason), elapsed) => {
                tracing::debug!("{}: every card is {reason}", self.name());
                return devices
                    .iter()
                    .map(|device| CardRead::failed(*device, reason.clone(), elapsed))
                    .collect();
            }
        };
        self.read_all(devices, format)
    }

    /// Reads every card in `devices` with a `format` already negotiated, several at once (up to
    /// the configured concurrency); each card gets its own outcome, in the order given.
    pub fn read_all(&self, devices: &[Bdf], format: FormatVersion) -> Vec<CardRead> {
        if devices.is_empty() {
            return Vec::new();
        }
        let next = AtomicUsize::new(0);
        let reads: Vec<Mutex<Option<CardRead>>> =
            devices.iter().map(|_| Mutex::new(None)).collect();
        let workers = self.config.concurrency.clamp(1, devices.len());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(device) = devices.get(index) else {
                            break;
                        };
                        let read = self.read(*device, format);
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
                    CardRead::failed(*device, UnreadableReason::Crash, Duration::ZERO)
                })
            })
            .collect()
    }

    fn run(&self, args: Vec<std::ffi::OsString>, what: &str) -> Run {
        let spec = self.config.spec(args);
        // With a wrapper the runner checks the wrapper; the helper must exist all the same.
        let run = match (&self.config.wrapper, run::check_program(&self.config.path)) {
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

    fn name(&self) -> String {
        self.config.path.display().to_string()
    }
}
