//! Who owns a GPU ([`Ownership`]): the one type every writer below and above the host state
//! takes — the executor's writes, and a warm reset, which refuses to touch a GPU not ours.

gpu_partition_types::token_enum! {
    /// Who owns a GPU.
    #[derive(Default)]
    pub enum Ownership: "ownership" {
        /// Ours (the default): kept, restored, repaired by every writing path.
        #[default]
        Host = "host",
        /// An allocator's (such as the Kubernetes DRA driver's dynamic MIG), which creates and
        /// destroys partitions on it: read and reported, never written, restored or reset.
        Dynamic = "dynamic",
        /// Another tool's: hands off, read only.
        External = "external",
    }
}

impl Ownership {
    /// Whether the crates' writers may write it.
    pub fn is_ours(self) -> bool {
        self == Ownership::Host
    }
}
