//! [`GpuReason`]: why a GPU has the mode it has, a closed set the compiler checks, spelled as
//! the tokens of the state file and the JSON (`timeout`, `helper:busy`, `not_nvidia`,
//! `driver_vfio_pci`, …). A mode that needs no reason has none (`Option<GpuReason>`, written
//! `""`).

use gpu_partition_types::UnreadableReason;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Why a GPU has its partition mode, when the mode needs a reason (a mode read from the card,
/// `not_in_use`, or `unknown` just before a read need none).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GpuReason {
    /// `unknown` or `possibly_enabled`: why the read failed (the protocol's reasons, and
    /// `helper:<kind>` for the helper's own).
    Read(UnreadableReason),
    /// `possibly_enabled`: a read that never finished (the run was killed between the `unknown`
    /// written before it and its answer), found by the first start after a boot.
    ReadInterrupted,
    /// `not_checked`: why the host does not read this GPU, by design.
    NotRead(NotRead),
    /// `unknown` or `possibly_enabled`: why an AMD GPU's partitions did not read from sysfs.
    Amdgpu(AmdUnread),
}

/// Why an AMD GPU's partition files did not read (`gpu_host_probe::amdgpu::AmdError`, as a token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AmdUnread {
    /// The kernel answered `EPERM`: the GPU is in reset (`amdgpu_in_reset`).
    InReset,
    /// The kernel says `UNKNOWN`: the driver has set no mode (`amdgpu_no_mode`).
    NoMode,
    /// A file did not read, or held what amdgpu does not write there (`amdgpu_unreadable`).
    Unreadable,
}

impl AmdUnread {
    /// The reason a failed read of a GPU's partition files gives the GPU's record.
    pub fn of(error: &gpu_host_probe::amdgpu::AmdError) -> Self {
        if error.is_in_reset() {
            Self::InReset
        } else if error.is_no_mode() {
            Self::NoMode
        } else {
            Self::Unreadable
        }
    }
}

/// Why the host does not read a GPU, by design.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotRead {
    /// Not a GPU of a vendor the host reads (NVIDIA through the helper, AMD through amdgpu's
    /// sysfs files): `not_nvidia`, the token of the versions that read NVIDIA GPUs only, kept.
    NotNvidia,
    /// Bound to no driver: `no_driver`.
    NoDriver,
    /// Bound to another driver than its vendor's (`nvidia`, `amdgpu`): `driver_<name>`, every character of the name
    /// outside `[a-z0-9]` turned into `_` (`driver_vfio_pci`).
    Driver(String),
}

impl NotRead {
    /// The reason of a GPU bound to `driver`, its name made a token.
    pub fn driver(driver: &str) -> Self {
        Self::Driver(
            driver
                .chars()
                .map(|c| {
                    if c.is_ascii_lowercase() || c.is_ascii_digit() {
                        c
                    } else {
                        '_'
                    }
                })
                .collect(),
        )
    }
}

const READ_INTERRUPTED: &str = "read_interrupted";
const NOT_NVIDIA: &str = "not_nvidia";
const NO_DRIVER: &str = "no_driver";
const DRIVER: &str = "driver_";
const AMDGPU_IN_RESET: &str = "amdgpu_in_reset";
const AMDGPU_NO_MODE: &str = "amdgpu_no_mode";
const AMDGPU_UNREADABLE: &str = "amdgpu_unreadable";

impl fmt::Display for GpuReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read(reason) => write!(f, "{reason}"),
            Self::ReadInterrupted => f.write_str(READ_INTERRUPTED),
            Self::NotRead(NotRead::NotNvidia) => f.write_str(NOT_NVIDIA),
            Self::NotRead(NotRead::NoDriver) => f.write_str(NO_DRIVER),
            Self::NotRead(NotRead::Driver(name)) => write!(f, "{DRIVER}{name}"),
            Self::Amdgpu(AmdUnread::InReset) => f.write_str(AMDGPU_IN_RESET),
            Self::Amdgpu(AmdUnread::NoMode) => f.write_str(AMDGPU_NO_MODE),
            Self::Amdgpu(AmdUnread::Unreadable) => f.write_str(AMDGPU_UNREADABLE),
        }
    }
}

/// A token that is no GPU reason this version knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a GPU reason this version knows")]
pub struct UnknownGpuReason(pub String);

impl FromStr for GpuReason {
    type Err = UnknownGpuReason;

    fn from_str(text: &str) -> Result<Self, UnknownGpuReason> {
        let valid_name = |name: &str| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        Ok(match text {
            READ_INTERRUPTED => Self::ReadInterrupted,
            NOT_NVIDIA => Self::NotRead(NotRead::NotNvidia),
            NO_DRIVER => Self::NotRead(NotRead::NoDriver),
            AMDGPU_IN_RESET => Self::Amdgpu(AmdUnread::InReset),
            AMDGPU_NO_MODE => Self::Amdgpu(AmdUnread::NoMode),
            AMDGPU_UNREADABLE => Self::Amdgpu(AmdUnread::Unreadable),
            _ => match text.strip_prefix(DRIVER) {
                Some(name) if valid_name(name) => Self::NotRead(NotRead::Driver(name.to_owned())),
                _ => Self::Read(
                    text.parse()
                        .map_err(|_| UnknownGpuReason(text.to_owned()))?,
                ),
            },
        })
    }
}

/// A reason that may be absent, written as its token or as `""` (the state file's and the
/// JSON's form).
pub(crate) mod token_or_empty {
    use super::GpuReason;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(
        reason: &Option<GpuReason>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match reason {
            Some(reason) => serializer.collect_str(reason),
            None => serializer.serialize_str(""),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<GpuReason>, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(serde::de::Error::custom)
    }
}

impl Serialize for GpuReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GpuReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_reads_back_from_its_token() {
        let reasons = [
            GpuReason::Read(UnreadableReason::Timeout),
            GpuReason::Read(UnreadableReason::Helper("busy".into())),
            GpuReason::ReadInterrupted,
            GpuReason::NotRead(NotRead::NotNvidia),
            GpuReason::NotRead(NotRead::NoDriver),
            GpuReason::NotRead(NotRead::driver("vfio-pci")),
            GpuReason::Amdgpu(AmdUnread::InReset),
            GpuReason::Amdgpu(AmdUnread::NoMode),
            GpuReason::Amdgpu(AmdUnread::Unreadable),
        ];
        for reason in reasons {
            assert_eq!(reason.to_string().parse(), Ok(reason));
        }
    }

    #[test]
    fn a_driver_name_becomes_a_token() {
        assert_eq!(
            GpuReason::NotRead(NotRead::driver("Xen-PCIBack.2")).to_string(),
            "driver__en_____ack_2"
        );
    }

    #[test]
    fn a_token_this_version_does_not_know_is_an_error() {
        assert!("cosmic_rays".parse::<GpuReason>().is_err());
        assert!("".parse::<GpuReason>().is_err());
        assert!("driver_".parse::<GpuReason>().is_err());
    }
}
