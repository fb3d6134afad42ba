//! `driver`: the driver and NVML versions the helper saw.

crate::record::record! {
    /// `driver` (a lenient unit: both members are needed inside it).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Driver: "a driver object" {
        /// The kernel driver's version, e.g. `570.124.06`.
        version: required String = "version",
        /// NVML's version, e.g. `12.570.124.06`.
        nvml_version: required String = "nvml_version",
    }
}
