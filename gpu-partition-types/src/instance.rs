//! GPU instances (`gpu_instances`) and their compute instances.

use crate::Nullable;

crate::record::record! {
    /// Where an instance sits on the card's slices.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Placement: "a placement object" {
        /// First slice.
        start: required u32 = "start",
        /// Number of slices.
        size: required u32 = "size",
    }
}

crate::record::record! {
    /// A GPU instance carved on the card.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct GpuInstance: "a GPU instance object" {
        /// The instance's number.
        id: required u32 = "id",
        /// The profile it was made from.
        profile_id: required u32 = "profile_id",
        /// Where it sits (lenient).
        placement: lenient Placement = "placement",
        /// Its UUID, when the driver gives one.
        uuid: required Nullable<String> = "uuid",
        /// The compute instances inside it (lenient as a whole list).
        compute_instances: lenient Vec<ComputeInstance> = "compute_instances",
    }
}

crate::record::record! {
    /// A compute instance inside a GPU instance.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct ComputeInstance: "a compute instance object" {
        /// The compute instance's number.
        id: required u32 = "id",
        /// The compute-instance profile it was made from.
        profile_id: required u32 = "profile_id",
        /// Where it sits inside the GPU instance.
        placement: required Placement = "placement",
    }
}

/// A placement as a store keeps it (`{"start": N, "size": N}`): the same shape as on the wire,
/// read strictly (a store answers what it was given, or an error).
impl<'de> serde::Deserialize<'de> for Placement {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Stored {
            start: u32,
            size: u32,
        }
        let Stored { start, size } = Stored::deserialize(deserializer)?;
        Ok(Placement::new(start, size))
    }
}
