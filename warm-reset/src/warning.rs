//! [`ResetWarning`]: what did not change a reset's course but a person should know.

use std::fmt;

/// What did not change a reset's course but a person should know. Written as its message (in
/// `mxctl --json reset`'s `warnings`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResetWarning {
    /// The MetaXLink topology (`mx-smi topo -m`) did not read: the interconnect groups are
    /// unknown and the links are not verified. Why, with its causes.
    TopologyUnread {
        /// Whether it was after the reset (before it, the group is unknown too).
        after_reset: bool,
        /// What `mx-smi` said.
        why: String,
    },
    /// A version in `mx-smi`'s header is missing or does not read, so it was not checked
    /// against the guide's minimum. What is missing.
    VersionUnchecked(String),
    /// NVLink peers of the named GPUs are reset with them, in the same command.
    PeersResetToo {
        /// The peers, as `GPU n (bus id)`.
        peers: Vec<String>,
    },
    /// The kernel resets the whole XGMI hive of the named AMD GPUs with them.
    HiveResetToo {
        /// The other GPUs of the hives, by PCI address.
        peers: Vec<String>,
    },
    /// A reset that an earlier run issued (it died inside the window) is verified by this run.
    VerifyingEarlierReset,
    /// The kernel log could not be checked after the reset. Why.
    KernelLogUnchecked(String),
    /// The journal's record of the reset in flight could not be closed. Why.
    JournalNotClosed(String),
    /// How the run ended could not be recorded in the journal. Why.
    EndNotRecorded(String),
}

impl fmt::Display for ResetWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TopologyUnread {
                after_reset: false,
                why,
            } => write!(
                f,
                "the MetaXLink topology does not read, so the interconnect groups are unknown \
                 and the links are not verified: {why}"
            ),
            Self::TopologyUnread {
                after_reset: true,
                why,
            } => write!(
                f,
                "the MetaXLink topology does not read after the reset, so the links are not \
                 verified: {why}"
            ),
            Self::VersionUnchecked(what) => write!(f, "{what}; it was not checked"),
            Self::PeersResetToo { peers } => {
                write!(
                    f,
                    "NVLink peers are reset with the GPU: {}",
                    peers.join(", ")
                )
            }
            Self::HiveResetToo { peers } => write!(
                f,
                "the kernel resets the XGMI hive together: these GPUs are reset with it: {}",
                peers.join(", ")
            ),
            Self::VerifyingEarlierReset => {
                f.write_str("verifying a reset that an earlier run issued")
            }
            Self::KernelLogUnchecked(why) => {
                write!(f, "the kernel log could not be checked: {why}")
            }
            Self::JournalNotClosed(why) => write!(f, "the journal could not be closed: {why}"),
            Self::EndNotRecorded(why) => {
                write!(f, "the end of this run could not be recorded: {why}")
            }
        }
    }
}

impl serde::Serialize for ResetWarning {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
