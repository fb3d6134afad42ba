//! [`DeclaredVf`]: a virtual function declared to hold a vGPU type, as a declaration and its
//! differences name it.

use gpu_partition_types::VgpuTypeId;
use serde::{Deserialize, Serialize};

/// A VF declared to hold a vGPU type.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredVf {
    /// The VF's number (`virtfn<index>`).
    pub index: u32,
    /// The type's ID, from the card's catalogue when it was applied.
    pub type_id: VgpuTypeId,
    /// Its name, as the config gave it (`A100-1-5C`).
    pub name: String,
}

impl DeclaredVf {
    /// VF `index` holding type `type_id` (named `name`).
    pub fn new(index: u32, type_id: VgpuTypeId, name: impl Into<String>) -> Self {
        Self {
            index,
            type_id,
            name: name.into(),
        }
    }
}
