//! An AMD Instinct GPU's partitions, as amdgpu shows them in sysfs (no tool, no library):
//! the compute (accelerator) partition — SPX, DPX, TPX, QPX or CPX, the GPU shown as 1 to 8
//! logical GPUs — and the memory partition, NPS1 to NPS8, each with the modes the part offers
//! now; and the XGMI hive the GPU is in. The formats are the kernel's own show functions, and
//! what is not one of them is refused, naming the file and the text (the rules and their
//! sources: the project's `docs/amd.md`):
//!
//! - `current_compute_partition`: `SPX\n` … `CPX\n`, or `UNKNOWN\n` while the driver has set
//!   none (`amdgpu_gfx_get_current_compute_partition`); `EPERM` while the GPU is in reset.
//!   Absent where the part cannot be partitioned (no partition manager).
//! - `available_compute_partition`: the modes offered with the memory partition now, in the
//!   kernel's order, joined by `", "` (`SPX, DPX, QPX, CPX\n`), or `Not supported\n`
//!   (`amdgpu_gfx_get_available_compute_partition`).
//! - `current_memory_partition`: `NPS1\n` … `NPS8\n` or `UNKNOWN\n`, the mode the memory is in
//!   now: a requested change shows only after a driver reload, and nothing here says one is
//!   pending (`current_memory_partition_show`).
//! - `available_memory_partition`: as the compute list (`NPS1, NPS4\n`); absent where the part
//!   offers one mode only (MI300A), and then the current mode cannot change.
//! - `xgmi_hive_info/xgmi_hive_id`: the hive's ID in decimal (`amdgpu_xgmi_show_attrs`);
//!   absent on a GPU in no hive. Read by `crate::read_xgmi_hive_id`, its one reader.

use super::modes::{ComputePartition, MemoryPartition};
use gpu_partition_types::{Bdf, Token};
use std::path::{Path, PathBuf};

/// What amdgpu shows of one GPU's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdPartitions {
    /// The compute partition now.
    pub compute: ComputePartition,
    /// The compute partitions offered with the memory partition now (empty: the kernel says
    /// `Not supported`, or the file is absent).
    pub available_compute: Vec<ComputePartition>,
    /// The memory partition now; `None` where the kernel has no such file.
    pub memory: Option<MemoryPartition>,
    /// The memory partitions offered (empty where the file is absent: one mode only, which
    /// cannot change).
    pub available_memory: Vec<MemoryPartition>,
    /// The XGMI hive the GPU is in, by the kernel's ID; `None`: in no hive.
    pub hive: Option<u64>,
}

impl AmdPartitions {
    /// Partitions as given (for tests and embedders that read them another way).
    pub fn new(
        compute: (ComputePartition, Vec<ComputePartition>),
        memory: Option<MemoryPartition>,
        available_memory: Vec<MemoryPartition>,
        hive: Option<u64>,
    ) -> Self {
        Self {
            compute: compute.0,
            available_compute: compute.1,
            memory,
            available_memory,
            hive,
        }
    }
}

/// Why a GPU's partitions could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AmdError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The kernel answered `EPERM`: the GPU is in reset, and says nothing until it is out.
    #[error("{}: the GPU is in reset (EPERM)", path.display())]
    InReset {
        /// The file.
        path: PathBuf,
    },
    /// The kernel says `UNKNOWN`: the driver has set no mode (yet).
    #[error("{}: the kernel says UNKNOWN: the driver has set no {what}", path.display())]
    Unknown {
        /// The file.
        path: PathBuf,
        /// What it is the mode of.
        what: &'static str,
    },
    /// The XGMI hive's ID did not read (`crate::read_xgmi_hive_id` names the file).
    #[error("cannot read the GPU's XGMI hive")]
    Hive(#[source] crate::PciIdError),
    /// The file holds what the kernel does not write there.
    #[error("{}: {text:?} is not a {what} as amdgpu writes one", path.display())]
    Unexpected {
        /// The file.
        path: PathBuf,
        /// What it holds.
        text: String,
        /// What was expected.
        what: &'static str,
    },
}

impl AmdError {
    /// Whether the kernel said the GPU is in reset (`EPERM`): it says nothing until it is out.
    pub fn is_in_reset(&self) -> bool {
        matches!(self, Self::InReset { .. })
    }

    /// Whether the kernel said `UNKNOWN`: the driver has set no mode yet.
    pub fn is_no_mode(&self) -> bool {
        matches!(self, Self::Unknown { .. })
    }
}

/// The file's text, `None` where it does not exist; `EPERM` is the kernel's "in reset".
fn read(path: &Path) -> Result<Option<String>, AmdError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) if error.raw_os_error() == Some(nix::errno::Errno::EPERM as i32) => {
            Err(AmdError::InReset {
                path: path.to_owned(),
            })
        }
        Err(source) => Err(AmdError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// The one line a show function writes: its text without the newline it ends with.
fn line<'t>(path: &Path, text: &'t str, what: &'static str) -> Result<&'t str, AmdError> {
    text.strip_suffix('\n')
        .filter(|body| !body.contains('\n'))
        .ok_or_else(|| AmdError::Unexpected {
            path: path.to_owned(),
            text: text.to_owned(),
            what,
        })
}

/// A `current_*` file: one mode, or `UNKNOWN`.
fn current<M: Copy>(
    path: &Path,
    text: &str,
    what: &'static str,
    parse: fn(&str) -> Option<M>,
) -> Result<M, AmdError> {
    let body = line(path, text, what)?;
    if body == "UNKNOWN" {
        return Err(AmdError::Unknown {
            path: path.to_owned(),
            what,
        });
    }
    parse(body).ok_or_else(|| AmdError::Unexpected {
        path: path.to_owned(),
        text: text.to_owned(),
        what,
    })
}

/// An `available_*` file: modes joined by `", "` in the kernel's order, each once, or
/// `Not supported`.
fn available<M: Copy + Ord>(
    path: &Path,
    text: &str,
    what: &'static str,
    parse: fn(&str) -> Option<M>,
) -> Result<Vec<M>, AmdError> {
    let unexpected = || AmdError::Unexpected {
        path: path.to_owned(),
        text: text.to_owned(),
        what,
    };
    let body = line(path, text, what)?;
    if body == "Not supported" {
        return Ok(Vec::new());
    }
    let modes = body
        .split(", ")
        .map(parse)
        .collect::<Option<Vec<M>>>()
        .ok_or_else(unexpected)?;
    if !modes.windows(2).all(|pair| pair[0] < pair[1]) {
        return Err(unexpected());
    }
    Ok(modes)
}

/// Parses `current_compute_partition`'s text (`path` names it in an error).
pub fn parse_current_compute(path: &Path, text: &str) -> Result<ComputePartition, AmdError> {
    current(
        path,
        text,
        "compute partition",
        ComputePartition::from_token,
    )
}

/// Parses `available_compute_partition`'s text.
pub fn parse_available_compute(path: &Path, text: &str) -> Result<Vec<ComputePartition>, AmdError> {
    available(
        path,
        text,
        "list of compute partitions",
        ComputePartition::from_token,
    )
}

/// Parses `current_memory_partition`'s text.
pub fn parse_current_memory(path: &Path, text: &str) -> Result<MemoryPartition, AmdError> {
    current(path, text, "memory partition", MemoryPartition::from_token)
}

/// Parses `available_memory_partition`'s text.
pub fn parse_available_memory(path: &Path, text: &str) -> Result<Vec<MemoryPartition>, AmdError> {
    available(
        path,
        text,
        "list of memory partitions",
        MemoryPartition::from_token,
    )
}

/// The partitions of the GPU at `bdf` under `sysfs_root`: `None` where it shows no compute
/// partition (a part amdgpu cannot partition, or no AMD GPU at all).
pub fn read_partitions(sysfs_root: &Path, bdf: Bdf) -> Result<Option<AmdPartitions>, AmdError> {
    let dir = sysfs_root.join("bus/pci/devices").join(bdf.to_string());
    let file = |name: &str| dir.join(name);
    let path = file("current_compute_partition");
    let Some(text) = read(&path)? else {
        return Ok(None);
    };
    let compute = parse_current_compute(&path, &text)?;
    let path = file("available_compute_partition");
    let available_compute = match read(&path)? {
        Some(text) => parse_available_compute(&path, &text)?,
        None => Vec::new(),
    };
    let path = file("current_memory_partition");
    let memory = match read(&path)? {
        Some(text) => Some(parse_current_memory(&path, &text)?),
        None => None,
    };
    let path = file("available_memory_partition");
    let available_memory = match read(&path)? {
        Some(text) => parse_available_memory(&path, &text)?,
        None => Vec::new(),
    };
    // The hive, by the one reader of it (the warm reset reads the same).
    let hive = crate::read_xgmi_hive_id(&dir).map_err(AmdError::Hive)?;
    Ok(Some(AmdPartitions {
        compute,
        available_compute,
        memory,
        available_memory,
        hive,
    }))
}
