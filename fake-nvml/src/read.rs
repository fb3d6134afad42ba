//! Reading a scenario strictly: its shape by serde (a member the fake does not know is refused,
//! with its path), then the state the driver can hold by the rules of [`crate::rules`] (a
//! GPU instance off its profile's placements, a compute instance its GPU instance does not
//! offer, two over each other), each refusal naming the member.
//!
//! The check lives here, not with the types: the scenario module is the shape alone and
//! imports nothing of the crate; the rules read the shape; this reads both.

use crate::rules;
use crate::scenario::{Placement, Scenario, error_code, parse_bus_id};

/// Why a scenario's JSON is not a scenario the fake can answer from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// Not JSON, or not of a scenario's shape: a member the fake does not know, a value of the
    /// wrong kind, a required member missing, or text after the scenario.
    #[error("not a scenario at {at}")]
    Shape {
        /// The member's path (`devices[0].gpu_instance_profiles[0]`; `.` for the top).
        at: String,
        /// What serde found there.
        #[source]
        source: serde_json::Error,
    },
    /// A value no card has, or a state the driver cannot hold.
    #[error("{at}: {why}")]
    Refused {
        /// The member's path (`devices[0].gpu_instances[1].placement`).
        at: String,
        /// What is wrong with it.
        why: Refusal,
    },
}

impl ScenarioError {
    /// The path of the member at fault.
    pub fn at(&self) -> &str {
        match self {
            Self::Shape { at, .. } | Self::Refused { at, .. } => at,
        }
    }
}

/// What is wrong with a member of a scenario that reads as JSON of the right shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A bus ID (a device's, or one of an NVLink group) that is none.
    #[error("{0:?} is not a PCI bus ID")]
    NotABusId(String),
    /// A failure (`fail`) that names no `NVML_ERROR_*` code.
    #[error("{0:?} is not an NVML_ERROR_* name")]
    NotAnNvmlError(String),
    /// A driver version of a branch whose `nvml.h` the fake has not read: where its profile enum
    /// ends is not known.
    #[error(
        "{0:?} is of no driver branch whose nvml.h the fake knows ({branches})",
        branches = crate::profile_enum::known_branches()
    )]
    UnknownDriverBranch(String),
    /// A profile at an index at or past the end of NVML's profile enum of the scenario's driver:
    /// that driver has no such index.
    #[error("profile index {index} is past the end of the driver's profile enum ({count})")]
    PastProfileEnum {
        /// The profile's index.
        index: u32,
        /// `NVML_GPU_INSTANCE_PROFILE_COUNT` of the scenario's driver.
        count: u32,
    },
    /// A GPU instance ID given twice on one card.
    #[error("{0} is the ID of another GPU instance")]
    GpuInstanceIdTaken(u32),
    /// A vGPU type ID given twice on one card.
    #[error("{0} is the ID of another vGPU type")]
    VgpuTypeIdTaken(u32),
    /// A GPU instance (or a MIG-backed vGPU type) of a profile the card does not have.
    #[error("the card has no profile of ID {0}")]
    NoProfile(u32),
    /// A GPU instance off its profile's placements.
    #[error("{}+{} is not a placement of {profile}", placement.start, placement.size)]
    OffPlacements {
        /// Where the instance is.
        placement: Placement,
        /// Its profile's name.
        profile: String,
    },
    /// A GPU instance over another.
    #[error("it overlaps GPU instance {0}")]
    OverGpuInstance(u32),
    /// A compute instance ID given twice in one GPU instance.
    #[error("{0} is the ID of another compute instance")]
    ComputeInstanceIdTaken(u32),
    /// A compute instance of a profile its GPU instance does not offer.
    #[error("a GPU instance of {profile} offers no compute instance profile {compute_profile}")]
    ComputeProfileNotOffered {
        /// The GPU instance's profile's name.
        profile: String,
        /// The compute instance profile asked for.
        compute_profile: u32,
    },
    /// A compute instance off its profile's placements in the GPU instance.
    #[error(
        "{}+{} is not a placement of compute profile {compute_profile} in {profile}",
        placement.start,
        placement.size
    )]
    OffComputePlacements {
        /// Where the compute instance is.
        placement: Placement,
        /// Its compute instance profile.
        compute_profile: u32,
        /// The GPU instance's profile's name.
        profile: String,
    },
    /// A compute instance over another.
    #[error("it overlaps compute instance {0}")]
    OverComputeInstance(u32),
    /// An NVLink group member that is no device of the scenario.
    #[error("{0:?} is not the bus ID of a device of the scenario")]
    NotACard(String),
}

impl Scenario {
    /// Reads and checks a scenario: its shape, then what [`Refusal`] lists.
    pub fn from_json(bytes: &[u8]) -> Result<Scenario, ScenarioError> {
        let mut reader = serde_json::Deserializer::from_slice(bytes);
        let scenario: Scenario =
            serde_path_to_error::deserialize(&mut reader).map_err(|error| {
                ScenarioError::Shape {
                    at: error.path().to_string(),
                    source: error.into_inner(),
                }
            })?;
        reader.end().map_err(|source| ScenarioError::Shape {
            at: ".".to_owned(),
            source,
        })?;
        check(&scenario).map_err(|(at, why)| ScenarioError::Refused { at, why })?;
        Ok(scenario)
    }
}

/// Refuses a state the driver cannot hold, naming the member: a driver of a branch the fake
/// does not know, a bus ID that is none, a failure that is no NVML error, a profile past the
/// driver's profile enum, a GPU instance of a profile the card has not or off its placements
/// or over another, a compute instance of a profile its GPU instance does not offer or off its
/// placements or over another, an ID twice, and an NVLink group naming no card of the scenario.
fn check(scenario: &Scenario) -> Result<(), (String, Refusal)> {
    let Some(count) = crate::profile_enum::profile_count(&scenario.driver_version) else {
        return Err((
            "driver_version".to_owned(),
            Refusal::UnknownDriverBranch(scenario.driver_version.clone()),
        ));
    };
    for (d, device) in scenario.devices.iter().enumerate() {
        let here = format!("devices[{d}]");
        if parse_bus_id(&device.pci_bus_id).is_none() {
            return Err((
                format!("{here}.pci_bus_id"),
                Refusal::NotABusId(device.pci_bus_id.clone()),
            ));
        }
        for (function, error) in &device.fail {
            if error_code(error).is_none() {
                return Err((
                    format!("{here}.fail.{function}"),
                    Refusal::NotAnNvmlError(error.clone()),
                ));
            }
        }
        if let Some((p, profile)) = device
            .gpu_instance_profiles
            .iter()
            .enumerate()
            .find(|(_, profile)| profile.index >= count)
        {
            return Err((
                format!("{here}.gpu_instance_profiles[{p}].index"),
                Refusal::PastProfileEnum {
                    index: profile.index,
                    count,
                },
            ));
        }
        let mut types_seen = Vec::new();
        for (t, vgpu_type) in device.vgpu_types.iter().enumerate() {
            let at = format!("{here}.vgpu_types[{t}]");
            if types_seen.contains(&vgpu_type.id) {
                return Err((format!("{at}.id"), Refusal::VgpuTypeIdTaken(vgpu_type.id)));
            }
            types_seen.push(vgpu_type.id);
            if let Some(id) = vgpu_type.gpu_instance_profile_id {
                if rules::profile(device, id).is_err() {
                    return Err((
                        format!("{at}.gpu_instance_profile_id"),
                        Refusal::NoProfile(id),
                    ));
                }
            }
        }
        let mut seen = Vec::new();
        for (g, gi) in device.gpu_instances.iter().enumerate() {
            let at = format!("{here}.gpu_instances[{g}]");
            if seen.contains(&gi.id) {
                return Err((format!("{at}.id"), Refusal::GpuInstanceIdTaken(gi.id)));
            }
            seen.push(gi.id);
            let Ok(profile) = rules::profile(device, gi.profile_id) else {
                return Err((
                    format!("{at}.profile_id"),
                    Refusal::NoProfile(gi.profile_id),
                ));
            };
            if !profile.placements.is_empty() && !profile.placements.contains(&gi.placement) {
                return Err((
                    format!("{at}.placement"),
                    Refusal::OffPlacements {
                        placement: gi.placement,
                        profile: profile.name.clone(),
                    },
                ));
            }
            if let Some(other) = device.gpu_instances[..g]
                .iter()
                .find(|other| rules::overlaps(other.placement, gi.placement))
            {
                return Err((
                    format!("{at}.placement"),
                    Refusal::OverGpuInstance(other.id),
                ));
            }
            let mut ci_seen = Vec::new();
            for (c, ci) in gi.compute_instances.iter().enumerate() {
                let at = format!("{at}.compute_instances[{c}]");
                if ci_seen.contains(&ci.id) {
                    return Err((format!("{at}.id"), Refusal::ComputeInstanceIdTaken(ci.id)));
                }
                ci_seen.push(ci.id);
                let Ok(slices) = rules::compute_profile_slices(profile, ci.profile_id) else {
                    return Err((
                        format!("{at}.profile_id"),
                        Refusal::ComputeProfileNotOffered {
                            profile: profile.name.clone(),
                            compute_profile: ci.profile_id,
                        },
                    ));
                };
                if !rules::compute_placements(profile, slices).contains(&ci.placement) {
                    return Err((
                        format!("{at}.placement"),
                        Refusal::OffComputePlacements {
                            placement: ci.placement,
                            compute_profile: ci.profile_id,
                            profile: profile.name.clone(),
                        },
                    ));
                }
                if let Some(other) = gi.compute_instances[..c]
                    .iter()
                    .find(|other| rules::overlaps(other.placement, ci.placement))
                {
                    return Err((
                        format!("{at}.placement"),
                        Refusal::OverComputeInstance(other.id),
                    ));
                }
            }
        }
    }
    for (at, group) in scenario.nvlink.iter().enumerate() {
        for (b, bus_id) in group.iter().enumerate() {
            if scenario.device_at(bus_id).is_none() {
                return Err((
                    format!("nvlink[{at}][{b}]"),
                    Refusal::NotACard(bus_id.clone()),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn a_failure_that_names_no_nvml_error_is_refused_with_its_member() {
        let text =
            br#"{"driver_version": "570.172.08", "nvml_version": "12.570.172.08", "devices": [{
            "pci_bus_id": "0000:3b:00.0", "mig_mode": "not_supported",
            "fail": {"nvmlDeviceGetMigMode": "BROKEN"}}]}"#;
        match Scenario::from_json(text) {
            Err(ScenarioError::Refused { at, why }) => {
                assert_eq!(at, "devices[0].fail.nvmlDeviceGetMigMode");
                assert_eq!(why, Refusal::NotAnNvmlError("BROKEN".to_owned()));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn text_after_the_scenario_is_not_a_scenario() {
        let text = br#"{"driver_version": "570.172.08", "nvml_version": "12.570.172.08"} {}"#;
        assert!(matches!(
            Scenario::from_json(text),
            Err(ScenarioError::Shape { .. })
        ));
    }
}
