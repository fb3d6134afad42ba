//! The sysfs PCI scan: GPU physical functions with their IDs and bound driver: every
//! display-class function, and AMD's processing accelerators (Instinct from MI300 on).

use crate::reason::NotRead;
use gpu_host_probe::{
    PciIdError, PciIdentity, is_accelerator_class, is_display_class, read_pci_class,
    read_pci_identity,
};
use gpu_partition_types::Bdf;
use std::path::{Path, PathBuf};

/// A display-class PCI physical function (a GPU).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PciFunction {
    /// Its address.
    pub bdf: Bdf,
    /// Its IDs and class.
    pub identity: PciIdentity,
    /// The bound driver's name (`nvidia`, `vfio-pci`), if any.
    pub driver: Option<String>,
}

impl PciFunction {
    /// A function with these IDs (for tests and embedders that scan another way).
    pub fn new(bdf: Bdf, identity: PciIdentity, driver: Option<&str>) -> Self {
        Self {
            bdf,
            identity,
            driver: driver.map(str::to_owned),
        }
    }

    /// An NVIDIA function, by vendor ID (never by driver: pass-through unbinds the driver).
    pub fn is_nvidia(&self) -> bool {
        self.identity.is_nvidia()
    }

    /// An AMD function, by vendor ID.
    pub fn is_amd(&self) -> bool {
        self.identity.is_amd()
    }

    /// A GPU of a vendor whose partitions the host reads (NVIDIA, AMD), bound or not.
    pub fn is_partitionable_vendor(&self) -> bool {
        self.is_nvidia() || self.is_amd()
    }

    /// How the host reads this GPU, or why it does not by design: an NVIDIA GPU bound to
    /// `nvidia` through the helper, an AMD GPU bound to `amdgpu` through amdgpu's sysfs files.
    /// The one place that decides it.
    pub fn read_by(&self) -> Result<ReadBy, NotRead> {
        let (reader, driver) = if self.is_nvidia() {
            (ReadBy::Helper, "nvidia")
        } else if self.is_amd() {
            (ReadBy::Amdgpu, "amdgpu")
        } else {
            return Err(NotRead::NotNvidia);
        };
        match self.driver.as_deref() {
            None => Err(NotRead::NoDriver),
            Some(bound) if bound == driver => Ok(reader),
            Some(bound) => Err(NotRead::driver(bound)),
        }
    }

    /// Why the host does not read this GPU by design ([`PciFunction::read_by`]); `None` for
    /// one it reads.
    pub fn not_read_reason(&self) -> Option<NotRead> {
        self.read_by().err()
    }

    /// A GPU the host reads: an NVIDIA GPU bound to `nvidia`, an AMD GPU bound to `amdgpu`.
    pub fn is_to_be_read(&self) -> bool {
        self.read_by().is_ok()
    }

    /// A GPU the host reads `by` this way.
    pub fn is_read_by(&self, by: ReadBy) -> bool {
        self.read_by() == Ok(by)
    }
}

/// How the host reads a GPU's partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadBy {
    /// Through the partition helper (NVML): an NVIDIA GPU bound to `nvidia`.
    Helper,
    /// From amdgpu's sysfs files: an AMD GPU bound to `amdgpu`.
    Amdgpu,
}

/// Why sysfs, or one entry of it, could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// A file or directory could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// What could not be read.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An ID file that does not read, or holds what sysfs does not write there.
    #[error(transparent)]
    Identity(#[from] PciIdError),
    /// An entry of `bus/pci/devices` whose name is not a PCI address.
    #[error("{}: the name {name:?} is not a PCI address", path.display())]
    NotAnAddress {
        /// The entry.
        path: PathBuf,
        /// Its name.
        name: String,
    },
}

/// An entry of `bus/pci/devices` the scan left out, and why.
#[derive(Debug)]
#[non_exhaustive]
pub struct SkippedEntry {
    /// The entry (`<sysfs>/bus/pci/devices/<name>`).
    pub path: PathBuf,
    /// Its address, when the name reads as one.
    pub bdf: Option<Bdf>,
    /// What could not be read.
    pub problem: ScanError,
}

impl std::fmt::Display for SkippedEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", gpu_host_probe::chain::Chain(&self.problem))
    }
}

/// What a scan found: the GPUs, and the entries it could not read.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct PciScan {
    /// Display-class physical functions, sorted by address.
    pub gpus: Vec<PciFunction>,
    /// Entries left out: a name that is not an address, a device that vanished during the scan
    /// (a dangling link), or files that could not be read.
    pub skipped: Vec<SkippedEntry>,
}

/// Scans `<sysfs_root>/bus/pci/devices` for display-class (0x03xxxx) physical functions, sorted
/// by address. A function with a `physfn` entry is an SR-IOV virtual function and is skipped.
/// A root without a PCI bus (no `bus/pci/devices`) has no GPU.
///
/// One entry that cannot be read never breaks the scan of the host: it is left out and named in
/// [`PciScan::skipped`]. Only a root or a `bus/pci/devices` that cannot be read fails the scan.
pub fn scan(sysfs_root: &Path) -> Result<PciScan, ScanError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ScanError::Io { path, source }
    };
    std::fs::metadata(sysfs_root).map_err(io(sysfs_root))?;
    let devices = sysfs_root.join("bus/pci/devices");
    let entries = match std::fs::read_dir(&devices) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            tracing::info!("no PCI bus under {}: no GPU", sysfs_root.display());
            return Ok(PciScan::default());
        }
        Err(source) => {
            return Err(ScanError::Io {
                path: devices,
                source,
            });
        }
    };
    let mut found = PciScan::default();
    for entry in entries {
        let entry = entry.map_err(io(&devices))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(bdf) = name.parse::<Bdf>() else {
            found.skipped.push(SkippedEntry {
                problem: ScanError::NotAnAddress {
                    path: path.clone(),
                    name,
                },
                path,
                bdf: None,
            });
            continue;
        };
        match read_function(&path, bdf) {
            Ok(Some(gpu)) => found.gpus.push(gpu),
            Ok(None) => {}
            Err(problem) => found.skipped.push(SkippedEntry {
                path,
                bdf: Some(bdf),
                problem,
            }),
        }
    }
    found.gpus.sort_by_key(|gpu| gpu.bdf);
    found.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// [`scan`], with one warning for each entry left out; answers the GPUs.
pub fn scan_gpus(sysfs_root: &Path) -> Result<Vec<PciFunction>, ScanError> {
    let found = scan(sysfs_root)?;
    warn_skipped(&found.skipped);
    Ok(found.gpus)
}

/// Logs one warning per entry a scan left out.
pub(crate) fn warn_skipped(skipped: &[SkippedEntry]) {
    for entry in skipped {
        tracing::warn!("PCI scan: skipped {}: {entry}", entry.path.display());
    }
}

/// One entry: `Some` for a GPU physical function (display class, or an AMD processing
/// accelerator), `None` for any other function.
fn read_function(dir: &Path, bdf: Bdf) -> Result<Option<PciFunction>, ScanError> {
    // The class first: any other function costs this one read.
    let class = read_pci_class(dir)?;
    if !is_display_class(class) && !is_accelerator_class(class) {
        return Ok(None);
    }
    if dir.join("physfn").symlink_metadata().is_ok() {
        return Ok(None);
    }
    let identity = read_pci_identity(dir)?;
    // Another vendor's accelerator (an inference card, say) is no GPU of ours to report.
    if is_accelerator_class(class) && !identity.is_amd() {
        return Ok(None);
    }
    let driver = match std::fs::read_link(dir.join("driver")) {
        Ok(target) => target
            .file_name()
            .map(|name| name.to_string_lossy().into_owned()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(ScanError::Io {
                path: dir.join("driver"),
                source,
            });
        }
    };
    Ok(Some(PciFunction {
        bdf,
        identity,
        driver,
    }))
}
