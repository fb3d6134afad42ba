//! The fake GPUs and the kernel's rules they answer by: partition writes, requests, reloads and
//! reboots, each shown in the fake sysfs and logged.

use super::parts::{AmdPart, part_by_name};
use crate::fake_sysfs::FakeSysfs;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use nix::errno::Errno;
use serde::{Deserialize, Serialize};
use std::io;

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
    pub(super) sysfs: FakeSysfs,
    /// The GPUs.
    pub gpus: Vec<FakeAmdGpu>,
    /// Every write, in order.
    pub log: Vec<String>,
    /// What a driver reload costs, slept on each (none by default): a benchmark's model. A
    /// partition write costs nothing modelled: a memory write only caches a request
    /// (`current_memory_partition_store`), and no source gives a compute switch's time.
    pub reload_cost: std::time::Duration,
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

    /// `text` written by `write` to the file `name` of the GPU at `bdf`, logged with the errno
    /// that refused it (each partition file's write is logged alike).
    fn logged_write(
        &mut self,
        name: &str,
        bdf: &str,
        text: &str,
        write: fn(&mut Self, &str, &str) -> Result<(), Errno>,
    ) -> Result<(), Errno> {
        let answer = write(self, bdf, text);
        let what = format!("{name} {bdf} {}", text.trim_end());
        match &answer {
            Ok(_) => self.log.push(what),
            Err(errno) => self.log.push(format!("{what} {errno:?}")),
        }
        answer
    }

    /// `text` written to `current_compute_partition` of the GPU at `bdf` (logged).
    pub fn write_compute(&mut self, bdf: &str, text: &str) -> Result<(), Errno> {
        self.logged_write(
            "current_compute_partition",
            bdf,
            text,
            Self::compute_written,
        )
    }

    /// `text` written to `current_memory_partition` of the GPU at `bdf` (logged): a request for
    /// its hive.
    pub fn write_memory(&mut self, bdf: &str, text: &str) -> Result<(), Errno> {
        self.logged_write("current_memory_partition", bdf, text, Self::memory_written)
    }

    /// Where the GPU at `bdf` is, and the mode `text` names, as amdgpu checks both files' writes
    /// first: no such GPU `ENODEV`, a GPU in reset `EPERM`, no mode of `T` `EINVAL`.
    fn written_mode<T: gpu_partition_types::Token>(
        &self,
        bdf: &str,
        text: &str,
    ) -> Result<(usize, T), Errno> {
        let at = self.at(bdf)?;
        if self.gpus[at].in_reset {
            return Err(Errno::EPERM);
        }
        Ok((at, matched(text).ok_or(Errno::EINVAL)?))
    }

    fn compute_written(&mut self, bdf: &str, text: &str) -> Result<(), Errno> {
        let (at, mode) = self.written_mode::<ComputePartition>(bdf, text)?;
        let gpu = &self.gpus[at];
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
        let (at, mode) = self.written_mode::<MemoryPartition>(bdf, text)?;
        let gpu = &self.gpus[at];
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
            for (file, text) in Self::files(gpu) {
                std::fs::write(device.join(file), text)?;
            }
        }
        Ok(())
    }

    /// The partition files of `gpu` as the kernel shows them now, each with its text
    /// (`available_memory_partition` only where the part offers memory partitions).
    fn files(gpu: &FakeAmdGpu) -> Vec<(&'static str, String)> {
        let compute = gpu
            .compute
            .map_or("UNKNOWN", gpu_partition_types::Token::as_str);
        let mut files = vec![
            ("current_compute_partition", format!("{compute}\n")),
            (
                "available_compute_partition",
                list_line(&Self::available_compute(gpu)),
            ),
            ("current_memory_partition", format!("{}\n", gpu.memory)),
        ];
        if !gpu.part.memory_offered.is_empty() {
            files.push((
                "available_memory_partition",
                list_line(gpu.part.memory_offered),
            ));
        }
        files
    }

    /// The text of the partition file `file` of the GPU at `bdf` as the kernel shows it now
    /// (`None`: no such GPU, or no such file): what a test's driver serves.
    pub fn file_text(&self, bdf: &str, file: &str) -> Option<String> {
        let gpu = self.gpus.iter().find(|gpu| gpu.bdf == bdf)?;
        Self::files(gpu)
            .into_iter()
            .find(|(name, _)| *name == file)
            .map(|(_, text)| text)
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
