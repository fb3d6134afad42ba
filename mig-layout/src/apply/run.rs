//! [`ApplyRun`]: on which host, through which helper, into which store, resetting how; and
//! [`ApplyError`], an apply that could not run.

use super::progress::ApplyObserver;
use super::with::AmdWith;
use super::with::VgpuWith;
use crate::report::ApplyReport;
use gpu_host_probe::helper::Helper;
use gpu_host_probe::{Host, LockError};
use gpu_partition_types::Bdf;
use host_sync::{ApplyStateError, StateStore};
use warm_reset::ResetWith;

/// One apply: on which host, through which helper, into which store, resetting how.
pub struct ApplyRun<'a> {
    pub(super) host: &'a Host,
    pub(super) helper: &'a Helper,
    pub(super) store: &'a mut dyn StateStore,
    pub(super) reset: ResetWith<'a>,
    pub(super) observe: Option<ApplyObserver<'a>>,
    pub(super) vgpu: VgpuWith<'a>,
    pub(super) amd: AmdWith<'a>,
}

impl std::fmt::Debug for ApplyRun<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApplyRun")
            .field("host", self.host)
            .field("reset", &self.reset)
            .finish_non_exhaustive()
    }
}

impl<'a> ApplyRun<'a> {
    /// An apply on `host` through `helper`, recorded in `store`, completing pending mode
    /// changes through `reset` (the nvidia method's backend).
    pub fn new(
        host: &'a Host,
        helper: &'a Helper,
        store: &'a mut dyn StateStore,
        reset: ResetWith<'a>,
    ) -> Self {
        Self {
            host,
            helper,
            store,
            reset,
            observe: None,
            vgpu: VgpuWith::default(),
            amd: AmdWith::default(),
        }
    }

    /// Writes AMD GPUs so (how the driver is reloaded, the client services, what carries the
    /// writes); by default the kernel's files and `/sbin/modprobe`, no client service.
    pub fn amd(mut self, with: AmdWith<'a>) -> Self {
        self.amd = with;
        self
    }

    /// Writes the vGPU side so (`sriov-manage`'s path and retries, what carries a VF's type
    /// write); by default NVIDIA's script at its installed path and the kernel's files.
    pub fn vgpu(mut self, with: VgpuWith<'a>) -> Self {
        self.vgpu = with;
        self
    }

    /// The same run, borrowed for a shorter one: a second run on the same host, helper, store,
    /// reset and writers (under the same hold of the host lock).
    pub(crate) fn reborrow(&mut self) -> ApplyRun<'_> {
        ApplyRun {
            host: self.host,
            helper: self.helper,
            store: &mut *self.store,
            reset: self.reset.reborrow(),
            observe: match &mut self.observe {
                Some(observe) => Some(&mut **observe),
                None => None,
            },
            vgpu: self.vgpu.clone(),
            amd: self.amd.clone(),
        }
    }

    /// Shows each step as it runs.
    pub fn observe(mut self, observe: ApplyObserver<'a>) -> Self {
        self.observe = Some(observe);
        self
    }
}

/// An apply that could not run; what was written before stays consistent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// A program the apply would run is the machine's own (at its installed path, the
    /// default), and the host's roots are not the machine's (a host built over a test tree): it
    /// would act on the real machine. Nothing was read or written; name one made for the host
    /// (the fakes come with theirs).
    #[error("the apply would run the machine's own program on another host")]
    NotThisHosts(#[source] gpu_host_probe::ProgramRefused),
    /// The host lock's file could not be used.
    #[error("the host lock failed")]
    Lock(#[source] LockError),
    /// sysfs could not be scanned.
    #[error("cannot find the host's GPUs")]
    Scan(#[from] host_sync::ScanError),
    /// The layout names a GPU twice.
    #[error("the layout does not select")]
    Select(#[from] crate::select::SelectError),
    /// A GPU asked for (`--device`) is not one the layout (or the declaration) names.
    #[error("{device} is not a GPU the layout {label:?} names on this host")]
    NotNamed {
        /// The GPU.
        device: Bdf,
        /// The layout.
        label: String,
    },
    /// The state store failed.
    #[error("cannot use the state store")]
    Store(#[from] host_sync::StoreError),
    /// The sync that ends the apply failed (the apply's own record was written).
    #[error("the sync after the apply failed")]
    Sync(#[from] host_sync::SyncError),
    /// The warm reset could not run (its journal, its machine).
    #[error("the warm reset could not run")]
    Reset(#[from] warm_reset::ExecuteError),
    /// The apply's record could not be written.
    #[error("cannot record the apply")]
    Record(#[source] ApplyStateError),
    /// A declared GPU's vGPU type is no vGPU type name (a state edited by hand): nothing is
    /// restored.
    #[error("the declaration of {device} names the vGPU type {name:?}, which is none")]
    DeclaredVgpu {
        /// The GPU.
        device: Bdf,
        /// The name declared.
        name: String,
        /// Why it is none.
        #[source]
        source: crate::vgpu::VgpuNameError,
    },
    /// A Device Config Manager profile is refused by DCM's rules on the host's AMD GPUs (its
    /// modes, its counts, its skipped IDs) or by this project's (an unknown member).
    #[error("the Device Config Manager profile is refused")]
    Profile(#[source] crate::amd::AssignError),
    /// Which client services of the AMD GPUs run could not be told (a cgroup did not read).
    #[error("cannot tell whether the GPUs' client services run")]
    ClientServices(#[source] std::io::Error),
    /// The store did not keep what the apply recorded (a store written before a member of the
    /// state existed drops it, the declaration above all): read back under the lock, the first
    /// member that differs is named. The cards are as the report says.
    #[error("the state store did not keep the apply's record: {difference}")]
    NotKept {
        /// The first member that differs, saved and loaded.
        difference: host_sync::FieldDifference,
        /// What the apply did.
        report: Box<ApplyReport>,
    },
}

impl From<ApplyStateError> for ApplyError {
    fn from(error: ApplyStateError) -> Self {
        match error {
            ApplyStateError::Store(store) => Self::Store(store),
            ApplyStateError::Scan(scan) => Self::Scan(scan),
            other => Self::Record(other),
        }
    }
}
