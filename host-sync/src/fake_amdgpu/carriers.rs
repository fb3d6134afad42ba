//! What carries an apply's writes to the fake ([`PartitionWrites`]): one process's threads
//! sharing it ([`SharedAmdgpu`]), or a file kept between processes ([`FakeAmdgpuFile`]).

use super::model::{FakeAmdGpu, FakeAmdgpu, ReloadRefused};
use crate::fake_sysfs::FakeSysfs;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_host_probe::amdgpu::{PartitionWrites, ReloadError};
use gpu_partition_types::Bdf;
use nix::errno::Errno;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What a [`FakeAmdgpuFile`] keeps.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    gpus: Vec<FakeAmdGpu>,
    log: Vec<String>,
}

/// The kernel's answer to a write, as `write(2)` gives it.
fn errno(error: Errno) -> io::Error {
    io::Error::from_raw_os_error(error as i32)
}

/// The answer `modprobe -r` gives while a module is in use, as a run of it.
fn in_use(refused: &ReloadRefused) -> ReloadError {
    ReloadError::Unload {
        command: "modprobe -r amdgpu".to_owned(),
        result: gpu_host_probe::run::RunResult::Exited(1),
        stderr: format!("modprobe: FATAL: Module amdgpu is in use. ({refused})"),
    }
}

/// A fake amdgpu shared by the threads of one process (an apply writes from its own), carrying
/// an apply's writes as [`PartitionWrites`].
#[derive(Debug)]
pub struct SharedAmdgpu(Mutex<FakeAmdgpu>);

impl SharedAmdgpu {
    /// `fake`, shared.
    pub fn new(fake: FakeAmdgpu) -> Self {
        Self(Mutex::new(fake))
    }

    /// The fake, for a test to look at or change (as [`Mutex::lock`]).
    pub fn lock(&self) -> std::sync::LockResult<std::sync::MutexGuard<'_, FakeAmdgpu>> {
        self.0.lock()
    }
}

impl PartitionWrites for SharedAmdgpu {
    fn write_compute(&self, _: &Path, device: Bdf, mode: ComputePartition) -> io::Result<()> {
        let mut fake = self.lock().map_err(|_| errno(Errno::EIO))?;
        fake.write_compute(&device.to_string(), &format!("{mode}\n"))
            .map_err(errno)
    }

    fn request_memory(&self, _: &Path, device: Bdf, mode: MemoryPartition) -> io::Result<()> {
        let mut fake = self.lock().map_err(|_| errno(Errno::EIO))?;
        fake.write_memory(&device.to_string(), &format!("{mode}\n"))
            .map_err(errno)
    }

    fn reload_driver(&self, _: Option<&gpu_host_probe::Cancel>) -> Result<(), ReloadError> {
        let mut fake = self.lock().map_err(|_| ReloadError::Unload {
            command: "modprobe -r amdgpu".to_owned(),
            result: gpu_host_probe::run::RunResult::EndUnknown,
            stderr: "the fake's lock was poisoned".to_owned(),
        })?;
        fake.reload_driver().map_err(|refused| in_use(&refused))
    }
}

/// A fake amdgpu kept in a file between processes, shown in the sysfs tree at a root: each
/// write loads it, answers as the kernel does, shows the GPUs again and saves it.
#[derive(Debug, Clone)]
pub struct FakeAmdgpuFile {
    path: PathBuf,
    sysfs: FakeSysfs,
}

/// Why a [`FakeAmdgpuFile`] could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FakeFileError {
    /// The file could not be read or written.
    #[error("cannot use the simulated amdgpu's file {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// It holds what a simulated amdgpu does not keep.
    #[error("{} is not a simulated amdgpu's file", path.display())]
    NotAFake {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

impl FakeAmdgpuFile {
    /// The fake kept at `path`, shown under `sysfs_root`.
    pub fn new(path: impl Into<PathBuf>, sysfs_root: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            sysfs: FakeSysfs::at(sysfs_root),
        }
    }

    /// The sysfs root it shows its GPUs under.
    pub fn sysfs_root(&self) -> &Path {
        self.sysfs.root()
    }

    /// The fake as the file keeps it.
    pub fn load(&self) -> Result<FakeAmdgpu, FakeFileError> {
        let io = |source| FakeFileError::Io {
            path: self.path.clone(),
            source,
        };
        let text = std::fs::read(&self.path).map_err(io)?;
        let kept: Kept =
            serde_json::from_slice(&text).map_err(|source| FakeFileError::NotAFake {
                path: self.path.clone(),
                source,
            })?;
        Ok(FakeAmdgpu {
            sysfs: self.sysfs.clone(),
            gpus: kept.gpus,
            log: kept.log,
            reload_cost: std::time::Duration::ZERO,
        })
    }

    /// Keeps `fake` in the file (whole: a temporary file renamed over it) and shows its GPUs.
    pub fn save(&self, fake: &FakeAmdgpu) -> Result<(), FakeFileError> {
        let io = |source| FakeFileError::Io {
            path: self.path.clone(),
            source,
        };
        let kept = Kept {
            gpus: fake.gpus.clone(),
            log: fake.log.clone(),
        };
        let text = serde_json::to_vec_pretty(&kept).map_err(|source| FakeFileError::NotAFake {
            path: self.path.clone(),
            source,
        })?;
        let temporary = self.path.with_extension("tmp");
        std::fs::write(&temporary, text).map_err(io)?;
        std::fs::rename(&temporary, &self.path).map_err(io)?;
        fake.show().map_err(io)
    }

    /// Loads the fake, lets `change` act on it, and saves it.
    pub fn change<T>(&self, change: impl FnOnce(&mut FakeAmdgpu) -> T) -> Result<T, FakeFileError> {
        let mut fake = self.load()?;
        let answer = change(&mut fake);
        self.save(&fake)?;
        Ok(answer)
    }
}

fn file_error(error: FakeFileError) -> io::Error {
    io::Error::other(gpu_host_probe::chain::Chain(&error).to_string())
}

impl PartitionWrites for FakeAmdgpuFile {
    fn write_compute(&self, _: &Path, device: Bdf, mode: ComputePartition) -> io::Result<()> {
        self.change(|fake| fake.write_compute(&device.to_string(), &format!("{mode}\n")))
            .map_err(file_error)?
            .map_err(errno)
    }

    fn request_memory(&self, _: &Path, device: Bdf, mode: MemoryPartition) -> io::Result<()> {
        self.change(|fake| fake.write_memory(&device.to_string(), &format!("{mode}\n")))
            .map_err(file_error)?
            .map_err(errno)
    }

    fn reload_driver(&self, _: Option<&gpu_host_probe::Cancel>) -> Result<(), ReloadError> {
        self.change(FakeAmdgpu::reload_driver)
            .map_err(|error| ReloadError::Unload {
                command: "modprobe -r amdgpu".to_owned(),
                result: gpu_host_probe::run::RunResult::EndUnknown,
                stderr: gpu_host_probe::chain::Chain(&error).to_string(),
            })?
            .map_err(|refused| in_use(&refused))
    }
}
