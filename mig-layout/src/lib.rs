//! Enter and leave GPU partitioning: a declared MIG layout applied by diff, with a warm reset
//! of only the GPU that needs one, and read back.
//!
//! - [`Document`] reads mig-parted's v1 config files as they are (YAML, or the same document in
//!   JSON), with its validation rules; every fault names its line and member
//!   ([`LayoutError`]). [`to_yaml`] writes one back.
//! - [`select()`] resolves a layout against the host's GPUs ([`host_gpus`]: NVIDIA GPUs bound
//!   to `nvidia`, indexed in PCI address order) into a `layout_model::Want` per GPU.
//! - [`plan()`](plan::plan) is the pure planner (sans-IO): from a card's read reply and its
//!   `Want`, the helper's steps in the order the driver needs, or an [`Impossible`] naming
//!   the GPU and profile before anything is touched. It diffs, and places instances
//!   explicitly by an exhaustive search ([`plan::fit`]).
//! - A card is compared with its layout by `layout_model::differences` (GPU instances, compute
//!   instances and placements apart): what `assert`, the executor's read-back and the drift a
//!   sync finds all report, by one set of rules.
//! - [`apply()`] runs a layout under the host lock ([`ApplyRun`]): preflight every GPU, then
//!   destroys and the mode, a warm reset where a mode change is pending, creates, the
//!   read-back; the host status says `entering`/`leaving` (`layout_applying`) while it runs
//!   and `layout_failed` with the message while a failure is unhealed; it records what the
//!   host is declared to be (`layout_model::Declaration`). [`leave()`] leaves
//!   partitioning. [`restore()`] brings the host back to its declaration by the same executor;
//!   [`Hooks`] run around the writes as mig-parted's do.
//! - [`export()`] writes the host's layout as a document `apply` takes back as zero steps.
//!
//! The rules are in the project's `docs/partition.md`.
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod amd_plan;
mod amd_services;
mod apply;
mod assert;
mod document;
mod export;
mod exposition;
mod plan;
mod report;
mod select;
mod vgpu_exec;
mod vgpu_export;
mod vgpu_plan;

/// AMD Instinct partitions: ROCm Device Config Manager's profiles read as they are, assigned
/// to a host's AMD GPUs, planned, applied by the executor ([`apply_amd`](crate::amd::apply_amd),
/// written as [`AmdWith`](crate::amd::AmdWith) says) and asserted.
pub mod amd {
    pub use crate::amd_plan::{AmdCard, AmdRefusal, AmdStep, plan_amd};
    pub use crate::amd_services::{RunningService, running_services, service_unit};
    pub use crate::apply::{AmdWith, apply_amd, leave_amd};
    pub use crate::assert::assert_amd;
    pub use crate::document::dcm::{
        AssignError, DcmDocument, DcmEntry, DcmMode, DcmProfile, InvalidMode, ProfileFault,
        UnknownMember,
    };
    pub use crate::select::{AmdHostGpu, AmdWanted, amd_gpus, select_amd};
    pub use layout_model::amd::AmdWant;
}

/// One partition at a time, for an owner: a GPU instance, or a MIG-backed vGPU on one, created
/// or destroyed through the executor, every refusal before the first write ([`PartitionRefusal`](partition::PartitionRefusal),
/// a closed set).
pub mod partition {
    pub use crate::apply::partition::{
        CreatePartition, DestroyPartition, PARTITIONS_LABEL, PartitionOutcome, PartitionRefusal,
        PartitionRefusalKind, Piece, TakenBack, Which, create, destroy,
    };
}

/// NVIDIA vgpu-device-manager's config files read as they are, vGPU type names, and the MIG
/// layout a spec of MIG-backed types needs (the vGPU layer's declared input).
pub mod vgpu {
    pub use crate::apply::{VgpuWith, apply_vgpu, leave_vgpu};
    pub use crate::assert::assert_vgpu;
    pub use crate::document::vgpu::{DeriveError, VgpuDocument, VgpuSpec, per_gpu_instance_in};
    pub use crate::document::vgpu_name::{
        MigAttribute, Series, VgpuKind, VgpuNameError, VgpuTypeName,
    };
    pub use crate::select::{VgpuJob, select_vgpu};
    pub use crate::vgpu_exec::{
        DEFAULT_SRIOV_MANAGE, RunEnd, SriovManage, SriovManageError, SriovManageOn, TypeWriteError,
        VfsSet, VfsWanted, write_vgpu_type,
    };
    pub use crate::vgpu_export::{
        VgpuExportWarning, VgpuExported, export_vgpu, export_vgpu_declared, export_vgpu_host,
    };
    pub use crate::vgpu_plan::{
        Missing, VgpuCard, VgpuRefusal, VgpuStep, plan_vgpu, plan_vgpu_leave, plan_vgpu_on_vfs,
    };
    pub use gpu_host_probe::vf::{SysfsTypes, VfTypeFile, VgpuTypes};
}

pub use apply::{
    ApplyError, ApplyObserver, ApplyOptions, ApplyRun, HOOK_DEADLINE, HookPoint, HookRun, Hooks,
    Progress, Restore, STEP_DEADLINE, apply, leave, restore,
};
pub use assert::{AssertOutcome, AssertReport, AssertRun, GpuAssert, assert_applied};
pub use document::{
    DeviceId, DeviceRef, Devices, Document, LayoutError, MAX_DOCUMENT, Spec, to_json, to_yaml,
};
pub use export::{ExportWarning, Exported, export, export_declared, export_host};
pub use exposition::{LABEL_NAMESPACE, MetricsError, render_labels, render_metrics};
pub use layout_model::Unnamed;
pub use plan::{CardPlan, Impossible, ImpossibleKind, PlanLine, fit, plan, plan_card};
pub use report::{
    AmdWork, ApplyOutcome, ApplyReason, ApplyReport, ApplyWarning, Conclusion, GpuReport, GpuWork,
    HostAfter, NvidiaWork, WriteFailure,
};
pub use select::{Absent, HostGpu, SelectError, Selection, Wanted, host_gpus, select};

// What an apply or a restore is given, from the crates that own it, so an embedder of
// `mig-layout` names them all from here: the host, its helper and the helper's configuration,
// the cancel, the store (the trait and the file store) and the pool switch, and the reset's
// method, its backends (the trait and NVIDIA's real one), window and clock (the trait and the
// real one).
pub use gpu_host_probe::helper::{Helper, HelperConfig};
pub use gpu_host_probe::{Cancel, Host};
pub use gpu_host_probe::{Clock, SystemClock};
pub use host_sync::{FileStore, Pool, StateStore};
pub use warm_reset::{Backend, Method, NvidiaSmiBackend, ResetWith};
