//! What the AMD backend reads back after a reset: amdgpu's own words for a reset that failed, in
//! the kernel log, and a GPU's partition files compared with what they read before.

use super::sysfs::PartitionFile;
use crate::kmsg::{KmsgRecord, device_errors_by, is_device_failure};
use crate::reasons::ColdRebootReason;
use gpu_partition_types::Bdf;

/// What amdgpu logs, at information level, when a GPU of the hive did not come back from its
/// reset (`amdgpu_device_gpu_recover`): `GPU reset(<n>) failed` (newer kernels add `with error
/// <e>`), and `GPU reset end with ret = <r>`.
pub fn is_amdgpu_reset_failure(message: &str) -> bool {
    let failed = message
        .split_once("GPU reset(")
        .is_some_and(|(_, rest)| rest.contains(") failed"));
    failed || message.contains("GPU reset end with ret =")
}

/// The messages of the records about one of `devices` (named by their address, as amdgpu
/// prefixes them: `amdgpu 0000:05:00.0: …`) that are errors, device failures at any level, or
/// amdgpu's own words for a reset that failed.
pub fn amd_device_errors(records: Vec<KmsgRecord>, devices: &[Bdf]) -> Vec<String> {
    device_errors_by(records, devices, |message| {
        is_device_failure(message) || is_amdgpu_reset_failure(message)
    })
}

/// How a GPU of the group is not back, from the mildest to the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fault {
    /// Not as it was, yet (a partition mode not restored): may still come.
    Changed,
    /// Present, but not usable yet (no driver, in reset).
    Unavailable,
    /// Not there, or fallen off the bus.
    Missing,
}

impl Fault {
    pub(crate) fn reason(self) -> ColdRebootReason {
        match self {
            Self::Changed => ColdRebootReason::TopologyWrong,
            Self::Unavailable => ColdRebootReason::GpuUnavailable,
            Self::Missing => ColdRebootReason::GpuMissing,
        }
    }
}

/// Compares one partition file with what it read before: a fault, if any.
pub(crate) fn partition_back(
    name: &str,
    before: Option<&str>,
    now: &PartitionFile,
) -> Option<(Fault, String)> {
    match (before, now) {
        (_, PartitionFile::InReset) => Some((
            Fault::Unavailable,
            format!("is still in reset ({name} answers EPERM)"),
        )),
        (None, PartitionFile::Absent) => None,
        (Some(_), PartitionFile::Absent) => {
            Some((Fault::Unavailable, format!("has no {name} any more")))
        }
        (None, PartitionFile::Reads(text)) => Some((
            Fault::Changed,
            format!("has a {name} ({text}) it did not have"),
        )),
        (Some(was), PartitionFile::Reads(text)) if was == text => None,
        (Some(was), PartitionFile::Reads(text)) => Some((
            Fault::Changed,
            format!("reads {name} {text} where it read {was}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amdgpus_reset_failure_words_are_a_failure_and_its_success_is_not() {
        for message in [
            "amdgpu 0000:05:00.0: amdgpu: GPU reset(2) failed",
            "amdgpu 0000:05:00.0: amdgpu: GPU reset(2) failed with error -110",
            "amdgpu 0000:05:00.0: amdgpu: GPU reset end with ret = -110",
        ] {
            assert!(is_amdgpu_reset_failure(message), "{message}");
        }
        assert!(!is_amdgpu_reset_failure(
            "amdgpu 0000:05:00.0: amdgpu: GPU reset(2) succeeded!"
        ));
    }

    #[test]
    fn a_partition_read_the_same_is_back_and_one_in_reset_is_not_yet() {
        let cpx = PartitionFile::Reads("CPX".to_owned());
        assert_eq!(partition_back("f", Some("CPX"), &cpx), None);
        assert_eq!(partition_back("f", None, &PartitionFile::Absent), None);
        assert_eq!(
            partition_back("f", Some("CPX"), &PartitionFile::InReset).map(|f| f.0),
            Some(Fault::Unavailable)
        );
        assert_eq!(
            partition_back("f", Some("SPX"), &cpx).map(|f| f.0),
            Some(Fault::Changed)
        );
    }
}
