//! Which GPUs of the host a layout is for, and what each should be.
//!
//! An index is a GPU's position among the host's NVIDIA GPUs bound to `nvidia`, in PCI
//! address order, from 0 ([`host_gpus`]): what `nvidia-smi` numbers them on a host whose
//! GPUs are all bound to it (mig-parted's indices are NVML's, which follow the same order). A
//! GPU bound to another driver (`vfio-pci` for pass-through) has no index and is never touched.

use crate::document::vgpu::VgpuSpec;
use crate::document::{DeviceId, DeviceRef, Devices, Spec};
use gpu_host_probe::PciIdentity;
use gpu_partition_types::Bdf;
use host_sync::{PciFunction, ScanError, scan_gpus};
use layout_model::Want;
use std::fmt;
use std::path::Path;

/// An NVIDIA GPU bound to `nvidia`, with its index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostGpu {
    /// Its position among the host's NVIDIA GPUs bound to `nvidia`, in PCI address order.
    pub index: u32,
    /// Its address.
    pub bdf: Bdf,
    /// Its PCI IDs (with the subsystem's where sysfs gives them), for `device-filter`.
    pub identity: PciIdentity,
}

impl HostGpu {
    /// A GPU at `index` and `bdf` with these IDs (for tests and embedders that scan another
    /// way).
    pub fn new(index: u32, bdf: Bdf, identity: PciIdentity) -> Self {
        Self {
            index,
            bdf,
            identity,
        }
    }
}

impl fmt::Display for HostGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GPU {} ({})", self.index, self.bdf)
    }
}

/// The host's NVIDIA GPUs bound to `nvidia`, in PCI address order, numbered from 0, with the
/// IDs the scan read (their subsystem's where sysfs has them).
pub fn host_gpus(sysfs_root: &Path) -> Result<Vec<HostGpu>, ScanError> {
    Ok(numbered(sysfs_root, host_sync::ReadBy::Helper)?
        .map(|(gpu, index)| HostGpu::new(index, gpu.bdf, gpu.identity))
        .collect())
}

/// The host's GPUs that `by` reads, in PCI address order, each with its number from 0: how
/// every kind of host GPU is numbered.
fn numbered(
    sysfs_root: &Path,
    by: host_sync::ReadBy,
) -> Result<impl Iterator<Item = (PciFunction, u32)>, ScanError> {
    let mut gpus = scan_gpus(sysfs_root)?;
    gpus.retain(|gpu| gpu.is_read_by(by));
    gpus.sort_by_key(|gpu| gpu.bdf);
    Ok(gpus.into_iter().zip(0u32..))
}

/// A GPU the layout names, with what it should be and the spec that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Wanted {
    /// The GPU.
    pub gpu: HostGpu,
    /// What it should be. For a vGPU job, the MIG layout its vGPUs need, which the card's
    /// catalogue decides once the card is read (until then, MIG off).
    pub want: Want,
    /// The line of the spec that names it; `None` for a spec not read from a document.
    pub line: Option<usize>,
    /// Its vGPUs, for a vGPU job (`None`: a MIG layout alone).
    pub vgpu: Option<VgpuJob>,
}

/// What a vGPU job wants of one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VgpuJob {
    /// These vGPUs, on VFs, with the MIG layout they need.
    Apply(VgpuSpec),
    /// A declaration brought back: each type on the VF it is declared on (`vfs`), the others
    /// none; `spec` is the same vGPUs by count, which sizes the MIG layout.
    Restore {
        /// The vGPUs by count, and heterogeneous mode.
        spec: VgpuSpec,
        /// Each VF's declared type.
        vfs: Vec<layout_model::DeclaredVf>,
    },
    /// No vGPU: the VFs disabled, then MIG off.
    Leave,
}

/// A device a layout lists that the host does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Absent {
    /// The line of the spec that lists it (`None`: not read from a document).
    pub line: Option<usize>,
    /// The device as the spec names it.
    pub device: DeviceRef,
}

impl fmt::Display for Absent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        write!(
            f,
            "{} is not an NVIDIA GPU bound to nvidia on this host",
            self.device
        )
    }
}

/// The GPUs a layout names, and what did not match.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Selection {
    /// The GPUs, in index order.
    pub wanted: Vec<Wanted>,
    /// Devices the layout lists that the host does not have (as mig-parted, a spec for GPU 7
    /// on a host of two GPUs names nothing), for people.
    pub absent: Vec<Absent>,
}

/// Why a layout does not select.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    /// Two specs name the same GPU.
    #[error(
        "{gpu} is named by two entries{}; each GPU may be named once",
        lines(*first, *second)
    )]
    Twice {
        /// The GPU.
        gpu: String,
        /// The first entry's line (`None`: not read from a document).
        first: Option<usize>,
        /// The second's.
        second: Option<usize>,
    },
}

fn lines(first: Option<usize>, second: Option<usize>) -> String {
    match (first, second) {
        (Some(first), Some(second)) => format!(", at lines {first} and {second}"),
        _ => String::new(),
    }
}

fn matches_filter(device_filter: &[DeviceId], gpu: &HostGpu) -> bool {
    device_filter.is_empty()
        || device_filter
            .iter()
            .any(|filter| filter.matches(&gpu.identity))
}

/// Whether an entry for `devices` (and `device_filter`) names `gpu`.
fn names(devices: &Devices, device_filter: &[DeviceId], gpu: &HostGpu) -> bool {
    let listed = match devices {
        Devices::All => true,
        Devices::Listed(devices) => devices.iter().any(|device| match device {
            DeviceRef::Index(index) => *index == gpu.index,
            DeviceRef::Address(bdf) => *bdf == gpu.bdf,
        }),
    };
    listed && matches_filter(device_filter, gpu)
}

/// What an entry of a layout or of a vGPU config is to [`select_entries`].
struct Entry<'a> {
    devices: &'a Devices,
    device_filter: &'a [DeviceId],
    line: Option<usize>,
}

impl<'a> Entry<'a> {
    fn new(devices: &'a Devices, device_filter: &'a [DeviceId], line: Option<usize>) -> Self {
        Self {
            devices,
            device_filter,
            line,
        }
    }
}

/// The GPUs of `gpus` that `specs` name, each with what it should be; a GPU no spec names is
/// left out (and left alone).
pub fn select(specs: &[Spec], gpus: &[HostGpu]) -> Result<Selection, SelectError> {
    let entries: Vec<Entry<'_>> = specs
        .iter()
        .map(|spec| Entry::new(&spec.devices, &spec.device_filter, spec.line))
        .collect();
    select_entries(&entries, gpus, |at| (want_of(&specs[at]), None))
}

/// What a GPU a spec names should be: MIG on with its instances, or MIG off.
pub(crate) fn want_of(spec: &Spec) -> Want {
    if spec.mig_enabled {
        Want::enabled(spec.mig_devices.clone())
    } else {
        Want::disabled()
    }
}

/// The GPUs of `gpus` that a vGPU config's `specs` name, each with its vGPUs (its MIG layout is
/// decided by its catalogue once the card is read); by the rules of [`select`].
pub fn select_vgpu(specs: &[VgpuSpec], gpus: &[HostGpu]) -> Result<Selection, SelectError> {
    let entries: Vec<Entry<'_>> = specs
        .iter()
        .map(|spec| Entry::new(&spec.devices, &spec.device_filter, spec.line))
        .collect();
    select_entries(&entries, gpus, |at| {
        (Want::disabled(), Some(VgpuJob::Apply(specs[at].clone())))
    })
}

/// The one rule both selections follow: each GPU named by at most one entry, and each device
/// an entry lists that the host lacks told.
fn select_entries(
    entries: &[Entry<'_>],
    gpus: &[HostGpu],
    wants: impl Fn(usize) -> (Want, Option<VgpuJob>),
) -> Result<Selection, SelectError> {
    let mut selection = Selection::default();
    for gpu in gpus {
        let mut naming = entries
            .iter()
            .enumerate()
            .filter(|(_, entry)| names(entry.devices, entry.device_filter, gpu));
        let Some((at, entry)) = naming.next() else {
            continue;
        };
        if let Some((_, second)) = naming.next() {
            return Err(SelectError::Twice {
                gpu: gpu.to_string(),
                first: entry.line,
                second: second.line,
            });
        }
        let (want, vgpu) = wants(at);
        selection.wanted.push(Wanted {
            gpu: gpu.clone(),
            want,
            line: entry.line,
            vgpu,
        });
    }
    for entry in entries {
        if let Devices::Listed(devices) = entry.devices {
            for device in devices {
                let present = gpus.iter().any(|gpu| match device {
                    DeviceRef::Index(index) => *index == gpu.index,
                    DeviceRef::Address(bdf) => *bdf == gpu.bdf,
                });
                if !present {
                    selection.absent.push(Absent {
                        line: entry.line,
                        device: *device,
                    });
                }
            }
        }
    }
    Ok(selection)
}

/// An AMD GPU bound to `amdgpu`, with its ID: its position among the host's AMD GPUs bound to
/// `amdgpu`, in PCI address order, from 0 (the IDs of a Device Config Manager profile's
/// `skippedGPUs`, assigned in that order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdHostGpu {
    /// Its ID.
    pub index: u32,
    /// Its address.
    pub bdf: Bdf,
}

impl fmt::Display for AmdHostGpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AMD GPU {} ({})", self.index, self.bdf)
    }
}

/// The host's AMD GPUs bound to `amdgpu`, in PCI address order, numbered from 0.
pub fn amd_gpus(sysfs_root: &Path) -> Result<Vec<AmdHostGpu>, ScanError> {
    Ok(numbered(sysfs_root, host_sync::ReadBy::Amdgpu)?
        .map(|(gpu, index)| AmdHostGpu {
            index,
            bdf: gpu.bdf,
        })
        .collect())
}

/// An AMD GPU a profile (or a declaration) names, with the partitions it should be in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdWanted {
    /// The GPU.
    pub gpu: AmdHostGpu,
    /// Its partitions.
    pub want: layout_model::amd::AmdWant,
    /// The line of the profile that names it; `None` for a declaration.
    pub line: Option<usize>,
    /// The systemd services that use it, as its declaration keeps them (a profile's come with
    /// the apply: `AmdWith::client_services`).
    pub client_services: Vec<String>,
}

/// The GPUs the Device Config Manager profile `profile` gives partitions, of the host's AMD
/// GPUs `gpus` (its skipped IDs left out).
pub fn select_amd(
    profile: &crate::document::dcm::DcmProfile,
    gpus: &[AmdHostGpu],
) -> Result<Vec<AmdWanted>, crate::document::dcm::AssignError> {
    let assigned = profile.assign(gpus.len())?;
    Ok(gpus
        .iter()
        .zip(assigned)
        .filter_map(|(gpu, want)| {
            want.map(|want| AmdWanted {
                gpu: *gpu,
                want,
                line: profile.line,
                client_services: Vec::new(),
            })
        })
        .collect())
}
