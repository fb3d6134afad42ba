//! [`Backend`]: the questions the reset machine asks of a host, vendor-neutral — who is in the
//! reset group, does anything stop a reset, who uses the group, reset it, is it back — with one
//! implementation per method ([`crate::metax`], [`crate::nvidia`], [`crate::pci`],
//! [`crate::amd`]) and the simulated hosts of [`crate::sim`].

use crate::amd::AmdSmiError;
use crate::kmsg::KernelLogError;
use crate::metax::MxSmiError;
use crate::method::Method;
use crate::nvidia::NvidiaSmiError;
use crate::pci::SysfsError;
use crate::reasons::{BlockedReason, ColdRebootReason};
use crate::reset_target::ResetTarget;
use crate::target::Target;
use crate::warning::ResetWarning;
use gpu_host_probe::ProcError;
use gpu_host_probe::chain::Chain;
use gpu_partition_types::Bdf;
use std::time::Duration;

/// Why the host did not answer a question of the procedure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// `mx-smi` did not answer.
    #[error(transparent)]
    MxSmi(#[from] MxSmiError),
    /// `nvidia-smi` (or the NVIDIA driver's files) did not answer.
    #[error(transparent)]
    NvidiaSmi(#[from] NvidiaSmiError),
    /// sysfs did not answer.
    #[error(transparent)]
    Sysfs(#[from] SysfsError),
    /// `amd-smi` did not answer, or did not reset.
    #[error(transparent)]
    AmdSmi(#[from] AmdSmiError),
    /// The kernel log could not be used.
    #[error(transparent)]
    KernelLog(#[from] KernelLogError),
    /// The processes could not all be looked at for holders of a device file.
    #[error(transparent)]
    Proc(#[from] ProcError),
    /// This method has no listing of the host's GPUs (a plan's verify step needs one).
    #[error(
        "the {0} method cannot list the host's GPUs; a plan's verify step needs metax, nvidia or amd"
    )]
    NoSurvey(Method),
    /// A target another method resolved was given to this backend.
    #[error("the {backend} backend was given a target the {target} method resolved")]
    WrongMethod {
        /// This backend's method.
        backend: Method,
        /// The target's method.
        target: Method,
    },
}

impl BackendError {
    /// What the host said when it did not answer, with its causes, for a detail or a warning.
    pub(crate) fn said(&self) -> String {
        Chain(self).to_string()
    }
}

impl BackendError {
    /// The reason a run is blocked with when the host fails this way before the reset.
    /// Each vendor's error decides its own ([`MxSmiError::blocked_reason`],
    /// [`NvidiaSmiError::blocked_reason`], [`SysfsError::blocked_reason`],
    /// [`AmdSmiError::blocked_reason`]).
    pub fn blocked_reason(&self) -> BlockedReason {
        match self {
            Self::MxSmi(error) => error.blocked_reason(),
            Self::NvidiaSmi(error) => error.blocked_reason(),
            Self::Sysfs(error) => error.blocked_reason(),
            Self::AmdSmi(error) => error.blocked_reason(),
            Self::WrongMethod { .. } | Self::NoSurvey(_) => BlockedReason::UnknownDevice,
            // Who holds the device cannot be told: it may be in use.
            Self::Proc(_) => BlockedReason::GpuBusy,
            Self::KernelLog(_) => BlockedReason::KernelLogUnreadable,
        }
    }
}

/// Why the host says no before the reset: a reason of the contract and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusal {
    /// The reason.
    pub reason: BlockedReason,
    /// What was found, for people.
    pub detail: String,
}

impl Refusal {
    /// A refusal for `reason`.
    pub fn new(reason: BlockedReason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
        }
    }
}

impl From<BackendError> for Refusal {
    fn from(error: BackendError) -> Self {
        Self::new(error.blocked_reason(), Chain(&error).to_string())
    }
}

/// Why the group is not (or not yet) as it was before the reset.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotBack {
    /// The reason, if it stays so when the window ends.
    pub reason: ColdRebootReason,
    /// What was found.
    pub detail: String,
    /// The devices of the group found not back, when the backend can tell them apart (empty:
    /// the group as a whole).
    pub devices: Vec<Bdf>,
}

impl NotBack {
    /// Not back for `reason`.
    pub fn new(reason: ColdRebootReason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
            devices: Vec::new(),
        }
    }

    /// Names the devices not back.
    pub fn devices(mut self, devices: Vec<Bdf>) -> Self {
        self.devices = devices;
        self
    }
}

/// Whether the group is back after the reset.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Back {
    /// Every device is back as it was; with what a person should know.
    Yes {
        /// Warnings that do not change the course.
        warnings: Vec<ResetWarning>,
    },
    /// Not yet: waited for until the window ends, then this reason.
    NotYet(NotBack),
    /// Back, but not as it was (moved, a link lost): no waiting changes that.
    Wrong(NotBack),
}

/// How the reset command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResetEnd {
    /// It ended and said it reset every device of the group.
    Finished,
    /// It refused before resetting anything (a device in use, as the tool says).
    Refused(Refusal),
    /// It failed, or said so: the group's state is unknown.
    Failed(BackendError),
    /// It did not end within the time given and was stopped.
    Hung,
}

/// Every GPU of the host, as a plan's verify step sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Survey {
    /// How many are listed.
    pub listed: usize,
    /// Those not available, as `GPU#n is STATE`.
    pub not_available: Vec<String>,
}

/// The host as the procedure sees it.
pub trait Backend {
    /// Whether this is a simulation (a simulated host of [`crate::sim`]): a run then takes the
    /// simulated host's lock and journal ([`gpu_host_probe::Host::simulated`]), never the
    /// machine's — whatever host it was given. A real backend is not.
    fn simulation(&self) -> bool {
        false
    }
    /// Whether this runs as root.
    fn is_root(&mut self) -> bool;
    /// What stops any reset on this host before a device is named: the tool, its driver, its
    /// versions. `Ok` holds warnings.
    fn prepare(&mut self) -> Result<Vec<ResetWarning>, Refusal>;
    /// The group a reset of `target` touches: every device the reset may change, and what is
    /// verified after it; with warnings.
    fn resolve(&mut self, target: &ResetTarget) -> Result<(Target, Vec<ResetWarning>), Refusal>;
    /// Whether anything uses the group (processes, a host driver, another device of a bus).
    /// `Ok` holds warnings.
    fn check_use(&mut self, target: &Target) -> Result<Vec<ResetWarning>, Refusal>;
    /// Notes the end of the kernel log; `Err` when it cannot be opened or read.
    fn mark_kernel_log(&mut self) -> Result<(), BackendError>;
    /// Resets the group, stopping the reset if it has not ended `within`.
    fn reset(&mut self, target: &Target, within: Duration) -> ResetEnd;
    /// Whether the group is back as it was.
    fn check_back(&mut self, target: &Target) -> Back;
    /// The kernel's error records about the group since the mark.
    fn kernel_errors(&mut self, target: &Target) -> Result<Vec<String>, BackendError>;
    /// Every GPU of the host (a plan's verify step).
    fn survey(&mut self) -> Result<Survey, BackendError>;
}

/// A kernel log a backend reads, through its host's `kernel_log()`: the real one (the kernel's,
/// at [`DEFAULT_KMSG`](crate::io::DEFAULT_KMSG) or where the host was told), a simulated host's, or a test's.
pub trait KernelLogSource {
    /// Notes where the log ends now.
    fn mark_kernel_log(&mut self) -> Result<(), BackendError>;
    /// The records added since the mark.
    fn records_since_mark(&mut self) -> Result<Vec<crate::kmsg::KmsgRecord>, BackendError>;
}

impl KernelLogSource for crate::kmsg::KernelLog {
    fn mark_kernel_log(&mut self) -> Result<(), BackendError> {
        Ok(self.mark()?)
    }

    fn records_since_mark(&mut self) -> Result<Vec<crate::kmsg::KmsgRecord>, BackendError> {
        Ok(self.since_mark()?)
    }
}

/// What a backend asks of a target: its own method's facts.
impl crate::target::Target {
    /// The facts of the method whose facts are `F`, or the error of a target another method
    /// resolved (each method's backend reads its own facts through this).
    pub(crate) fn facts_of<F: crate::target::MethodFacts>(&self) -> Result<&F, BackendError> {
        F::of(&self.facts).ok_or(BackendError::WrongMethod {
            backend: F::METHOD,
            target: self.method(),
        })
    }

    /// The kernel's error records since the mark in `log` about the devices verified after the
    /// reset, as `errors` reads them (the method's rule), or the error of a target another
    /// method resolved: how the methods that name their devices answer
    /// [`Backend::kernel_errors`].
    pub(crate) fn kernel_errors_of<F: crate::target::MethodFacts>(
        &self,
        log: &mut dyn KernelLogSource,
        errors: fn(Vec<crate::kmsg::KmsgRecord>, &[Bdf]) -> Vec<String>,
    ) -> Result<Vec<String>, BackendError> {
        self.facts_of::<F>()?;
        Ok(errors(log.records_since_mark()?, &self.verified()))
    }

    /// The facts a verification compares with, or its answer for a target another method
    /// resolved: wrong at once, as no device of this method can come back for it.
    pub(crate) fn facts_to_verify<F: crate::target::MethodFacts + Clone>(&self) -> Result<F, Back> {
        self.facts_of::<F>().cloned().map_err(|error| {
            Back::Wrong(NotBack::new(
                crate::reasons::ColdRebootReason::GpuMissing,
                error.said(),
            ))
        })
    }
}
