//! [`Vendor`]: a GPU's vendor, as a declaration and its differences name it.

gpu_partition_types::token_enum! {
    /// A GPU's vendor, as a declaration names it (`vendor` in the state and `--json`). Not
    /// `#[non_exhaustive]`, as [`DeclaredGpu`]: a new vendor is a variant every match decides on.
    ///
    /// [`DeclaredGpu`]: crate::DeclaredGpu
    pub enum Vendor: "vendor" {
        /// NVIDIA: MIG, with the vGPUs on its virtual functions.
        Nvidia = "nvidia",
        /// AMD: Instinct compute and memory partitions.
        Amd = "amd",
    }
}
