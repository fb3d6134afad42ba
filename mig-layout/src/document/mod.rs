//! The layout document: mig-parted's v1 config format, in YAML or in JSON, read with its
//! validation rules, and written back.
//!
//! ```yaml
//! version: v1
//! mig-configs:
//!   all-balanced:
//!     - device-filter: ["0x233010DE", "0x233110DE"]
//!       devices: all
//!       mig-enabled: true
//!       mig-devices:
//!         "1g.10gb": 2
//!         "2g.20gb": 1
//!         "3g.40gb": 1
//! ```
//!
//! The rules (mig-parted's, `api/spec/v1`): `version` is `v1` and is required; the only other
//! member is `mig-configs`, with at least one label, each a list of at least one spec; a spec
//! has `devices` (`all`, or a list of indices) and `mig-enabled` (required), `mig-devices`
//! (required when `mig-enabled` is true, empty or absent when false: a mapping of GPU instance
//! profile to count, counts 0 or more) and `device-filter` (optional: a PCI device ID
//! `0xDDDDVVVV`, device then vendor, optionally `:0xSSSSVVVV` for the subsystem, or a list of
//! them); any other member is refused. One extension: `devices` may list PCI addresses
//! (`"0000:3b:00.0"`) beside indices. A profile is named as the card's own catalogue names it
//! (`1g.10gb`, `1g.10gb+me`) or by its profile ID (an integer key).

pub(crate) mod dcm;
mod error;
mod node;
mod read;
pub(crate) mod vgpu;
pub(crate) mod vgpu_name;
mod write;

pub use error::LayoutError;
pub use read::MAX_DOCUMENT;
pub use write::{to_json, to_yaml};

use gpu_host_probe::{PciIdentity, PciSubsystem};
use gpu_partition_types::{Bdf, JsonPointer};
use layout_model::ProfileKey;
use std::fmt;

/// A layout document: labelled layouts, in the order the document gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Document {
    /// Each label with its specs.
    pub configs: Vec<(String, Vec<Spec>)>,
}

impl Document {
    /// A document of these layouts.
    pub fn new(configs: Vec<(String, Vec<Spec>)>) -> Self {
        Self { configs }
    }

    /// Reads a document, YAML or JSON (JSON is read as the YAML it also is, so both name
    /// their faults by line); refused whole, with the line and member at fault, when any part
    /// breaks a rule.
    pub fn from_text(text: &str) -> Result<Document, LayoutError> {
        read::document(text)
    }

    /// The specs of `label`.
    pub fn label(&self, label: &str) -> Option<&[Spec]> {
        self.configs
            .iter()
            .find(|(name, _)| name == label)
            .map(|(_, specs)| specs.as_slice())
    }

    /// The labels, in order.
    pub fn labels(&self) -> impl Iterator<Item = &str> {
        self.configs.iter().map(|(label, _)| label.as_str())
    }
}

/// Which GPUs a spec is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Devices {
    /// Every NVIDIA GPU of the host bound to `nvidia` (that the device filter lets through).
    All,
    /// These GPUs.
    Listed(Vec<DeviceRef>),
}

/// A GPU named in `devices`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceRef {
    /// By index: its position among the host's NVIDIA GPUs bound to `nvidia`, in PCI address
    /// order, from 0 (mig-parted's).
    Index(u32),
    /// By PCI address (this reader's extension).
    Address(Bdf),
}

impl fmt::Display for DeviceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Index(index) => write!(f, "GPU {index}"),
            Self::Address(bdf) => write!(f, "GPU {bdf}"),
        }
    }
}

/// A PCI device ID as `device-filter` gives it: device and vendor, and optionally the
/// subsystem's device and vendor (which must then match too). What it matches is a
/// [`PciIdentity`] the scan read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceId {
    /// The device ID (`0x2330`).
    pub device: u16,
    /// The vendor ID (`0x10de`).
    pub vendor: u16,
    /// The subsystem, when the filter names it.
    pub subsystem: Option<PciSubsystem>,
}

impl DeviceId {
    /// Whether a function with `identity` passes the filter: the same device and vendor, and
    /// the same subsystem when the filter names one.
    pub fn matches(&self, identity: &PciIdentity) -> bool {
        self.device == identity.device
            && self.vendor == identity.vendor
            && self
                .subsystem
                .is_none_or(|subsystem| Some(subsystem) == identity.subsystem)
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04X}{:04X}", self.device, self.vendor)?;
        if let Some(subsystem) = self.subsystem {
            write!(f, ":0x{:04X}{:04X}", subsystem.device, subsystem.vendor)?;
        }
        Ok(())
    }
}

/// One spec of a layout: the GPUs it is for and what they should be.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Spec {
    /// The GPUs.
    pub devices: Devices,
    /// Only GPUs with one of these PCI device IDs (none: any).
    pub device_filter: Vec<DeviceId>,
    /// MIG on or off.
    pub mig_enabled: bool,
    /// The GPU instances, by profile, with their counts, in the document's order (each with one
    /// compute instance filling it).
    pub mig_devices: Vec<(ProfileKey, u32)>,
    /// The line the spec starts on; `None` for a spec not read from a document.
    pub line: Option<usize>,
    /// Where it is in the document (`/mig-configs/LABEL/INDEX`).
    pub at: JsonPointer,
}

impl Spec {
    /// A spec for `devices`, MIG `mig_enabled` with `mig_devices`, no filter, from nowhere.
    pub fn new(devices: Devices, mig_enabled: bool, mig_devices: Vec<(ProfileKey, u32)>) -> Self {
        Self {
            devices,
            device_filter: Vec::new(),
            mig_enabled,
            mig_devices,
            line: None,
            at: JsonPointer::root(),
        }
    }
}
