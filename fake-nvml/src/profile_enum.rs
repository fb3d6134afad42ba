//! Where NVML's GPU-instance profile enum ends, by the driver branch a scenario claims: the
//! `NVML_GPU_INSTANCE_PROFILE_COUNT` of that branch's `nvml.h`. A profile index at or past it is
//! no profile at all (`nvmlDeviceGetGpuInstanceProfileInfo*` answers
//! `NVML_ERROR_INVALID_ARGUMENT`: "If `device`, `profile` or `info` are invalid"); one inside it
//! that the part lacks answers `NVML_ERROR_NOT_SUPPORTED` ("If `device` doesn't have MIG mode
//! enabled or `profile` isn't supported"). Clients walk the indices up to their own binding's
//! count and skip both (NVIDIA's go-nvlib, `VisitMigProfiles`), or until the first
//! `INVALID_ARGUMENT` (this project's helper).
//!
//! The counts are read from each CUDA release's `nvml.h` as NVIDIA's go-nvml carries it
//! (`gen/nvml/nvml.h`, one commit per release), and each release is tied to its driver branch by
//! the CUDA Toolkit release notes ("CUDA Toolkit and Corresponding Driver Versions"). A branch
//! whose header is not listed here is not known: the reader of a scenario refuses it rather than
//! guess where its enum ends.

/// The branches the fake knows: each branch (the first number of a driver version, `570` of
/// `570.172.08`) with `NVML_GPU_INSTANCE_PROFILE_COUNT` of its `nvml.h`, read from NVIDIA/go-nvml's
/// `gen/nvml/nvml.h` at the commit named.
const BRANCHES: [(u32, u32); 17] = [
    // CUDA 11.4 (R470): 1_SLICE_REV1 is the last profile, COUNT 0x8 (15056a1).
    (470, 8),
    // CUDA 11.5 (R495, 297dc13), 11.6 (R510, 0ad3c2a), 11.7 (R515, 09058f7), 11.8 (R520,
    // 9adb740): COUNT 0x8.
    (495, 8),
    (510, 8),
    (515, 8),
    (520, 8),
    // CUDA 12.0 (R525): 2_SLICE_REV1 and 1_SLICE_REV2 (the A100's 1g.10gb), COUNT 0xA
    // (399f8e0); the same in 12.1 (R530), 12.2 (R535), 12.3 (R545), 12.4 (R550), 12.5 (R555)
    // and 12.6 (R560) (9fc23a0, 075f45f, b57740a, f7ceebd, 5f61a8a, 7ec3ff8).
    (525, 10),
    (530, 10),
    (535, 10),
    (545, 10),
    (550, 10),
    (555, 10),
    (560, 10),
    // CUDA 12.8 (R570): the three GFX profiles, COUNT 0xD (f420a32).
    (570, 13),
    // CUDA 12.9 (R575): NO_ME and ALL_ME, COUNT 0x11 (62ce1e3); the same in 13.0 (R580,
    // 9da9e13) and 13.1 (R590, 2a1f6c3).
    (575, 17),
    (580, 17),
    (590, 17),
    // CUDA 13.2 (R595): 3_SLICE_GFX, COUNT 0x12 (2976179).
    (595, 18),
];

/// `NVML_GPU_INSTANCE_PROFILE_COUNT` of the driver `driver_version` names (`570.172.08`);
/// `None` for a version that names no branch the fake knows.
pub(crate) fn profile_count(driver_version: &str) -> Option<u32> {
    let branch: u32 = driver_version.split('.').next()?.parse().ok()?;
    BRANCHES
        .iter()
        .find(|(known, _)| *known == branch)
        .map(|(_, count)| *count)
}

/// The branches the fake knows, for a message.
pub(crate) fn known_branches() -> String {
    BRANCHES
        .iter()
        .map(|(branch, _)| format!("R{branch}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enum_ends_where_the_claimed_branchs_header_ends_it() {
        assert_eq!(profile_count("470.256.02"), Some(8));
        assert_eq!(profile_count("535.183.01"), Some(10));
        assert_eq!(profile_count("570.172.08"), Some(13));
        assert_eq!(profile_count("580.65.06"), Some(17));
        assert_eq!(profile_count("595.58.03"), Some(18));
    }

    #[test]
    fn a_branch_whose_header_the_fake_has_not_read_has_no_count() {
        for unknown in ["450.80.02", "565.57.01", "610.43.02", "1", "", "r570"] {
            assert_eq!(profile_count(unknown), None, "{unknown}");
        }
    }
}
