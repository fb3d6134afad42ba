//! The vGPU layer's own writes, each recorded in the machine's record of writes before it
//! starts (so no observation made before says anything of the GPU after), each read back:
//!
//! - [`SriovManage`]: NVIDIA's `sriov-manage -e|-d <GPU>` run through the runner (its trust
//!   check, a deadline), with bounded retries, then `sriov_numvfs` and the `virtfn` links read
//!   back — `-e` must leave every VF the GPU has (the script writes `sriov_totalvfs`, never a
//!   chosen count), each with its `nvidia/` files, and `-d` none;
//! - [`write_vgpu_type`]: a type ID written to a VF's `current_vgpu_type` through a
//!   [`VgpuTypes`] (the kernel's file by default), then read back.
//!
//! Why retries, and which (the sources are in `host-sync/tests/samples/vgpu/README.md`): at boot
//! `sriov-manage -e` fails (exit 1) while the vGPU manager starts (stackhpc
//! ansible-collection-linux PR 37; cozystack's restore script retries five times, 3 s apart);
//! it cannot take the GPU's unbind lock while another NVML client holds the GPU (cubecos PR
//! 1141 retries that); and vGPU 17.2's script exits 0 having made no VF
//! (NVIDIA/gpu-driver-container PR 29; cozystack checks `sriov_numvfs` after a 0 exit). So a
//! run that exits non-zero, or exits 0 and leaves the VFs otherwise than asked, is tried again,
//! up to [`SriovManage::attempts`]; a run that could not start (an untrusted or missing
//! program), passed its deadline or was killed is not, nor one that says the device is no GPU
//! (`This is not a VGA or 3D controller`). The VFs' `nvidia/` files appear a moment after the
//! VFs (cozystack waits for them): they are waited for, up to [`SriovManage::vf_files_wait`].

use gpu_host_probe::Clock;
use gpu_host_probe::run::{RunResult, RunSpec};
use gpu_host_probe::vf::{VfTypeFile, VgpuTypes};
use gpu_host_probe::{Cancel, HostLock, Program, RecordError, Writer};
use gpu_partition_types::Bdf;
use gpu_partition_types::VgpuTypeId;
use host_sync::sriov::{Sriov, SriovError, parse_current_vgpu_type, read_sriov};
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where NVIDIA's vGPU manager installs `sriov-manage`.
pub const DEFAULT_SRIOV_MANAGE: &str = "/usr/lib/nvidia/sriov-manage";

/// How often the VFs' `nvidia/` files are looked for while they are waited for.
const VF_FILES_POLL: Duration = Duration::from_millis(100);

/// What text of `sriov-manage` says the device will never take VFs (no retry).
const NOT_A_GPU: &str = "This is not a VGA or 3D controller";

/// How `sriov-manage` is run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SriovManage {
    /// The program: the machine's own at [`DEFAULT_SRIOV_MANAGE`] by default, which a host
    /// whose roots are not the machine's never runs; like every program root runs, it must be
    /// one nobody else can change.
    pub program: Program,
    /// How long one run may take (default 120 s: enabling every VF of eight GPUs took 30 s
    /// and more in gpu-operator PR 2002; one GPU's run is given four times that).
    pub deadline: Duration,
    /// How many runs at most (default 5, as cozystack's restore script).
    pub attempts: NonZeroU32,
    /// The wait between two runs (default 3 s, as cozystack's).
    pub pause: Duration,
    /// How long the VFs' `nvidia/` files are waited for after `-e` (default 30 s).
    pub vf_files_wait: Duration,
}

impl Default for SriovManage {
    fn default() -> Self {
        Self {
            program: Program::installed("sriov-manage", DEFAULT_SRIOV_MANAGE),
            deadline: Duration::from_secs(120),
            attempts: NonZeroU32::new(5).unwrap_or(NonZeroU32::MIN),
            pause: Duration::from_secs(3),
            vf_files_wait: Duration::from_secs(30),
        }
    }
}

/// Which way `sriov-manage` was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VfsWanted {
    /// `-e`: every VF enabled.
    Enabled,
    /// `-d`: none.
    Disabled,
}

impl VfsWanted {
    /// The script's flag.
    pub fn flag(self) -> &'static str {
        match self {
            Self::Enabled => "-e",
            Self::Disabled => "-d",
        }
    }
}

/// The GPU's SR-IOV state read back after `sriov-manage` did what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VfsSet {
    /// What sysfs says now.
    pub sriov: Sriov,
    /// How many runs it took.
    pub attempts: u32,
}

/// How one run of `sriov-manage` ended, where it did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunEnd {
    /// The run ended so (a non-zero exit, a signal, the deadline, not started), with what it
    /// said on stderr.
    Ran {
        /// How it ended.
        result: RunResult,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// It exited 0, and `sriov_numvfs` reads `numvfs` of `total`.
    Exited0 {
        /// `sriov_numvfs` after it.
        numvfs: u32,
        /// `sriov_totalvfs`.
        total: u32,
    },
}

impl std::fmt::Display for RunEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ran { result, stderr } if stderr.is_empty() => write!(f, "{result}"),
            Self::Ran { result, stderr } => write!(f, "{result} ({stderr})"),
            Self::Exited0 { numvfs, total } => write!(
                f,
                "it exited 0, and sriov_numvfs reads {numvfs} of {total} virtual functions"
            ),
        }
    }
}

/// Why the VFs are not as asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SriovManageError {
    /// The write could not be recorded (nothing was run).
    #[error("{gpu}: cannot record the write before sriov-manage")]
    Record {
        /// The GPU.
        gpu: Bdf,
        /// Why.
        #[source]
        source: RecordError,
    },
    /// The GPU has no SR-IOV (`sriov_totalvfs` absent or 0): nothing was run.
    #[error("{gpu}: the GPU has no SR-IOV virtual functions")]
    NoSriov {
        /// The GPU.
        gpu: Bdf,
    },
    /// Every run failed, or one that is not tried again did.
    #[error(
        "{gpu}: {} {} {gpu} failed ({attempts} run{}): {last}",
        program.display(),
        wanted.flag(),
        if *attempts == 1 { "" } else { "s" }
    )]
    Failed {
        /// The GPU.
        gpu: Bdf,
        /// The program.
        program: PathBuf,
        /// Which way.
        wanted: VfsWanted,
        /// How many runs were made.
        attempts: u32,
        /// How the last ended.
        last: RunEnd,
    },
    /// The VFs were enabled, and one's `nvidia/` files did not appear in time (no vGPU
    /// manager for it).
    #[error(
        "{gpu}: virtual function {index} has no nvidia/current_vgpu_type {waited:?} after \
         sriov-manage -e"
    )]
    NoVgpuFiles {
        /// The GPU.
        gpu: Bdf,
        /// The first VF without them.
        index: u32,
        /// How long they were waited for.
        waited: Duration,
    },
    /// The GPU's SR-IOV state does not read.
    #[error(transparent)]
    Read(#[from] SriovError),
    /// The caller cancelled between two runs (the VFs are as the last run left them).
    #[error("{gpu}: cancelled between two runs of sriov-manage")]
    Cancelled {
        /// The GPU.
        gpu: Bdf,
    },
}

/// What a `sriov-manage` run needs besides its configuration.
#[derive(Clone, Copy)]
pub struct SriovManageOn<'a> {
    /// The host lock, held: every run is recorded under it.
    pub lock: &'a HostLock,
    /// The sysfs root (`/sys`).
    pub sysfs_root: &'a Path,
    /// The clock the pauses and waits are taken on.
    pub clock: &'a dyn Clock,
    /// Ends the wait between runs, and a run in progress (none: never).
    pub cancel: Option<&'a Cancel>,
}

impl std::fmt::Debug for SriovManageOn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SriovManageOn")
            .field("sysfs_root", &self.sysfs_root)
            .finish_non_exhaustive()
    }
}

impl SriovManage {
    /// `sriov-manage` at `path`, named by the caller (a fake for the host it built, a wrapper),
    /// with the default deadline and retries.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        let default = Self::default();
        Self {
            program: default.program.at(path),
            ..default
        }
    }

    /// Runs `sriov-manage` on `gpu` until its VFs are as `wanted` says, read back.
    pub fn set_vfs(
        &self,
        on: SriovManageOn<'_>,
        gpu: Bdf,
        wanted: VfsWanted,
    ) -> Result<VfsSet, SriovManageError> {
        let before = read_sriov(on.sysfs_root, gpu)?;
        if before.as_ref().is_none_or(|sriov| sriov.total_vfs == 0) {
            return Err(SriovManageError::NoSriov { gpu });
        }
        let enable = wanted == VfsWanted::Enabled;
        on.lock
            .record_write(&[gpu], Writer::SriovManage { enable })
            .map_err(|source| SriovManageError::Record { gpu, source })?;
        let most = self.attempts.get();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = match self.run_once(on, gpu, wanted)? {
                Ok(sriov) => {
                    if enable {
                        self.wait_for_vf_files(on, gpu, &sriov)?;
                    }
                    return Ok(VfsSet {
                        sriov: read_sriov(on.sysfs_root, gpu)?.unwrap_or(sriov),
                        attempts: attempt,
                    });
                }
                Err(last) => last,
            };
            let again = match &last {
                RunEnd::Ran {
                    result: RunResult::Exited(code),
                    stderr,
                } => *code != 0 && !stderr.contains(NOT_A_GPU),
                RunEnd::Exited0 { .. } => true,
                RunEnd::Ran { .. } => false,
            };
            if !again || attempt >= most {
                return Err(SriovManageError::Failed {
                    gpu,
                    program: self.program.path().to_path_buf(),
                    wanted,
                    attempts: attempt,
                    last,
                });
            }
            tracing::debug!("{gpu}: sriov-manage {}: {last}; again", wanted.flag());
            on.clock.sleep(self.pause);
            if on.cancel.is_some_and(Cancel::is_cancelled) {
                return Err(SriovManageError::Cancelled { gpu });
            }
        }
    }

    /// One run, and what it left: the SR-IOV state where it is as asked, else how it ended.
    fn run_once(
        &self,
        on: SriovManageOn<'_>,
        gpu: Bdf,
        wanted: VfsWanted,
    ) -> Result<Result<Sriov, RunEnd>, SriovManageError> {
        let mut spec = RunSpec::new(self.program.path(), self.deadline)
            .args([wanted.flag().to_owned(), gpu.to_string()]);
        if let Some(cancel) = on.cancel {
            spec = spec.cancel(cancel.clone());
        }
        let run = gpu_host_probe::run::run(&spec);
        let stderr = String::from_utf8_lossy(&run.stderr).trim().to_owned();
        if run.result != RunResult::Exited(0) {
            return Ok(Err(RunEnd::Ran {
                result: run.result,
                stderr,
            }));
        }
        let Some(sriov) = read_sriov(on.sysfs_root, gpu)? else {
            return Err(SriovManageError::NoSriov { gpu });
        };
        let numvfs = u32::try_from(sriov.vfs.len()).unwrap_or(u32::MAX);
        let done = match wanted {
            VfsWanted::Enabled => numvfs == sriov.total_vfs,
            VfsWanted::Disabled => numvfs == 0,
        };
        Ok(if done {
            Ok(sriov)
        } else {
            Err(RunEnd::Exited0 {
                numvfs,
                total: sriov.total_vfs,
            })
        })
    }

    /// Waits until every VF of `sriov` has its `nvidia/current_vgpu_type`.
    fn wait_for_vf_files(
        &self,
        on: SriovManageOn<'_>,
        gpu: Bdf,
        sriov: &Sriov,
    ) -> Result<(), SriovManageError> {
        let started = on.clock.now();
        loop {
            let missing = sriov.vfs.iter().find(|vf| {
                !VfTypeFile {
                    gpu,
                    index: vf.index,
                }
                .path(on.sysfs_root)
                .exists()
            });
            let Some(vf) = missing else {
                return Ok(());
            };
            let waited = on.clock.now().saturating_sub(started);
            if waited >= self.vf_files_wait {
                return Err(SriovManageError::NoVgpuFiles {
                    gpu,
                    index: vf.index,
                    waited,
                });
            }
            on.clock.sleep(VF_FILES_POLL);
        }
    }
}

/// Why a VF's vGPU type is not as written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TypeWriteError {
    /// The write could not be recorded (nothing was written).
    #[error("{}: cannot record the write", describe(*file))]
    Record {
        /// The VF's file.
        file: VfTypeFile,
        /// Why.
        #[source]
        source: RecordError,
    },
    /// The driver refused the write.
    #[error("{}: writing {id} failed: {source}{}", describe(*file), meaning(source))]
    Refused {
        /// The VF's file.
        file: VfTypeFile,
        /// What was written.
        id: u32,
        /// The write's error (the driver's errno).
        #[source]
        source: std::io::Error,
    },
    /// The file does not read back.
    #[error("{}: cannot read it back", describe(*file))]
    Unreadable {
        /// The VF's file.
        file: VfTypeFile,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It reads back as another type (or none).
    #[error("{}: {id} was written, and it reads {}", describe(*file), show(*read))]
    NotKept {
        /// The VF's file.
        file: VfTypeFile,
        /// What was written.
        id: u32,
        /// What it reads.
        read: Option<VgpuTypeId>,
    },
    /// It reads back as no type ID at all.
    #[error(transparent)]
    Read(#[from] SriovError),
}

fn describe(file: VfTypeFile) -> String {
    format!(
        "{}: virtual function {}'s current_vgpu_type",
        file.gpu, file.index
    )
}

fn show(read: Option<VgpuTypeId>) -> String {
    read.map_or_else(|| "0 (no vGPU)".to_owned(), |id| id.0.to_string())
}

/// What the driver means by a write's errno (`EIO`: the card cannot create the type now;
/// `EPERM`: the VF has a vGPU, or none to remove), as a clause after the error.
fn meaning(error: &std::io::Error) -> &'static str {
    match error.raw_os_error() {
        Some(nix::libc::EIO) => {
            " (the card cannot create the type now: for a MIG-backed type, no GPU instance of its \
             profile with room, as when the instances were made before the VFs)"
        }
        Some(nix::libc::EPERM) => {
            " (the VF has a vGPU already, or none to remove: clear it with 0 first)"
        }
        _ => "",
    }
}

/// Writes `id` (`None`: `0`, the VF's vGPU removed) to VF `file`'s `current_vgpu_type` through
/// `via`, recorded under `lock` first, and reads it back.
pub fn write_vgpu_type(
    lock: &HostLock,
    sysfs_root: &Path,
    via: &dyn VgpuTypes,
    file: VfTypeFile,
    id: Option<VgpuTypeId>,
) -> Result<(), TypeWriteError> {
    lock.record_write(&[file.gpu], Writer::VgpuType { index: file.index })
        .map_err(|source| TypeWriteError::Record { file, source })?;
    let number = id.map_or(0, VgpuTypeId::get);
    via.write(sysfs_root, file, id)
        .map_err(|source| TypeWriteError::Refused {
            file,
            id: number,
            source,
        })?;
    let path = file.path(sysfs_root);
    let text = std::fs::read_to_string(&path)
        .map_err(|source| TypeWriteError::Unreadable { file, source })?;
    let read = parse_current_vgpu_type(&text, &path)?;
    if read != id {
        return Err(TypeWriteError::NotKept {
            file,
            id: number,
            read,
        });
    }
    Ok(())
}
