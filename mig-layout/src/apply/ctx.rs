//! What every phase of an apply works with, and why a GPU stops: the one place the phases and
//! the resets share, so neither imports the other.
//!
//! [`Shared`] is what every GPU's work reads (the lock held, the helper, its format, the
//! cancel): it is `Sync`, so the per-GPU phases run side by side on it. Progress from a GPU's
//! worker goes through a channel to the apply's own thread, which alone calls the caller's
//! observer; the worker waits for the observer to return ([`fan_out`]).

use super::Progress;
use super::with::VgpuWith;
use crate::report::{ApplyOutcome, ApplyReason, WriteFailure};
use gpu_host_probe::Clock;
use gpu_host_probe::helper::{CardRead, Helper};
use gpu_host_probe::{Cancel, Host, HostLock};
use gpu_partition_types::{Bdf, FormatVersion, Reply};
use std::sync::Mutex;
use std::sync::mpsc;

/// What every GPU's work reads.
#[derive(Clone, Copy)]
pub(super) struct Shared<'a> {
    pub lock: &'a HostLock,
    pub helper: &'a Helper,
    /// The helper without the caller's cancel: the one read that settles what a batch ended
    /// with no answer did to its card.
    pub settle: &'a Helper,
    /// The helper's `apply` format, negotiated when the job has an NVIDIA GPU; `None`: it has
    /// none, and the helper was never run.
    pub format: Option<FormatVersion>,
    pub cancel: Option<&'a Cancel>,
    /// The host (its sysfs and `/proc`, for the vGPU side).
    pub host: &'a Host,
    /// How the vGPU side is written.
    pub vgpu: &'a VgpuWith<'a>,
    /// The clock the vGPU side's pauses are taken on (the reset's).
    pub clock: &'a dyn Clock,
    /// Who owns each GPU that is not ours, as stored under the lock: nothing of the apply may
    /// write or reset it (an NVLink peer a reset takes, a GPU a driver reload takes).
    pub not_ours: &'a std::collections::BTreeMap<Bdf, gpu_host_probe::Ownership>,
}

impl Shared<'_> {
    /// Whether the caller cancelled the apply.
    pub fn cancelled(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }

    /// Stops the GPU (writes began: `failed (cancelled)`) when the caller cancelled the apply,
    /// before `next`.
    pub fn go_on(&self, next: &str) -> Result<(), Stop> {
        if self.cancelled() {
            return Err(Stop::failed(
                ApplyReason::Cancelled,
                format!("the apply was cancelled before {next}"),
            ));
        }
        Ok(())
    }

    /// The helper's `apply` format; a GPU of the job's NVIDIA side stops where it was not
    /// negotiated (only a job with no NVIDIA GPU skips it).
    pub fn format(&self) -> Result<FormatVersion, Stop> {
        self.format.ok_or_else(|| {
            Stop::failed(
                ApplyReason::HelperUnavailable,
                "the helper's apply format was not negotiated",
            )
        })
    }

    /// Reads these cards again, several at once (the helper's fan-out), each as a reply or
    /// why it did not read, in the order given.
    pub fn reread(&self, devices: &[Bdf], when: &str) -> Vec<Result<Reply, Stop>> {
        let format = match self.format() {
            Ok(format) => format,
            Err(stop) => return devices.iter().map(|_| Err(stop.clone())).collect(),
        };
        self.helper
            .read_all(self.lock, devices, format)
            .into_iter()
            .map(|read: CardRead| {
                let device = read.device;
                read.into_reply().map_err(|failure| {
                    Stop::failed(
                        ApplyReason::GpuUnreadable,
                        format!("{device}: reading it {when}: {failure}"),
                    )
                })
            })
            .collect()
    }
}

/// What the apply's own thread works with: the shared part and the caller's observer.
pub(super) struct Ctx<'a, 'p> {
    pub shared: Shared<'a>,
    pub progress: &'p mut dyn FnMut(Progress),
}

impl Ctx<'_, '_> {
    pub fn say(&mut self, progress: Progress) {
        (self.progress)(progress);
    }
}

/// Why a GPU stopped once writes began.
#[derive(Debug, Clone)]
pub(super) struct Stop {
    pub outcome: ApplyOutcome,
    pub detail: String,
    /// The write that failed, as data, where one did.
    pub failure: Option<Box<WriteFailure>>,
}

impl Stop {
    pub fn failed(reason: ApplyReason, detail: impl Into<String>) -> Self {
        Self {
            outcome: ApplyOutcome::Failed(reason),
            detail: detail.into(),
            failure: None,
        }
    }

    /// A write of `device` refused as `failure` says (`step_refused`): the detail names the GPU
    /// and is derived from the failure.
    pub fn refused(device: Bdf, failure: WriteFailure) -> Self {
        Self {
            outcome: ApplyOutcome::Failed(ApplyReason::StepRefused),
            detail: format!("{device}: {failure}"),
            failure: Some(Box::new(failure)),
        }
    }

    /// The same stop, its detail naming `device` (one stop of several GPUs, each its own). A
    /// failed write of another GPU's file is that GPU's: `device` keeps no failure of its own,
    /// and its detail says why it was not written.
    pub fn of(&self, device: Bdf) -> Self {
        let mut stop = self.clone();
        if stop
            .failure
            .as_deref()
            .is_some_and(|failure| !failure.reaches(device))
        {
            stop.failure = None;
            stop.detail = format!(
                "{device}: not written, as another GPU's write failed: {}",
                stop.detail
            );
        } else if !stop.detail.starts_with(&device.to_string()) {
            stop.detail = format!("{device}: {}", stop.detail);
        }
        stop
    }

    /// A read-back that found `differences` (at least one): each named in the detail, and kept
    /// in the GPU's `report`. The one read-back stop of the MIG, vGPU and AMD sides.
    pub fn read_back_differs(
        report: &mut crate::report::GpuReport,
        differences: Vec<layout_model::Difference>,
    ) -> Self {
        let detail = differences
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        report.differences = differences;
        Self::failed(ApplyReason::ReadBackDiffers, detail)
    }
}

/// Runs `work` on each of `items` that `runs` lets through, side by side (at most the helper's
/// concurrency at once), under the apply's lock: each worker's progress is handed to the
/// apply's thread, which passes it to the observer as it comes, and the worker goes on only once
/// the observer has returned, so an observer that cancels on a step stops that worker before
/// its next write, on a loaded machine as on an idle one. Answers each item's result in order
/// (`None` for one not run).
pub(super) fn fan_out<T, R>(
    ctx: &mut Ctx<'_, '_>,
    items: &mut [T],
    runs: impl Fn(&T) -> bool,
    work: impl Fn(&Shared<'_>, &dyn Fn(Progress), &mut T) -> R + Sync,
) -> Vec<Option<R>>
where
    T: Send,
    R: Send,
{
    let shared = ctx.shared;
    let picked: Vec<bool> = items.iter().map(runs).collect();
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let queue: Mutex<Vec<(usize, &mut T)>> = Mutex::new(
        items
            .iter_mut()
            .enumerate()
            .filter(|(at, _)| picked.get(*at).copied().unwrap_or(false))
            .rev()
            .collect(),
    );
    let pending = queue.lock().map(|queue| queue.len()).unwrap_or(0);
    let workers = shared.helper.config().concurrency.clamp(1, pending.max(1));
    let (sender, receiver) = mpsc::channel::<(Progress, mpsc::SyncSender<()>)>();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let (queue, results, work) = (&queue, &results, &work);
            scope.spawn(move || {
                let say = |progress: Progress| {
                    let (told, heard) = mpsc::sync_channel(1);
                    if sender.send((progress, told)).is_ok() {
                        // Ends when the observer has returned (or the apply's thread is gone).
                        let _ = heard.recv();
                    }
                };
                loop {
                    let next = queue.lock().ok().and_then(|mut queue| queue.pop());
                    let Some((at, item)) = next else {
                        break;
                    };
                    let result = work(&shared, &say, item);
                    if let Some(Ok(mut slot)) = results.get(at).map(Mutex::lock) {
                        *slot = Some(result);
                    }
                }
            });
        }
        // The workers hold the only senders now: the loop ends when the last one is done.
        drop(sender);
        for (progress, told) in receiver {
            ctx.say(progress);
            let _ = told.send(());
        }
    });
    results
        .into_iter()
        .map(|slot| slot.into_inner().ok().flatten())
        .collect()
}
