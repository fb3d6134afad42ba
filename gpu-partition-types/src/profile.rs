//! The profile catalogue: `profiles`, each with its signature.

use crate::read::{Decode, Field, Path, lenient, members, required, value};
use crate::{Enumerated, Lenient};
use serde::Serialize;
use serde::de::MapAccess;

crate::token_enum! {
    /// A profile capability (NVML's capability bits).
    pub enum Capability: "capability" {
        /// Peer-to-peer transfers.
        P2p = "p2p",
        /// Graphics.
        Gfx = "gfx",
    }
}

/// One GPU-instance profile the card offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// The profile's number (strict inside the element).
    pub id: u32,
    /// Its name, e.g. `3g.71gb` (lenient).
    #[serde(skip_serializing_if = "Lenient::is_lost")]
    pub name: Lenient<String>,
    /// How many more instances of it fit now (lenient).
    #[serde(skip_serializing_if = "Lenient::is_lost")]
    pub free_instances: Lenient<u32>,
    /// What the driver reports for it apart from name and number (lenient).
    #[serde(skip_serializing_if = "Lenient::is_lost")]
    pub signature: Lenient<Signature>,
}

/// A profile's signature: its resource counts, memory size and capabilities. Signatures tell
/// profiles apart when names drift and show when a driver renumbers them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Signature {
    /// Memory slices.
    pub slice_count: u32,
    /// Instances of this profile the whole card can hold.
    pub instance_count: u32,
    /// Streaming multiprocessors.
    pub multiprocessor_count: u32,
    /// Copy engines.
    pub copy_engine_count: u32,
    /// Video decoders.
    pub decoder_count: u32,
    /// Video encoders.
    pub encoder_count: u32,
    /// JPEG engines.
    pub jpeg_count: u32,
    /// Optical-flow accelerators.
    pub ofa_count: u32,
    /// Memory in MiB.
    pub memory_size_mb: u64,
    /// Capabilities; values this reader does not know are kept.
    pub capabilities: Vec<Enumerated<Capability>>,
}

impl Signature {
    /// The signature with its capabilities in a canonical order, so that two signatures that
    /// list the same capabilities in another order compare equal.
    pub fn normalized(&self) -> Signature {
        let mut signature = self.clone();
        signature
            .capabilities
            .sort_by(|a, b| a.as_str().cmp(b.as_str()));
        signature.capabilities.dedup();
        signature
    }
}

impl Decode for Profile {
    const EXPECTED: &'static str = "a profile object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut id, mut name, mut free_instances, mut signature) = (None, None, None, None);
        members(map, |member, map| {
            match member {
                "id" => id = Some(value(map, at, member)?),
                "name" => name = Some(value(map, at, member)?),
                "free_instances" => free_instances = Some(value(map, at, member)?),
                "signature" => signature = Some(value(map, at, member)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(required(id, at, "id").map(|id| Profile {
            id,
            name: lenient(name, at, "name"),
            free_instances: lenient(free_instances, at, "free_instances"),
            signature: lenient(signature, at, "signature"),
        }))
    }
}

impl Decode for Signature {
    const EXPECTED: &'static str = "a signature object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let mut counts: [Option<Field<u32>>; 8] = Default::default();
        let (mut memory_size_mb, mut capabilities) = (None, None);
        members(map, |member, map| {
            if let Some(slot) = COUNTS.iter().position(|count| *count == member) {
                counts[slot] = Some(value(map, at, member)?);
                return Ok(true);
            }
            match member {
                "memory_size_mb" => memory_size_mb = Some(value(map, at, member)?),
                "capabilities" => capabilities = Some(value(map, at, member)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        let [
            slices,
            instances,
            multiprocessors,
            copy_engines,
            decoders,
            encoders,
            jpegs,
            ofas,
        ] = counts;
        Ok((|| {
            Ok(Signature {
                slice_count: required(slices, at, COUNTS[0])?,
                instance_count: required(instances, at, COUNTS[1])?,
                multiprocessor_count: required(multiprocessors, at, COUNTS[2])?,
                copy_engine_count: required(copy_engines, at, COUNTS[3])?,
                decoder_count: required(decoders, at, COUNTS[4])?,
                encoder_count: required(encoders, at, COUNTS[5])?,
                jpeg_count: required(jpegs, at, COUNTS[6])?,
                ofa_count: required(ofas, at, COUNTS[7])?,
                memory_size_mb: required(memory_size_mb, at, "memory_size_mb")?,
                capabilities: required(capabilities, at, "capabilities")?,
            })
        })())
    }
}

/// The `u32` counts of a signature, in the order of the record.
const COUNTS: [&str; 8] = [
    "slice_count",
    "instance_count",
    "multiprocessor_count",
    "copy_engine_count",
    "decoder_count",
    "encoder_count",
    "jpeg_count",
    "ofa_count",
];
