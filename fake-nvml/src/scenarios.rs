//! The scenarios shipped inside the crate (`scenarios/`, each described in its README): cards
//! of published models in the states the tests start from, and cards whose NVML functions fail.
//! A scenario is JSON text; give it to [`crate::support::helper_wrapper`] or write it to the
//! file `FAKE_NVML_SCENARIO` names.

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

/// `scenarios/h200-gfx-profile-at-index-17.json`.
pub const H200_GFX_PROFILE_AT_INDEX_17: &str =
    include_str!("../scenarios/h200-gfx-profile-at-index-17.json");

/// `scenarios/l40s-no-mig.json`.
pub const L40S_NO_MIG: &str = include_str!("../scenarios/l40s-no-mig.json");

/// Every shipped scenario, by its file name without `.json`.
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
    ("h200-gfx-profile-at-index-17", H200_GFX_PROFILE_AT_INDEX_17),
    ("l40s-no-mig", L40S_NO_MIG),
];

/// The shipped scenario named `name` (its file name without `.json`).
pub fn named(name: &str) -> Option<&'static str> {
    ALL.iter()
        .find(|(known, _)| *known == name)
        .map(|(_, text)| *text)
}
