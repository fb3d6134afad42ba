//! GPU instances (`gpu_instances`) and their compute instances.

use crate::read::{Decode, Field, Path, lenient, members, required, value};
use crate::{Lenient, Nullable};
use serde::Serialize;
use serde::de::MapAccess;

/// Where an instance sits on the card's slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Placement {
    /// First slice.
    pub start: u32,
    /// Number of slices.
    pub size: u32,
}

/// A GPU instance carved on the card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuInstance {
    /// The instance's number.
    pub id: u32,
    /// The profile it was made from.
    pub profile_id: u32,
    /// Where it sits (lenient).
    #[serde(skip_serializing_if = "Lenient::is_lost")]
    pub placement: Lenient<Placement>,
    /// Its UUID, when the driver gives one.
    pub uuid: Nullable<String>,
    /// The compute instances inside it (lenient as a whole list).
    #[serde(skip_serializing_if = "Lenient::is_lost")]
    pub compute_instances: Lenient<Vec<ComputeInstance>>,
}

/// A compute instance inside a GPU instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct ComputeInstance {
    /// The compute instance's number.
    pub id: u32,
    /// The compute-instance profile it was made from.
    pub profile_id: u32,
    /// Where it sits inside the GPU instance.
    pub placement: Placement,
}

impl Decode for Placement {
    const EXPECTED: &'static str = "a placement object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut start, mut size) = (None, None);
        members(map, |name, map| {
            match name {
                "start" => start = Some(value(map, at, name)?),
                "size" => size = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok((|| {
            Ok(Placement {
                start: required(start, at, "start")?,
                size: required(size, at, "size")?,
            })
        })())
    }
}

impl Decode for GpuInstance {
    const EXPECTED: &'static str = "a GPU instance object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut id, mut profile_id, mut placement, mut uuid, mut compute_instances) =
            (None, None, None, None, None);
        members(map, |name, map| {
            match name {
                "id" => id = Some(value(map, at, name)?),
                "profile_id" => profile_id = Some(value(map, at, name)?),
                "placement" => placement = Some(value(map, at, name)?),
                "uuid" => uuid = Some(value(map, at, name)?),
                "compute_instances" => compute_instances = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok((|| {
            Ok(GpuInstance {
                id: required(id, at, "id")?,
                profile_id: required(profile_id, at, "profile_id")?,
                uuid: required(uuid, at, "uuid")?,
                placement: lenient(placement, at, "placement"),
                compute_instances: lenient(compute_instances, at, "compute_instances"),
            })
        })())
    }
}

impl Decode for ComputeInstance {
    const EXPECTED: &'static str = "a compute instance object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut id, mut profile_id, mut placement) = (None, None, None);
        members(map, |name, map| {
            match name {
                "id" => id = Some(value(map, at, name)?),
                "profile_id" => profile_id = Some(value(map, at, name)?),
                "placement" => placement = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok((|| {
            Ok(ComputeInstance {
                id: required(id, at, "id")?,
                profile_id: required(profile_id, at, "profile_id")?,
                placement: required(placement, at, "placement")?,
            })
        })())
    }
}
