//! The profile catalogue: `profiles`, each with its signature.

use crate::{Enumerated, Placement};

crate::token_enum! {
    /// A profile capability (NVML's capability bits).
    pub enum Capability: "capability" {
        /// Peer-to-peer transfers.
        P2p = "p2p",
        /// Graphics.
        Gfx = "gfx",
    }
}

crate::record::record! {
    /// One GPU-instance profile the card offers.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Profile: "a profile object" {
        /// The profile's number (strict inside the element).
        id: required u32 = "id",
        /// Its name, e.g. `3g.71gb` (lenient).
        name: lenient String = "name",
        /// How many more instances of it fit now (lenient).
        free_instances: lenient u32 = "free_instances",
        /// What the driver reports for it apart from name and number (lenient).
        signature: lenient Signature = "signature",
        /// Where its GPU instances may be placed, in memory slices (lenient; format 1.1: a
        /// reply of 1.0 has none, and reads with this member lost).
        placements: lenient Vec<Placement> = "placements",
    }
}

crate::record::record! {
    /// A profile's signature: its resource counts, memory size and capabilities. Signatures
    /// tell profiles apart when names drift and show when a driver renumbers them. Every member
    /// is needed inside the unit.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct Signature: "a signature object" {
        /// Memory slices.
        slice_count: required u32 = "slice_count",
        /// Instances of this profile the whole card can hold.
        instance_count: required u32 = "instance_count",
        /// Streaming multiprocessors.
        multiprocessor_count: required u32 = "multiprocessor_count",
        /// Copy engines.
        copy_engine_count: required u32 = "copy_engine_count",
        /// Video decoders.
        decoder_count: required u32 = "decoder_count",
        /// Video encoders.
        encoder_count: required u32 = "encoder_count",
        /// JPEG engines.
        jpeg_count: required u32 = "jpeg_count",
        /// Optical-flow accelerators.
        ofa_count: required u32 = "ofa_count",
        /// Memory in MiB.
        memory_size_mb: required u64 = "memory_size_mb",
        /// Capabilities; values this reader does not know are kept.
        capabilities: required Vec<Enumerated<Capability>> = "capabilities",
    }
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
