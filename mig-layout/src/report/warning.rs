//! What did not change an apply's course but a person should know ([`ApplyWarning`]).

use crate::apply::HookRun;
use crate::select::Absent;
use gpu_partition_types::Bdf;
use serde::{Serialize, Serializer};

/// What did not change an apply's course but a person should know.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyWarning {
    /// A device the layout lists is not on this host (as mig-parted, a spec for GPU 7 on a host
    /// of two names nothing).
    Absent(Absent),
    /// A declared GPU is not on this host now bound to its vendor's driver (`nvidia`,
    /// `amdgpu`): the restore left it alone.
    DeclaredAbsent {
        /// The GPU.
        device: Bdf,
    },
    /// Another board of the same model is in a declared slot: restored all the same.
    OtherBoard {
        /// The slot.
        device: Bdf,
        /// How it differs.
        change: layout_model::BoardChange,
    },
    /// Entries of a card's profile catalogue did not read (the helper lost them): the plan
    /// used the profiles that did, and a profile only a lost entry names is one the layout
    /// cannot be planned with.
    ProfilesUnread {
        /// The GPU.
        device: Bdf,
        /// The entries' positions in the reply's catalogue.
        positions: Vec<usize>,
    },
    /// The `apply-exit` hook did not exit 0 (the apply had ended).
    ExitHookFailed(HookRun),
    /// An AMD GPU outside the apply whose compute partition the driver reload set anew: set
    /// back to what it was (or why not).
    ReloadReset {
        /// The GPU.
        device: Bdf,
        /// The compute partition it had, written back.
        restored: gpu_host_probe::amdgpu::ComputePartition,
        /// Why the write failed, when it did.
        failed: Option<String>,
    },
    /// A hook exited 0 while something it started still held its output: the apply went on;
    /// what held the output was in the hook's process group and was stopped with it.
    HookHeldOutput(HookRun),
    /// A GPU of the layout (or the declaration) is not ours: left alone, nothing written,
    /// restored or reset on it.
    NotOurs {
        /// The GPU.
        device: Bdf,
        /// Who owns it.
        ownership: gpu_host_probe::Ownership,
    },
}

impl std::fmt::Display for ApplyWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Absent(absent) => write!(f, "{absent}"),
            Self::DeclaredAbsent { device } => write!(
                f,
                "{device} is declared but is not on this host now bound to its vendor's \
                 driver (nvidia, amdgpu); left alone"
            ),
            Self::OtherBoard { device, change } => {
                write!(
                    f,
                    "{device}: {change}; its declared layout is restored on it"
                )
            }
            Self::ProfilesUnread { device, positions } => {
                let each: Vec<String> = positions.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "{device}: {} entr{} of the profile catalogue did not read (at {}); the \
                     plan used the others",
                    positions.len(),
                    if positions.len() == 1 { "y" } else { "ies" },
                    each.join(", ")
                )
            }
            Self::ExitHookFailed(run) => write!(f, "{run}"),
            Self::ReloadReset {
                device,
                restored,
                failed: None,
            } => write!(
                f,
                "{device} is not in the layout; the driver reload set its compute partition \
                 anew, and it was set back to {restored}"
            ),
            Self::ReloadReset {
                device,
                restored,
                failed: Some(why),
            } => write!(
                f,
                "{device} is not in the layout; the driver reload set its compute partition \
                 anew, and setting it back to {restored} failed: {why}"
            ),
            Self::NotOurs { device, ownership } => write!(
                f,
                "{device} is not ours (ownership {ownership}): left alone, nothing written, \
                 restored or reset on it"
            ),
            Self::HookHeldOutput(run) => write!(
                f,
                "{run}: it exited 0 but something it started still held its output, and was \
                 stopped with the hook's process group; the apply went on"
            ),
        }
    }
}

impl Serialize for ApplyWarning {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
