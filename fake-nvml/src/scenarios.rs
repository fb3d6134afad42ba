//! The scenarios shipped inside the crate (`scenarios/`, each described in its README): cards
//! of published models in the states the tests start from, cards whose NVML functions fail,
//! and ([`PARTS`]) one card of every MIG part whose geometry NVIDIA publishes, MIG off, each
//! with its sources. A scenario is JSON text; give it to [`crate::support::helper_wrapper`] or
//! write it to the file `FAKE_NVML_SCENARIO` names.

/// `scenarios/a100-mig-off-on-pending.json`.
pub const A100_MIG_OFF_ON_PENDING: &str = include_str!("../scenarios/a100-mig-off-on-pending.json");

/// `scenarios/a100-mig-off.json`.
pub const A100_MIG_OFF: &str = include_str!("../scenarios/a100-mig-off.json");

/// `scenarios/a100-mig-on-carved.json`.
pub const A100_MIG_ON_CARVED: &str = include_str!("../scenarios/a100-mig-on-carved.json");

/// `scenarios/a100-mig-on-none-carved.json`.
pub const A100_MIG_ON_NONE_CARVED: &str = include_str!("../scenarios/a100-mig-on-none-carved.json");

/// `scenarios/a100-mig-on-off-pending.json`.
pub const A100_MIG_ON_OFF_PENDING: &str = include_str!("../scenarios/a100-mig-on-off-pending.json");

/// `scenarios/a100-r470-carved.json`.
pub const A100_R470_CARVED: &str = include_str!("../scenarios/a100-r470-carved.json");

/// `scenarios/fail-in-use.json`.
pub const FAIL_IN_USE: &str = include_str!("../scenarios/fail-in-use.json");

/// `scenarios/fail-mig-mode-invalid-argument.json`.
pub const FAIL_MIG_MODE_INVALID_ARGUMENT: &str =
    include_str!("../scenarios/fail-mig-mode-invalid-argument.json");

/// `scenarios/fail-no-permission.json`.
pub const FAIL_NO_PERMISSION: &str = include_str!("../scenarios/fail-no-permission.json");

/// `scenarios/fail-not-found.json`.
pub const FAIL_NOT_FOUND: &str = include_str!("../scenarios/fail-not-found.json");

/// `scenarios/fail-profile-v-function-not-found.json`.
pub const FAIL_PROFILE_V_FUNCTION_NOT_FOUND: &str =
    include_str!("../scenarios/fail-profile-v-function-not-found.json");

/// `scenarios/fail-profile-v-not-supported.json`.
pub const FAIL_PROFILE_V_NOT_SUPPORTED: &str =
    include_str!("../scenarios/fail-profile-v-not-supported.json");

/// `scenarios/fail-unknown.json`.
pub const FAIL_UNKNOWN: &str = include_str!("../scenarios/fail-unknown.json");

/// `scenarios/fail-vgpu-gpu-instance-unknown.json`.
pub const FAIL_VGPU_GPU_INSTANCE_UNKNOWN: &str =
    include_str!("../scenarios/fail-vgpu-gpu-instance-unknown.json");

/// `scenarios/h100-mig-off.json`.
pub const H100_MIG_OFF: &str = include_str!("../scenarios/h100-mig-off.json");

/// `scenarios/synthetic-profile-at-index-17.json`.
pub const SYNTHETIC_PROFILE_AT_INDEX_17: &str =
    include_str!("../scenarios/synthetic-profile-at-index-17.json");

/// `scenarios/l40s-no-mig.json`.
pub const L40S_NO_MIG: &str = include_str!("../scenarios/l40s-no-mig.json");

/// `scenarios/parts/a100-pcie-40gb.json`: MIG off, its facts (and its vGPU type catalogue)
/// with their sources.
pub const PART_A100_PCIE_40GB: &str = include_str!("../scenarios/parts/a100-pcie-40gb.json");

/// `scenarios/parts/a100-sxm4-40gb.json`: MIG off, its facts with their sources.
pub const PART_A100_SXM4_40GB: &str = include_str!("../scenarios/parts/a100-sxm4-40gb.json");

/// `scenarios/parts/a100-sxm4-80gb.json`: MIG off, its facts with their sources.
pub const PART_A100_SXM4_80GB: &str = include_str!("../scenarios/parts/a100-sxm4-80gb.json");

/// `scenarios/parts/a30-24gb.json`: MIG off, its facts with their sources.
pub const PART_A30_24GB: &str = include_str!("../scenarios/parts/a30-24gb.json");

/// `scenarios/parts/b200-180gb.json`: MIG off, its facts with their sources.
pub const PART_B200_180GB: &str = include_str!("../scenarios/parts/b200-180gb.json");

/// `scenarios/parts/gh200-144gb.json`: MIG off, its facts with their sources.
pub const PART_GH200_144GB: &str = include_str!("../scenarios/parts/gh200-144gb.json");

/// `scenarios/parts/h100-80gb.json`: MIG off, its facts (and its vGPU type catalogue, under
/// the fake's own type IDs) with their sources.
pub const PART_H100_80GB: &str = include_str!("../scenarios/parts/h100-80gb.json");

/// `scenarios/parts/h100-nvl-94gb.json`: MIG off, its facts with their sources.
pub const PART_H100_NVL_94GB: &str = include_str!("../scenarios/parts/h100-nvl-94gb.json");

/// `scenarios/parts/h200-141gb.json`: MIG off, its facts with their sources.
pub const PART_H200_141GB: &str = include_str!("../scenarios/parts/h200-141gb.json");

/// Every shipped scenario of a state, by its file name without `.json`.
pub const ALL: [(&str, &str); 17] = [
    ("a100-mig-off-on-pending", A100_MIG_OFF_ON_PENDING),
    ("a100-mig-off", A100_MIG_OFF),
    ("a100-mig-on-carved", A100_MIG_ON_CARVED),
    ("a100-mig-on-none-carved", A100_MIG_ON_NONE_CARVED),
    ("a100-mig-on-off-pending", A100_MIG_ON_OFF_PENDING),
    ("a100-r470-carved", A100_R470_CARVED),
    ("fail-in-use", FAIL_IN_USE),
    (
        "fail-mig-mode-invalid-argument",
        FAIL_MIG_MODE_INVALID_ARGUMENT,
    ),
    ("fail-no-permission", FAIL_NO_PERMISSION),
    ("fail-not-found", FAIL_NOT_FOUND),
    (
        "fail-profile-v-function-not-found",
        FAIL_PROFILE_V_FUNCTION_NOT_FOUND,
    ),
    ("fail-profile-v-not-supported", FAIL_PROFILE_V_NOT_SUPPORTED),
    ("fail-unknown", FAIL_UNKNOWN),
    (
        "fail-vgpu-gpu-instance-unknown",
        FAIL_VGPU_GPU_INSTANCE_UNKNOWN,
    ),
    ("h100-mig-off", H100_MIG_OFF),
    (
        "synthetic-profile-at-index-17",
        SYNTHETIC_PROFILE_AT_INDEX_17,
    ),
    ("l40s-no-mig", L40S_NO_MIG),
];

/// One card of every published MIG part, by its file name under `scenarios/parts/` without
/// `.json`.
pub const PARTS: [(&str, &str); 9] = [
    ("a100-pcie-40gb", PART_A100_PCIE_40GB),
    ("a100-sxm4-40gb", PART_A100_SXM4_40GB),
    ("a100-sxm4-80gb", PART_A100_SXM4_80GB),
    ("a30-24gb", PART_A30_24GB),
    ("b200-180gb", PART_B200_180GB),
    ("gh200-144gb", PART_GH200_144GB),
    ("h100-80gb", PART_H100_80GB),
    ("h100-nvl-94gb", PART_H100_NVL_94GB),
    ("h200-141gb", PART_H200_141GB),
];

/// The shipped scenario named `name` (a state's file name, or a part's), without `.json`.
pub fn named(name: &str) -> Option<&'static str> {
    ALL.iter()
        .chain(PARTS.iter())
        .find(|(known, _)| *known == name)
        .map(|(_, text)| *text)
}
