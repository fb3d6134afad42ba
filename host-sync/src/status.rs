//! The host fields: [`HostStatus`] and its reason token.

use serde::{Serialize, Serializer};
use std::fmt;

gpu_partition_types::token_enum! {
    /// Whether the host takes part in GPU partitioning. All five values exist from the first
    /// release: a reader fails on a stored value it does not know.
    pub enum HostStatus: "host status" {
        /// The host has not run this sync yet; the default.
        NotReported = "not_reported",
        /// The host does not take part; the reason says why.
        Inactive = "inactive",
        /// The pool wants partitioning and this host is on its way in.
        Entering = "entering",
        /// Partitioning is in use on this host.
        Active = "active",
        /// The pool no longer wants partitioning and this host still has divided GPUs.
        Leaving = "leaving",
    }
}

gpu_partition_types::token_enum! {
    /// The pool's switch for GPU partitioning (the toolstack's pool-wide setting): whether this
    /// host is to take part.
    pub enum Pool: "pool switch" {
        /// Partitioning is wanted: the host reads its cards and may enter.
        Enabled = "enabled",
        /// It is not: no helper runs, and a host still divided is leaving.
        Disabled = "disabled",
    }
}

impl Pool {
    /// Whether the switch is on.
    pub fn is_enabled(self) -> bool {
        self == Self::Enabled
    }
}

/// The host's reason as stored: a token `[a-z][a-z0-9_]*` of at most 64 bytes, or empty. An
/// open set on the wire (new causes are new tokens, and a state file another version wrote may
/// hold one this version does not give); this version gives only the [`HostReason`]s. (Named
/// apart from a reset's reasons, `warm_reset::ResetReason`.)
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct StoredReason(String);

/// Text that is not a reason token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a reason token ([a-z][a-z0-9_]*, at most 64 bytes)")]
pub struct BadReason(pub String);

impl StoredReason {
    /// The empty reason (of a status that needs none, such as `not_reported`).
    pub fn none() -> Self {
        Self(String::new())
    }

    /// A reason token, checked.
    pub fn new(token: &str) -> Result<Self, BadReason> {
        let mut bytes = token.bytes();
        let valid = token.len() <= 64
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if valid || token.is_empty() {
            Ok(Self(token.to_owned()))
        } else {
            Err(BadReason(token.to_owned()))
        }
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A reason from a token of a closed set (another crate's reason enum): it cannot fail, so
    /// no record is ever written with a reason the store then refuses — a byte outside
    /// `[a-z0-9_]` becomes `_`, a first byte that is no letter gets `r` before it, and it is cut
    /// at 64 bytes. (Every reason an apply records is a token already, as mig-layout's tests of
    /// its records check.)
    pub fn of_token(token: &str) -> Self {
        let mut text: String = token
            .bytes()
            .map(|b| {
                if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' {
                    char::from(b)
                } else {
                    '_'
                }
            })
            .collect();
        if !text.starts_with(|c: char| c.is_ascii_lowercase()) {
            text.insert(0, 'r');
        }
        text.truncate(64);
        Self(text)
    }
}

impl fmt::Display for StoredReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for StoredReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for StoredReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        StoredReason::new(&text).map_err(serde::de::Error::custom)
    }
}

gpu_partition_types::token_enum! {
    /// Why the host has its status: the reasons the checks of [`crate::CHECKS`] give, most
    /// specific first. A new check adds a value here: this crate's matches must name it, and
    /// for an embedder it is not a breaking change (match with a wildcard arm).
    #[non_exhaustive]
    pub enum HostReason: "host reason" {
        /// No NVIDIA display-class physical function on the host.
        NoPartitionableGpu = "no_partitionable_gpu",
        /// The stored state did not read and no good copy of it did: it is kept aside (the
        /// message names the file), and what the host was declared to be is not known, until a
        /// good copy is put back or a layout is declared anew.
        StateLost = "state_lost",
        /// Pool switch off, some NVIDIA GPU last known divided.
        GpusStillDivided = "gpus_still_divided",
        /// Pool switch off.
        PoolDisabled = "pool_disabled",
        /// Pool switch on, some GPU to be read, the helper absent, not executable, unsafe or
        /// incompatible.
        HelperUnavailable = "helper_unavailable",
        /// A MIG layout is being applied (written by the layout executor when it starts, under
        /// the host lock; no check gives it, since a sync that holds the lock finds no apply
        /// running).
        LayoutApplying = "layout_applying",
        /// The last layout apply failed, needed a cold reboot or was interrupted, and none has
        /// healed it since; the message says what happened.
        LayoutFailed = "layout_failed",
        /// Pool switch on, and some declared GPU the sync read differs from the declared layout
        /// (instances destroyed by a reboot, a driver reload or by hand; the MIG mode lost; another
        /// card in the slot): the message names every difference; a restore of the declaration
        /// brings back what it can.
        LayoutDrifted = "layout_drifted",
        /// Pool switch on, some NVIDIA GPU to be read is not settled.
        GpusPending = "gpus_pending",
        /// Partitioning is in use.
        Ready = "ready",
    }
}

impl From<HostReason> for StoredReason {
    fn from(reason: HostReason) -> Self {
        Self(gpu_partition_types::Token::as_str(reason).to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_reason_is_a_valid_stored_token() {
        for reason in <HostReason as gpu_partition_types::Token>::ALL {
            assert_eq!(
                StoredReason::new(&reason.to_string()),
                Ok(StoredReason::from(*reason))
            );
        }
    }

    #[test]
    fn a_token_of_a_closed_set_is_always_a_reason_that_reads_back() {
        for token in [
            "step_refused",
            "apply-start",
            "1st",
            "",
            &"a".repeat(70),
            "Ready",
        ] {
            let reason = StoredReason::of_token(token);
            assert_eq!(
                StoredReason::new(reason.as_str()),
                Ok(reason.clone()),
                "{token:?}"
            );
            assert!(!reason.as_str().is_empty(), "{token:?}");
        }
        assert_eq!(
            StoredReason::of_token("step_refused").as_str(),
            "step_refused"
        );
    }

    #[test]
    fn reason_tokens_are_lower_case_words_of_at_most_64_bytes() {
        assert!(StoredReason::new("driver_vfio_pci").is_ok());
        assert!(StoredReason::new("a1_").is_ok());
        for bad in ["Ready", "1abc", "_x", "a-b", "helper:busy", &"a".repeat(65)] {
            assert!(StoredReason::new(bad).is_err(), "{bad:?}");
        }
    }
}
