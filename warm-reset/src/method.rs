//! [`Method`]: which backend resets a device.

gpu_partition_types::token_enum! {
    /// How a device is reset: which backend answers the machine's questions.
    #[non_exhaustive]
    pub enum Method: "reset method" {
        /// MetaX GPUs through `mx-smi` (the default).
        Metax = "metax",
        /// NVIDIA GPUs through `nvidia-smi --gpu-reset`.
        Nvidia = "nvidia",
        /// Any PCI function through the kernel's sysfs `reset` file.
        Pci = "pci",
        /// AMD Instinct GPUs through `amd-smi reset --gpureset`, their XGMI hive together.
        Amd = "amd",
    }
}
