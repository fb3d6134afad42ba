//! Which GPUs of the host a layout is for, and what each should be.
//!
//! An index is a GPU's position among the host's NVIDIA GPUs bound to `nvidia`, in PCI
//! address order, from 0 ([`host_gpus`]): what `nvidia-smi` numbers them on a host whose
//! GPUs are all bound to it (mig-parted's indices are NVML's, which follow the same order). A
//! GPU bound to another driver (`vfio-pci` for pass-through) has no index and is never touched.

use crate::document::{DeviceRef, Devices, Spec};
use gpu_host_probe::PciIdentity;
use gpu_partition_types::Bdf;
use host_sync::{ScanError, scan_gpus};
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
    let mut gpus = scan_gpus(sysfs_root)?;
    gpus.retain(host_sync::PciFunction::is_to_be_read);
    gpus.sort_by_key(|gpu| gpu.bdf);
    Ok(gpus
        .into_iter()
        .zip(0u32..)
        .map(|(gpu, index)| HostGpu::new(index, gpu.bdf, gpu.identity))
        .collect())
}

/// A GPU the layout names, with what it should be and the spec that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Wanted {
    /// The GPU.
    pub gpu: HostGpu,
    /// What it should be.
    pub want: Want,
    /// The line of the spec that names it; `None` for a spec not read from a document.
    pub line: Option<usize>,
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

fn matches_filter(spec: &Spec, gpu: &HostGpu) -> bool {
    spec.device_filter.is_empty()
        || spec
            .device_filter
            .iter()
            .any(|filter| filter.matches(&gpu.identity))
}

fn names(spec: &Spec, gpu: &HostGpu) -> bool {
    let listed = match &spec.devices {
        Devices::All => true,
        Devices::Listed(devices) => devices.iter().any(|device| match device {
            DeviceRef::Index(index) => *index == gpu.index,
            DeviceRef::Address(bdf) => *bdf == gpu.bdf,
        }),
    };
    listed && matches_filter(spec, gpu)
}

/// The GPUs of `gpus` that `specs` name, each with what it should be; a GPU no spec names is
/// left out (and left alone).
pub fn select(specs: &[Spec], gpus: &[HostGpu]) -> Result<Selection, SelectError> {
    let mut selection = Selection::default();
    for gpu in gpus {
        let mut naming = specs.iter().filter(|spec| names(spec, gpu));
        let Some(spec) = naming.next() else {
            continue;
        };
        if let Some(second) = naming.next() {
            return Err(SelectError::Twice {
                gpu: gpu.to_string(),
                first: spec.line,
                second: second.line,
            });
        }
        selection.wanted.push(Wanted {
            gpu: gpu.clone(),
            want: if spec.mig_enabled {
                Want::enabled(spec.mig_devices.clone())
            } else {
                Want::disabled()
            },
            line: spec.line,
        });
    }
    for spec in specs {
        if let Devices::Listed(devices) = &spec.devices {
            for device in devices {
                let present = gpus.iter().any(|gpu| match device {
                    DeviceRef::Index(index) => *index == gpu.index,
                    DeviceRef::Address(bdf) => *bdf == gpu.bdf,
                });
                if !present {
                    selection.absent.push(Absent {
                        line: spec.line,
                        device: *device,
                    });
                }
            }
        }
    }
    Ok(selection)
}
