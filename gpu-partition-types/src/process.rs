//! Processes that hold the card: `processes` (format 1.1).

crate::record::record! {
    /// A process holding the card (NVML's running compute processes): while one does, no
    /// instance may be destroyed and the MIG mode does not change.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Process: "a process object" {
        /// Its pid (needed by the element).
        pid: required u32 = "pid",
        /// Its name, as the driver gives it (lenient).
        name: lenient String = "name",
    }
}
