//! A fake amdgpu: AMD Instinct GPUs that answer partition writes by the kernel's rules and
//! show their state in a [`FakeSysfs`] as the kernel does (`gpu_host_probe::amdgpu` reads it back).
//! Each rule names its source; all are in the project's `docs/amd.md`.
//!
//! - A compute write matches a mode's name case-insensitively on its first three characters
//!   (a newline is ignored); an unknown name is `EINVAL`, a mode the XCC count does not support
//!   or the memory partition does not allow is `EINVAL`, the GPU in reset is `EPERM`, a ROCm
//!   process holding it is `EBUSY`, and the mode already set is no change
//!   (`amdgpu_gfx_set_compute_partition`, `aqua_vanjaram_switch_partition_mode`,
//!   `amdgpu_xcp_switch_partition_mode`).
//! - A memory write is only a request, for the whole XGMI hive: `current_memory_partition`
//!   shows the old mode until [`FakeAmdgpu::reload_driver`]; a mode the GPU does not offer is
//!   `EINVAL`; the mode it is in is no request (`current_memory_partition_store`).
//! - A reload (`modprobe -r amdgpu`) fails while a ROCm process holds any GPU; it makes every
//!   request hold and sets each GPU's compute partition anew by the AUTO rule
//!   (`__aqua_vanjaram_get_auto_mode`: NPS1 gives SPX, NPS2 DPX, NPS4 CPX).
//! - A reboot sets the compute partition anew as a reload does and drops any request; the
//!   memory partition is kept unless the GPU is told otherwise
//!   ([`FakeAmdGpu::memory_at_boot`]): no source says what a cold boot does to it.
//!
//! Every write is logged ([`FakeAmdgpu::log`]: `current_compute_partition <gpu> CPX`,
//! `current_memory_partition <gpu> NPS4`, `modprobe -r amdgpu`, `modprobe amdgpu`, each
//! refused one with ` <errno>` after it), so a test counts the writes and reloads. The fake
//! carries an apply's writes ([`PartitionWrites`]) shared by one process's threads
//! ([`SharedAmdgpu`]), or kept in a file between processes ([`FakeAmdgpuFile`]: `mxctl`'s `--simulate`).

use crate::fake_sysfs::FakeSysfs;
use MemoryPartition::{Nps1, Nps2, Nps4};
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_host_probe::amdgpu::{PartitionWrites, ReloadError};
use gpu_partition_types::Bdf;
use nix::errno::Errno;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A part's facts, as AMD publishes them (kept by its name in a [`FakeAmdgpuFile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AmdPart {
    /// Its name.
    pub name: &'static str,
    /// Its PCI device ID (`0x74a1`).
    pub device_id: &'static str,
    /// Its XCC count.
    pub xccs: u32,
    /// The memory partitions its firmware offers (empty: one mode, NPS1, which cannot change).
    pub memory_offered: &'static [MemoryPartition],
}

/// MI300X: 8 XCCs (amd-smi's partitioning page); AMD validates SPX+NPS1, DPX+NPS2 and
/// CPX+NPS4 (the compatibility matrix of ROCm/amdgpu-docs `docs/gpu-partitioning/index.rst`),
/// on VBIOS 022.040.003.043 (its `requirements.rst`), so its firmware offers NPS1, NPS2, NPS4.
pub const MI300X: AmdPart = AmdPart {
    name: "MI300X",
    device_id: "0x74a1",
    xccs: 8,
    memory_offered: &[Nps1, Nps2, Nps4],
};

/// MI355X: 8 XCCs, partitioned by the same code (`aqua_vanjaram_init_soc_config` for GC
/// 9.5.0); AMD validates SPX+NPS1 and DPX+NPS2 and marks CPX+NPS4 not available (the same
/// matrix), so its firmware offers NPS1 and NPS2 here.
pub const MI355X: AmdPart = AmdPart {
    name: "MI355X",
    device_id: "0x75a3",
    xccs: 8,
    memory_offered: &[Nps1, Nps2],
};

/// MI300A: 6 XCCs; NPS1 only, fixed at boot (AMD's `mi300a/overview.rst`; no NPS switch on an
/// APU, `gmc_v9_0_init_nps_details`).
pub const MI300A: AmdPart = AmdPart {
    name: "MI300A",
    device_id: "0x74a0",
    xccs: 6,
    memory_offered: &[],
};

/// The parts the fake knows, by name.
pub const PARTS: [AmdPart; 3] = [MI300X, MI355X, MI300A];

/// A part kept by its name.
mod part_by_name {
    use super::{AmdPart, PARTS};
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(part: &AmdPart, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(part.name)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<AmdPart, D::Error> {
        let name = String::deserialize(deserializer)?;
        PARTS
            .into_iter()
            .find(|part| part.name == name)
            .ok_or_else(|| serde::de::Error::custom(format!("{name:?} is no part the fake knows")))
    }
}

/// One fake GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FakeAmdGpu {
    /// Its address.
    pub bdf: String,
    /// Its part.
    #[serde(with = "part_by_name")]
    pub part: AmdPart,
    /// Its compute partition; `None`: UNKNOWN (the driver has set none).
    pub compute: Option<ComputePartition>,
    /// Its memory partition now.
    pub memory: MemoryPartition,
    /// A memory partition requested, waiting for the reload.
    pub requested: Option<MemoryPartition>,
    /// Its XGMI hive.
    pub hive: Option<u64>,
    /// In reset: every partition file answers `EPERM`.
    pub in_reset: bool,
    /// A ROCm process holds it (KFD): a compute write is `EBUSY`, a reload fails.
    pub held: bool,
    /// The memory partition a reboot leaves (`None`: the one it had).
    pub memory_at_boot: Option<MemoryPartition>,
    /// The firmware refuses a memory partition change: at the unload the request is sent and
    /// refused, for the whole hive (amdgpu reverts every member on any failure,
    /// `amdgpu_xgmi_request_nps_change`), and the reload leaves the mode as it was.
    #[serde(default)]
    pub nps_change_fails: bool,
}

/// Fake AMD GPUs, shown in a fake sysfs.
#[derive(Debug)]
pub struct FakeAmdgpu {
    sysfs: FakeSysfs,
    /// The GPUs.
    pub gpus: Vec<FakeAmdGpu>,
    /// Every write, in order.
    pub log: Vec<String>,
    /// What a driver reload costs, slept on each (none by default): a benchmark's model. A
    /// partition write costs nothing modelled: a memory write only caches a request
    /// (`current_memory_partition_store`), and no source gives a compute switch's time.
    pub reload_cost: std::time::Duration,
}

/// What a [`FakeAmdgpuFile`] keeps.
#[derive(Debug, Serialize, Deserialize)]
struct Kept {
    gpus: Vec<FakeAmdGpu>,
    log: Vec<String>,
}

/// Why a reload failed: `modprobe -r` refuses a module in use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("amdgpu is in use: {bdf} is held by a ROCm process")]
pub struct ReloadRefused {
    /// A GPU held.
    pub bdf: String,
}

/// The compute partition AUTO sets for `memory` on a GPU of `xccs` XCCs
/// (`__aqua_vanjaram_get_auto_mode`): NPS1 SPX; as many memory partitions as XCCs CPX; half as
/// many CPX (a discrete GPU); two DPX.
fn auto(memory: MemoryPartition, xccs: u32) -> Option<ComputePartition> {
    let count = memory.count();
    match count {
        1 => Some(ComputePartition::Spx),
        _ if count == xccs || count * 2 == xccs => Some(ComputePartition::Cpx),
        2 => Some(ComputePartition::Dpx),
        _ => None,
    }
}

/// The mode whose name `text` starts with, case-insensitively, on the name's length (the
/// kernel's `strncasecmp` on 3 or 4 characters).
fn matched<T: gpu_partition_types::Token>(text: &str) -> Option<T> {
    T::ALL.iter().copied().find(|mode| {
        let name = mode.as_str();
        text.get(..name.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(name))
    })
}

impl FakeAmdgpu {
    /// No GPU yet, shown in `sysfs`.
    pub fn new(sysfs: FakeSysfs) -> Self {
        Self {
            sysfs,
            gpus: Vec::new(),
            log: Vec::new(),
            reload_cost: std::time::Duration::ZERO,
        }
    }

    /// The sysfs it shows its GPUs in.
    pub fn sysfs(&self) -> &FakeSysfs {
        &self.sysfs
    }

    /// Adds a GPU of `part` at `bdf` in `hive`, as a driver load leaves it with `memory`.
    pub fn gpu(
        &mut self,
        bdf: &str,
        part: AmdPart,
        memory: MemoryPartition,
        hive: Option<u64>,
    ) -> io::Result<&mut Self> {
        let minor = 128 + u32::try_from(self.gpus.len()).unwrap_or(0);
        self.gpus.push(FakeAmdGpu {
            bdf: bdf.to_owned(),
            part,
            compute: auto(memory, part.xccs),
            memory,
            requested: None,
            hive,
            in_reset: false,
            held: false,
            memory_at_boot: None,
            nps_change_fails: false,
        });
        self.show()?;
        self.sysfs.render_node(bdf, minor)?;
        Ok(self)
    }

    fn at(&self, bdf: &str) -> Result<usize, Errno> {
        self.gpus
            .iter()
            .position(|gpu| gpu.bdf == bdf)
            .ok_or(Errno::ENODEV)
    }

    /// The compute partitions `gpu` offers with its memory partition now
    /// (`__aqua_vanjaram_update_available_partition_mode`).
    pub fn available_compute(gpu: &FakeAmdGpu) -> Vec<ComputePartition> {
        layout_model::amd::compute_modes(gpu.part.xccs)
            .iter()
            .copied()
            .filter(|mode| layout_model::amd::runs_with(*mode, gpu.memory))
            .collect()
    }

    /// Logs `what`, with the errno that refused it.
    fn logged<T>(&mut self, what: String, answer: Result<T, Errno>) -> Result<T, Errno> {
        match &answer {
            Ok(_) => self.log.push(what),
            Err(errno) => self.log.push(format!("{what} {errno:?}")),
        }
        answer
    }

    /// `text` written to `current_compute_partition` of the GPU at `bdf` (logged).
    pub fn write_compute(&mut self, bdf: &str, text: &str) -> Result<(), Errno> {
        let answer = self.compute_written(bdf, text);
        self.logged(
            format!("current_compute_partition {bdf} {}", text.trim_end()),
            answer,
        )
    }

    /// `text` written to `current_memory_partition` of the GPU at `bdf` (logged): a request for
    /// its hive.
    pub fn write_memory(&mut self, bdf: &str, text: &str) -> Result<(), Errno> {
        let answer = self.memory_written(bdf, text);
        self.logged(
            format!("current_memory_partition {bdf} {}", text.trim_end()),
            answer,
        )
    }

    fn compute_written(&mut self, bdf: &str, text: &str) -> Result<(), Errno> {
        let at = self.at(bdf)?;
        let gpu = &self.gpus[at];
        if gpu.in_reset {
            return Err(Errno::EPERM);
        }
        let mode: ComputePartition = matched(text).ok_or(Errno::EINVAL)?;
        if !Self::available_compute(gpu).contains(&mode) {
            return Err(Errno::EINVAL);
        }
        if gpu.compute == Some(mode) {
            return Ok(());
        }
        if gpu.held {
            return Err(Errno::EBUSY);
        }
        self.gpus[at].compute = Some(mode);
        self.show().map_err(|_| Errno::EIO)
    }

    fn memory_written(&mut self, bdf: &str, text: &str) -> Result<(), Errno> {
        let at = self.at(bdf)?;
        let gpu = &self.gpus[at];
        if gpu.in_reset {
            return Err(Errno::EPERM);
        }
        let mode: MemoryPartition = matched(text).ok_or(Errno::EINVAL)?;
        if !gpu.part.memory_offered.contains(&mode) {
            return Err(Errno::EINVAL);
        }
        if gpu.memory == mode {
            return Ok(());
        }
        let hive = gpu.hive;
        let bdf = gpu.bdf.clone();
        for other in &mut self.gpus {
            let same = match hive {
                Some(hive) => other.hive == Some(hive),
                None => other.bdf == bdf,
            };
            if same {
                other.requested = Some(mode);
            }
        }
        Ok(())
    }

    /// `modprobe -r amdgpu; modprobe amdgpu` (logged): every request holds, and each GPU's
    /// compute partition is set anew by AUTO.
    pub fn reload_driver(&mut self) -> Result<(), ReloadRefused> {
        if let Some(gpu) = self.gpus.iter().find(|gpu| gpu.held) {
            self.log.push("modprobe -r amdgpu EBUSY".to_owned());
            return Err(ReloadRefused {
                bdf: gpu.bdf.clone(),
            });
        }
        self.log.push("modprobe -r amdgpu".to_owned());
        self.log.push("modprobe amdgpu".to_owned());
        std::thread::sleep(self.reload_cost);
        let refused: Vec<Option<u64>> = self
            .gpus
            .iter()
            .filter(|gpu| gpu.nps_change_fails && gpu.requested.is_some())
            .map(|gpu| gpu.hive)
            .collect();
        for gpu in &mut self.gpus {
            let reverted = refused
                .iter()
                .any(|hive| hive.is_some() && *hive == gpu.hive)
                || (gpu.nps_change_fails && gpu.hive.is_none());
            if let Some(mode) = gpu.requested.take().filter(|_| !reverted) {
                gpu.memory = mode;
            }
            gpu.compute = auto(gpu.memory, gpu.part.xccs);
        }
        // A reload's failure to show would leave the files stale: a test sees it.
        let _ = self.show();
        Ok(())
    }

    /// A reboot: the compute partition set anew, any request dropped, the memory partition
    /// as [`FakeAmdGpu::memory_at_boot`] says.
    pub fn reboot(&mut self) -> io::Result<()> {
        for gpu in &mut self.gpus {
            gpu.requested = None;
            gpu.held = false;
            gpu.in_reset = false;
            if let Some(memory) = gpu.memory_at_boot {
                gpu.memory = memory;
            }
            gpu.compute = auto(gpu.memory, gpu.part.xccs);
        }
        self.show()
    }

    /// Writes every GPU's files as the kernel shows them.
    pub fn show(&self) -> io::Result<()> {
        for gpu in &self.gpus {
            let device = self.sysfs.device_dir(&gpu.bdf);
            if !device.exists() {
                self.sysfs.amd_instinct(
                    &gpu.bdf,
                    gpu.part.device_id,
                    (ComputePartition::Spx, &[]),
                    None,
                    gpu.hive,
                )?;
            }
            let compute = gpu
                .compute
                .map_or("UNKNOWN", gpu_partition_types::Token::as_str);
            std::fs::write(
                device.join("current_compute_partition"),
                format!("{compute}\n"),
            )?;
            let offered = Self::available_compute(gpu);
            std::fs::write(
                device.join("available_compute_partition"),
                list_line(&offered),
            )?;
            std::fs::write(
                device.join("current_memory_partition"),
                format!("{}\n", gpu.memory),
            )?;
            if !gpu.part.memory_offered.is_empty() {
                std::fs::write(
                    device.join("available_memory_partition"),
                    list_line(gpu.part.memory_offered),
                )?;
            }
        }
        Ok(())
    }
}

fn list_line<T: gpu_partition_types::Token>(modes: &[T]) -> String {
    if modes.is_empty() {
        return "Not supported\n".to_owned();
    }
    format!("{}\n", gpu_host_probe::amdgpu::list(modes))
}

impl FakeAmdgpu {
    /// How many driver reloads it has made.
    pub fn reloads(&self) -> usize {
        self.log
            .iter()
            .filter(|line| *line == "modprobe amdgpu")
            .count()
    }

    /// The writes of the log that changed or requested a partition (refused ones left out).
    pub fn partition_writes(&self) -> Vec<&str> {
        self.log
            .iter()
            .map(String::as_str)
            // `current_<file> <gpu> <mode>`; a refused one has its errno after.
            .filter(|line| line.starts_with("current_") && line.split(' ').count() == 3)
            .collect()
    }
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
