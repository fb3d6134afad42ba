//! The request of `apply`: `{"steps": [STEP, …]}`, read strictly and written back.

use super::json::{Object, Refused, element, object};
use crate::{JsonPointer, Placement};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

crate::token_enum! {
    /// Which change a step makes (`op`).
    pub enum Op: "step" {
        /// Turn MIG on or off.
        SetMigMode = "set_mig_mode",
        /// Create a GPU instance of a profile at a placement.
        CreateGpuInstance = "create_gpu_instance",
        /// Create a compute instance in a GPU instance.
        CreateComputeInstance = "create_compute_instance",
        /// Destroy a compute instance.
        DestroyComputeInstance = "destroy_compute_instance",
        /// Destroy a GPU instance (which has no compute instance left).
        DestroyGpuInstance = "destroy_gpu_instance",
        /// Turn heterogeneous vGPU mode on or off.
        SetVgpuHeterogeneousMode = "set_vgpu_heterogeneous_mode",
    }
}

/// One change the helper makes to a card, as NVML's write calls take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Step {
    /// `nvmlDeviceSetMigMode`: MIG on (`true`) or off.
    SetMigMode {
        /// The mode asked for.
        enabled: bool,
    },
    /// `nvmlDeviceCreateGpuInstanceWithPlacement`: a GPU instance of the profile with this ID
    /// (never an index) at this placement (one of the profile's possible placements).
    CreateGpuInstance {
        /// The GPU instance profile's ID.
        profile_id: u32,
        /// Where, in memory slices.
        placement: Placement,
    },
    /// `nvmlGpuInstanceCreateComputeInstance(WithPlacement)`: a compute instance of the compute
    /// instance profile with this ID in a GPU instance; without a placement, NVML places it (one
    /// whose profile takes the whole GPU instance fills it).
    CreateComputeInstance {
        /// The GPU instance.
        gpu_instance_id: u32,
        /// The compute instance profile's ID.
        profile_id: u32,
        /// Where, in compute slices within the GPU instance.
        placement: Option<Placement>,
    },
    /// `nvmlComputeInstanceDestroy`.
    DestroyComputeInstance {
        /// The GPU instance it is in.
        gpu_instance_id: u32,
        /// The compute instance.
        compute_instance_id: u32,
    },
    /// `nvmlGpuInstanceDestroy`.
    DestroyGpuInstance {
        /// The GPU instance.
        gpu_instance_id: u32,
    },
    /// `nvmlDeviceSetVgpuHeterogeneousMode`: vGPUs of different types (time-sliced, MIG off)
    /// on one GPU (`true`), or only one type at a time. A helper older than this step refuses
    /// the request at its `op`, before any write.
    SetVgpuHeterogeneousMode {
        /// The mode asked for.
        enabled: bool,
    },
}

impl Step {
    /// The step's `op`.
    pub fn op(&self) -> Op {
        match self {
            Self::SetMigMode { .. } => Op::SetMigMode,
            Self::CreateGpuInstance { .. } => Op::CreateGpuInstance,
            Self::CreateComputeInstance { .. } => Op::CreateComputeInstance,
            Self::DestroyComputeInstance { .. } => Op::DestroyComputeInstance,
            Self::DestroyGpuInstance { .. } => Op::DestroyGpuInstance,
            Self::SetVgpuHeterogeneousMode { .. } => Op::SetVgpuHeterogeneousMode,
        }
    }
}

/// What a request asks: steps, run in order, stopping at the first that does not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ApplyRequest {
    /// The steps.
    pub steps: Vec<Step>,
}

const WHAT: &str = "the apply request";

impl ApplyRequest {
    /// A request of these steps.
    pub fn new(steps: Vec<Step>) -> Self {
        Self { steps }
    }

    /// Reads a request: one JSON object `{"steps": [STEP, …]}`, strictly — every member is
    /// needed and checked, an `op` this reader does not know and a member a step does not have
    /// are refused (a write never guesses), and the fault is named by its JSON Pointer.
    pub fn from_json(input: &[u8]) -> Result<ApplyRequest, Refused> {
        let map = object(WHAT, input)?;
        let request = Object {
            what: WHAT,
            at: JsonPointer::root(),
            map: &map,
        };
        request.only(&["steps"])?;
        let steps = request
            .list("steps")?
            .iter()
            .enumerate()
            .map(|(index, value)| {
                let at = JsonPointer::root().member("steps").index(index);
                step(&element(WHAT, at, value)?)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ApplyRequest { steps })
    }

    /// The request as one line of JSON, which reads back equal.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn placement(object: &Object<'_>, name: &str) -> Result<Placement, Refused> {
    let inner = object.object(name)?;
    inner.only(&["start", "size"])?;
    Ok(Placement::new(inner.u32("start")?, inner.u32("size")?))
}

fn step(object: &Object<'_>) -> Result<Step, Refused> {
    let text = object.string("op")?;
    let op = text
        .parse::<Op>()
        .map_err(|unknown| object.refuse(object.at.clone().member("op"), unknown.to_string()))?;
    let members: &[&str] = match op {
        Op::SetMigMode => &["op", "enabled"],
        Op::CreateGpuInstance => &["op", "profile_id", "placement"],
        Op::CreateComputeInstance => &["op", "gpu_instance_id", "profile_id", "placement"],
        Op::DestroyComputeInstance => &["op", "gpu_instance_id", "compute_instance_id"],
        Op::DestroyGpuInstance => &["op", "gpu_instance_id"],
        Op::SetVgpuHeterogeneousMode => &["op", "enabled"],
    };
    object.only(members)?;
    Ok(match op {
        Op::SetMigMode => Step::SetMigMode {
            enabled: object.bool("enabled")?,
        },
        Op::CreateGpuInstance => Step::CreateGpuInstance {
            profile_id: object.u32("profile_id")?,
            placement: placement(object, "placement")?,
        },
        Op::CreateComputeInstance => Step::CreateComputeInstance {
            gpu_instance_id: object.u32("gpu_instance_id")?,
            profile_id: object.u32("profile_id")?,
            placement: if object.has("placement") {
                Some(placement(object, "placement")?)
            } else {
                None
            },
        },
        Op::DestroyComputeInstance => Step::DestroyComputeInstance {
            gpu_instance_id: object.u32("gpu_instance_id")?,
            compute_instance_id: object.u32("compute_instance_id")?,
        },
        Op::DestroyGpuInstance => Step::DestroyGpuInstance {
            gpu_instance_id: object.u32("gpu_instance_id")?,
        },
        Op::SetVgpuHeterogeneousMode => Step::SetVgpuHeterogeneousMode {
            enabled: object.bool("enabled")?,
        },
    })
}

impl Serialize for Step {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("op", &self.op())?;
        match self {
            Self::SetMigMode { enabled } | Self::SetVgpuHeterogeneousMode { enabled } => {
                map.serialize_entry("enabled", enabled)?;
            }
            Self::CreateGpuInstance {
                profile_id,
                placement,
            } => {
                map.serialize_entry("profile_id", profile_id)?;
                map.serialize_entry("placement", placement)?;
            }
            Self::CreateComputeInstance {
                gpu_instance_id,
                profile_id,
                placement,
            } => {
                map.serialize_entry("gpu_instance_id", gpu_instance_id)?;
                map.serialize_entry("profile_id", profile_id)?;
                if let Some(placement) = placement {
                    map.serialize_entry("placement", placement)?;
                }
            }
            Self::DestroyComputeInstance {
                gpu_instance_id,
                compute_instance_id,
            } => {
                map.serialize_entry("gpu_instance_id", gpu_instance_id)?;
                map.serialize_entry("compute_instance_id", compute_instance_id)?;
            }
            Self::DestroyGpuInstance { gpu_instance_id } => {
                map.serialize_entry("gpu_instance_id", gpu_instance_id)?;
            }
        }
        map.end()
    }
}

impl Serialize for ApplyRequest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Steps<'a>(&'a [Step]);
        impl Serialize for Steps<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut list = serializer.serialize_seq(Some(self.0.len()))?;
                for step in self.0 {
                    list.serialize_element(step)?;
                }
                list.end()
            }
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("steps", &Steps(&self.steps))?;
        map.end()
    }
}
