//! vGPUs placed on the card: `vgpus`.

use crate::Nullable;

crate::record::record! {
    /// A vGPU on the card.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Vgpu: "a vGPU object" {
        /// The vGPU's UUID (needed by the element).
        uuid: required String = "uuid",
        /// Its type's name, e.g. `NVIDIA H200-3-71C`; `type` on the wire, the one renamed
        /// member (lenient).
        vgpu_type: lenient String = "type",
        /// Its type's number (lenient).
        type_id: lenient u32 = "type_id",
        /// The GPU instance it runs on; `null` for a time-sliced vGPU on the whole card.
        gpu_instance_id: required Nullable<u32> = "gpu_instance_id",
        /// The VM it belongs to, when known.
        vm: required Nullable<String> = "vm",
    }
}
