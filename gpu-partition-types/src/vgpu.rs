//! vGPUs placed on the card: `vgpus`.

use crate::read::{Decode, Field, Path, lenient, members, required, value};
use crate::{Lenient, Nullable};
use serde::Serialize;
use serde::de::MapAccess;

/// A vGPU on the card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vgpu {
    /// The vGPU's UUID (needed by the element).
    pub uuid: String,
    /// Its type's name, e.g. `NVIDIA H200-3-71C`; `type` on the wire, the one renamed member
    /// (lenient).
    #[serde(rename = "type", skip_serializing_if = "Lenient::is_lost")]
    pub vgpu_type: Lenient<String>,
    /// Its type's number (lenient).
    #[serde(skip_serializing_if = "Lenient::is_lost")]
    pub type_id: Lenient<u32>,
    /// The GPU instance it runs on; `null` for a time-sliced vGPU on the whole card.
    pub gpu_instance_id: Nullable<u32>,
    /// The VM it belongs to, when known.
    pub vm: Nullable<String>,
}

impl Decode for Vgpu {
    const EXPECTED: &'static str = "a vGPU object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut uuid, mut vgpu_type, mut type_id, mut gpu_instance_id, mut vm) =
            (None, None, None, None, None);
        members(map, |name, map| {
            match name {
                "uuid" => uuid = Some(value(map, at, name)?),
                "type" => vgpu_type = Some(value(map, at, name)?),
                "type_id" => type_id = Some(value(map, at, name)?),
                "gpu_instance_id" => gpu_instance_id = Some(value(map, at, name)?),
                "vm" => vm = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok((|| {
            Ok(Vgpu {
                uuid: required(uuid, at, "uuid")?,
                gpu_instance_id: required(gpu_instance_id, at, "gpu_instance_id")?,
                vm: required(vm, at, "vm")?,
                vgpu_type: lenient(vgpu_type, at, "type"),
                type_id: lenient(type_id, at, "type_id"),
            })
        })())
    }
}
