//! `driver`: the driver and NVML versions the helper saw.

use crate::read::{Decode, Field, Path, members, required, value};
use serde::Serialize;
use serde::de::MapAccess;

/// `driver` (a lenient unit: both members are needed inside it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Driver {
    /// The kernel driver's version, e.g. `570.124.06`.
    pub version: String,
    /// NVML's version, e.g. `12.570.124.06`.
    pub nvml_version: String,
}

impl Decode for Driver {
    const EXPECTED: &'static str = "a driver object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut version, mut nvml_version) = (None, None);
        members(map, |name, map| {
            match name {
                "version" => version = Some(value(map, at, name)?),
                "nvml_version" => nvml_version = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok((|| {
            Ok(Driver {
                version: required(version, at, "version")?,
                nvml_version: required(nvml_version, at, "nvml_version")?,
            })
        })())
    }
}
