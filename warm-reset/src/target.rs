//! [`Target`]: what a reset ID names on a host, as its backend resolved it: the devices named,
//! the devices verified after the reset, and the backend's own facts (opaque to the machine).

use crate::amd::AmdTarget;
use crate::metax::MetaxTarget;
use crate::method::Method;
use crate::nvidia::NvidiaTarget;
use crate::pci::PciTarget;
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};

/// The devices a reset touches, as one backend resolved an ID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Target {
    /// The ID as given.
    pub id: String,
    /// What the backend knows of the group (kept in the journal, so a later run can verify).
    pub facts: TargetFacts,
}

/// A backend's facts about a target. The machine never looks inside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TargetFacts {
    /// MetaX: the rows of `mx-smi -L` and the MetaXLink topology.
    Metax(MetaxTarget),
    /// NVIDIA: the group's GPUs from `nvidia-smi`, NVLink peers included.
    Nvidia(NvidiaTarget),
    /// A PCI function and, for a bus reset, every function on its bus.
    Pci(PciTarget),
    /// AMD: the GPUs named and every GPU of their XGMI hives, as sysfs showed them.
    Amd(AmdTarget),
}

impl Target {
    /// A target of `id` with these facts.
    pub fn new(id: &str, facts: TargetFacts) -> Self {
        Self {
            id: id.to_owned(),
            facts,
        }
    }

    /// The method that resolved it (and must reset and verify it).
    pub fn method(&self) -> Method {
        match &self.facts {
            TargetFacts::Metax(_) => Method::Metax,
            TargetFacts::Nvidia(_) => Method::Nvidia,
            TargetFacts::Pci(_) => Method::Pci,
            TargetFacts::Amd(_) => Method::Amd,
        }
    }

    /// The PCI addresses of the devices the ID names.
    pub fn devices(&self) -> Vec<Bdf> {
        match &self.facts {
            TargetFacts::Metax(metax) => metax.devices(),
            TargetFacts::Nvidia(nvidia) => nvidia.devices(),
            TargetFacts::Pci(pci) => pci.devices(),
            TargetFacts::Amd(amd) => amd.devices(),
        }
    }

    /// The PCI addresses of every device verified after the reset.
    pub fn verified(&self) -> Vec<Bdf> {
        match &self.facts {
            TargetFacts::Metax(metax) => metax.verified(),
            TargetFacts::Nvidia(nvidia) => nvidia.verified(),
            TargetFacts::Pci(pci) => pci.verified(),
            TargetFacts::Amd(amd) => amd.verified(),
        }
    }

    /// The interconnect group reset together (node IDs for MetaX, `nvidia-smi` indices for
    /// NVIDIA), when known; `None` for a PCI function, and for AMD, whose hive has no numbering
    /// of its own here (its GPUs are [`Target::verified`]).
    pub fn group(&self) -> Option<Vec<u32>> {
        match &self.facts {
            TargetFacts::Metax(metax) => metax.group(),
            TargetFacts::Nvidia(nvidia) => Some(nvidia.group()),
            TargetFacts::Pci(_) | TargetFacts::Amd(_) => None,
        }
    }
}

/// One method's facts: the method, and its variant of [`TargetFacts`].
pub(crate) trait MethodFacts: Sized {
    /// The method that resolves these facts.
    const METHOD: Method;
    /// These facts, when `facts` are this method's.
    fn of(facts: &TargetFacts) -> Option<&Self>;
}

/// [`MethodFacts`] for one method's facts: `$facts` is what its [`TargetFacts`] variant
/// `$variant` carries, and the method of the same name resolves it. The same for every method.
macro_rules! method_facts {
    ($facts:ty, $variant:ident) => {
        impl MethodFacts for $facts {
            const METHOD: Method = Method::$variant;
            fn of(facts: &TargetFacts) -> Option<&Self> {
                match facts {
                    TargetFacts::$variant(facts) => Some(facts),
                    _ => None,
                }
            }
        }
    };
}

method_facts!(MetaxTarget, Metax);
method_facts!(NvidiaTarget, Nvidia);
method_facts!(PciTarget, Pci);
method_facts!(AmdTarget, Amd);
