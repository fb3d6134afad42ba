//! [`Outcome`]: what a read of one card gives its caller, and [`UnreadableReason`].

use crate::{Case, GpuInstance, Mode, PartitionMode, Profile, Vgpu};
use std::fmt;
use std::str::FromStr;

/// What a read of one card gives: the strict reading of `mode` and `case`, with the lists that
/// were read (lost elements left out).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// MIG capable and at least one GPU instance exists.
    Partitions {
        /// MIG capability and mode.
        mode: Mode,
        /// The GPU instances that were read.
        instances: Vec<GpuInstance>,
        /// The profiles that were read.
        catalogue: Vec<Profile>,
        /// The vGPUs that were read.
        vgpus: Vec<Vgpu>,
    },
    /// MIG capable, no GPU instance.
    NoneCarved {
        /// MIG capability and mode.
        mode: Mode,
        /// The profiles that were read.
        catalogue: Vec<Profile>,
    },
    /// The card could not be read.
    Unreadable(UnreadableReason),
    /// The card cannot be partitioned.
    NotApplicable,
}

impl Outcome {
    /// The outcome's kind, spelled as `case` is.
    pub fn case(&self) -> Case {
        match self {
            Self::Partitions { .. } => Case::Partitions,
            Self::NoneCarved { .. } => Case::NoneCarved,
            Self::Unreadable(_) => Case::Unreadable,
            Self::NotApplicable => Case::NotApplicable,
        }
    }

    /// The partition mode the outcome maps to.
    pub fn partition_mode(&self) -> PartitionMode {
        match self {
            Self::Partitions { mode, .. } | Self::NoneCarved { mode, .. } => mode.partition_mode(),
            Self::Unreadable(_) => PartitionMode::Unknown,
            Self::NotApplicable => PartitionMode::NotSupported,
        }
    }

    /// Why the card could not be read, if it could not.
    pub fn reason(&self) -> Option<&UnreadableReason> {
        match self {
            Self::Unreadable(reason) => Some(reason),
            Self::Partitions { .. } | Self::NoneCarved { .. } | Self::NotApplicable => None,
        }
    }
}

/// Why a card could not be read: the helper's own `unreadable.kind`, or a reason of the
/// caller's when there is no usable reply.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UnreadableReason {
    /// The helper said why: `helper:<kind>`.
    Helper(String),
    /// Nothing at the helper's path (never forked).
    HelperAbsent,
    /// Not a regular executable file, or exec failed (never forked when the bit is missing).
    HelperNotExecutable,
    /// Another user could have written the helper, or a directory on its way (never forked).
    HelperUnsafe,
    /// The deadline passed.
    Timeout,
    /// A non-zero exit other than 75, or death by a signal.
    Crash,
    /// The output did not read, was empty, or passed its cap.
    Undecodable,
    /// Exit 75: the card is held by another client or a lock.
    Busy,
    /// `--version` lists no `read` format with major 1.
    Incompatible,
    /// The caller cancelled the read (its run was ended, or never started).
    Cancelled,
}

impl UnreadableReason {
    /// Whether this failure holds for the whole host (found once, given to every card).
    pub fn is_host_wide(&self) -> bool {
        match self {
            Self::HelperAbsent
            | Self::HelperNotExecutable
            | Self::HelperUnsafe
            | Self::Incompatible => true,
            Self::Helper(_)
            | Self::Timeout
            | Self::Crash
            | Self::Undecodable
            | Self::Busy
            | Self::Cancelled => false,
        }
    }
}

impl fmt::Display for UnreadableReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token = match self {
            Self::Helper(kind) => return write!(f, "helper:{kind}"),
            Self::HelperAbsent => "helper_absent",
            Self::HelperNotExecutable => "helper_not_executable",
            Self::HelperUnsafe => "helper_unsafe",
            Self::Timeout => "timeout",
            Self::Crash => "crash",
            Self::Undecodable => "undecodable",
            Self::Busy => "busy",
            Self::Incompatible => "incompatible",
            Self::Cancelled => "cancelled",
        };
        f.write_str(token)
    }
}

/// A reason token that names no reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown read reason {0:?}")]
pub struct UnknownReason(pub String);

impl FromStr for UnreadableReason {
    type Err = UnknownReason;

    fn from_str(text: &str) -> Result<Self, UnknownReason> {
        Ok(match text {
            "helper_absent" => Self::HelperAbsent,
            "helper_not_executable" => Self::HelperNotExecutable,
            "helper_unsafe" => Self::HelperUnsafe,
            "timeout" => Self::Timeout,
            "crash" => Self::Crash,
            "undecodable" => Self::Undecodable,
            "busy" => Self::Busy,
            "incompatible" => Self::Incompatible,
            "cancelled" => Self::Cancelled,
            _ => match text.strip_prefix("helper:") {
                Some(kind) if !kind.is_empty() => Self::Helper(kind.to_owned()),
                _ => return Err(UnknownReason(text.to_owned())),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_token_reads_back_as_the_same_reason() {
        let reasons = [
            UnreadableReason::Helper("driver_error".into()),
            UnreadableReason::HelperAbsent,
            UnreadableReason::HelperNotExecutable,
            UnreadableReason::HelperUnsafe,
            UnreadableReason::Timeout,
            UnreadableReason::Crash,
            UnreadableReason::Undecodable,
            UnreadableReason::Busy,
            UnreadableReason::Incompatible,
        ];
        for reason in reasons {
            assert_eq!(reason.to_string().parse(), Ok(reason));
        }
    }

    #[test]
    fn a_helper_reason_is_prefixed_with_helper() {
        assert_eq!(
            UnreadableReason::Helper("busy".into()).to_string(),
            "helper:busy"
        );
        assert!("helper:".parse::<UnreadableReason>().is_err());
    }

    #[test]
    fn only_absent_not_executable_unsafe_and_incompatible_are_host_wide() {
        assert!(UnreadableReason::HelperAbsent.is_host_wide());
        assert!(UnreadableReason::HelperNotExecutable.is_host_wide());
        assert!(UnreadableReason::HelperUnsafe.is_host_wide());
        assert!(UnreadableReason::Incompatible.is_host_wide());
        assert!(!UnreadableReason::Timeout.is_host_wide());
        assert!(!UnreadableReason::Busy.is_host_wide());
    }
}
