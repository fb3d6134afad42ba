//! Why a write on a GPU failed, as data ([`WriteFailure`]): who refused it — the helper (NVML),
//! a program (`sriov-manage`, `modprobe`) or a kernel file — and how, so a toolstack acts on the
//! facts and people read the message derived from them.

use gpu_host_probe::run::RunResult;
use gpu_partition_types::{Enumerated, Op, RefusalKind, UnreadableReason};
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// Why a write on a GPU failed (`failure` of a GPU's report, tagged `by`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
#[non_exhaustive]
pub enum WriteFailure {
    /// The helper ran a step and NVML refused it.
    Nvml {
        /// The step.
        #[serde(serialize_with = "as_text")]
        op: Op,
        /// NVML's refusal, as the helper named it (a kind this version does not know is kept).
        #[serde(serialize_with = "as_text")]
        kind: Enumerated<RefusalKind>,
        /// What NVML said.
        message: String,
    },
    /// The helper's run gave no answer (its deadline, a crash, an answer that did not read).
    Helper {
        /// Why, as the helper protocol's reason.
        #[serde(serialize_with = "as_text")]
        reason: UnreadableReason,
        /// What happened.
        message: String,
    },
    /// A program ended otherwise than with exit 0 (`sriov-manage`, `modprobe`): its typed end
    /// and what it said.
    Program {
        /// The program (`sriov-manage`, `modprobe`), as its `gpu_host_probe::Program` names it.
        program: &'static str,
        /// The command as run.
        command: String,
        /// How its (last) run ended, as the runner classifies it.
        end: RunResult,
        /// Its standard error, trimmed.
        stderr: String,
    },
    /// `sriov-manage` exited 0 and left the VFs otherwise than asked.
    VfsNotAsAsked {
        /// `sriov_numvfs` after it.
        numvfs: u32,
        /// `sriov_totalvfs`.
        total: u32,
    },
    /// The kernel refused a write to one of its files: the driver's errno.
    Kernel {
        /// The file.
        file: PathBuf,
        /// The errno, where the write gave one.
        errno: Option<i32>,
        /// What the error says.
        message: String,
    },
}

fn as_text<T: fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

impl WriteFailure {
    /// Whether the failed write was `device`'s: a kernel file under its device directory, or a
    /// step or program run for it (a driver reload is every GPU's).
    pub(crate) fn reaches(&self, device: gpu_partition_types::Bdf) -> bool {
        match self {
            Self::Kernel { file, .. } => file
                .components()
                .any(|part| part.as_os_str() == device.to_string().as_str()),
            Self::Nvml { .. }
            | Self::Helper { .. }
            | Self::Program { .. }
            | Self::VfsNotAsAsked { .. } => true,
        }
    }

    /// The kernel's refusal of a write of `file`.
    pub(crate) fn kernel(file: PathBuf, error: &std::io::Error) -> Self {
        Self::Kernel {
            file,
            errno: error.raw_os_error(),
            message: error.to_string(),
        }
    }
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nvml { op, kind, message } => write!(f, "NVML refused {op} ({kind}): {message}"),
            Self::Helper { reason, message } => {
                write!(f, "the helper gave no answer ({reason}): {message}")
            }
            Self::Program {
                command,
                end,
                stderr,
                ..
            } => {
                write!(f, "`{command}` {end}")?;
                if !stderr.is_empty() {
                    write!(f, ": {stderr}")?;
                }
                Ok(())
            }
            Self::VfsNotAsAsked { numvfs, total } => write!(
                f,
                "sriov-manage exited 0, and sriov_numvfs reads {numvfs} of {total} virtual \
                 functions"
            ),
            Self::Kernel { file, message, .. } => {
                write!(f, "writing {} failed: {message}", file.display())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::WriteFailure;
    use gpu_partition_types::Bdf;

    fn bdf(text: &str) -> Bdf {
        text.parse().unwrap()
    }

    #[test]
    fn a_kernel_files_refusal_is_its_own_gpus_and_a_programs_is_every_gpus() {
        let refused = WriteFailure::Kernel {
            file: "/sys/bus/pci/devices/0000:05:00.0/current_memory_partition".into(),
            errno: Some(1),
            message: "Operation not permitted".to_owned(),
        };
        assert!(refused.reaches(bdf("0000:05:00.0")));
        assert!(!refused.reaches(bdf("0000:15:00.0")));
        let reload = WriteFailure::Program {
            program: "modprobe",
            command: "/sbin/modprobe -r amdgpu".to_owned(),
            end: gpu_host_probe::run::RunResult::Exited(1),
            stderr: String::new(),
        };
        assert!(reload.reaches(bdf("0000:15:00.0")));
    }
}
