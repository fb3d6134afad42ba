//! Enumerating what a card offers, as current NVML headers ask: GPU-instance profile indices
//! from 0 until `NVML_ERROR_INVALID_ARGUMENT` (capped), skipping `NVML_ERROR_NOT_SUPPORTED`,
//! with the v1 call where the V call is missing or refused; compute-instance profiles the same
//! way. A bound taken from an older binding (17 GPU-instance profiles, 8 compute-instance
//! profiles) misses the profiles current drivers add, and a GPU instance of a missed profile
//! would make a carved card read `none_carved`.

use crate::api::{CAPS_P2P, ComputeInstanceInfo, Nvml, NvmlCard, NvmlFailure, ProfileInfo};

/// How many indices are tried at most, whatever the driver answers.
pub const INDEX_CAP: u32 = 64;

/// The GPU-instance profiles of the card, in index order.
///
/// The V call is used until it is known to be missing (`FunctionMissing`) or refused: before
/// it has answered once, a `NotSupported` or `InvalidArgument` from it is checked with the v1
/// call at the same index, and a v1 answer there means the driver refuses V (an older struct
/// version), so v1 serves the rest. Profiles v1 gives have no name: they are named from their
/// counts ([`name_from_counts`]).
pub fn gpu_instance_profiles(card: &dyn NvmlCard) -> Nvml<Vec<ProfileInfo>> {
    let mut use_v1 = false;
    let mut v_answered = false;
    let mut found = Vec::new();
    for index in 0..INDEX_CAP {
        let answer = if use_v1 {
            card.profile_v1(index)
        } else {
            match card.profile_v(index) {
                Ok(info) => {
                    v_answered = true;
                    Ok(info)
                }
                Err(NvmlFailure::FunctionMissing(_)) => {
                    use_v1 = true;
                    card.profile_v1(index)
                }
                Err(NvmlFailure::NotSupported | NvmlFailure::InvalidArgument) if !v_answered => {
                    let v1 = card.profile_v1(index);
                    use_v1 = v1.is_ok();
                    v1
                }
                Err(failure) => Err(failure),
            }
        };
        match answer {
            Ok(info) => found.push(info),
            Err(NvmlFailure::NotSupported) => {}
            Err(NvmlFailure::InvalidArgument) => break,
            Err(failure) => return Err(failure),
        }
    }
    name_unnamed(&mut found);
    Ok(found)
}

/// Names the profiles the driver gave no name, from their counts: `<slices>g.<GiB>gb`, with
/// the memory rounded up to whole GiB, and `+me` on the one of two same-named profiles that has
/// more media engines (decoders, JPEG, OFA). On the A100-40GB table this gives NVML's own
/// names (`1g.5gb`, `1g.5gb+me`, `1g.10gb`, `2g.10gb`, `3g.20gb`, `4g.20gb`, `7g.40gb`).
pub fn name_unnamed(profiles: &mut [ProfileInfo]) {
    let media = |p: &ProfileInfo| p.decoder_count + p.jpeg_count + p.ofa_count;
    let names: Vec<String> = profiles.iter().map(name_from_counts).collect();
    for at in 0..profiles.len() {
        if !profiles[at].name.is_empty() {
            continue;
        }
        let more_media = profiles.iter().enumerate().any(|(other, p)| {
            other != at && names[other] == names[at] && media(p) < media(&profiles[at])
        });
        profiles[at].name = if more_media {
            format!("{}+me", names[at])
        } else {
            names[at].clone()
        };
    }
}

/// `<slices>g.<GiB>gb`, the memory rounded up to whole GiB.
pub fn name_from_counts(profile: &ProfileInfo) -> String {
    format!(
        "{}g.{}gb",
        profile.slice_count,
        profile.memory_size_mb.div_ceil(1024)
    )
}

/// The v1 struct's P2P flag as the v3 capability bits.
pub fn v1_capabilities(p2p_supported: bool) -> u32 {
    if p2p_supported { CAPS_P2P } else { 0 }
}

/// The compute instances of a GPU instance: every compute-instance profile index from 0 until
/// `InvalidArgument` (capped, `NotSupported` skipped), each profile ID listed once, each compute
/// instance once.
pub fn compute_instances(
    card: &dyn NvmlCard,
    gpu_instance_id: u32,
) -> Nvml<Vec<ComputeInstanceInfo>> {
    let mut profile_ids = Vec::new();
    for index in 0..INDEX_CAP {
        match card.compute_profile(gpu_instance_id, index) {
            Ok(id) if !profile_ids.contains(&id) => profile_ids.push(id),
            Ok(_) | Err(NvmlFailure::NotSupported) => {}
            Err(NvmlFailure::InvalidArgument) => break,
            Err(failure) => return Err(failure),
        }
    }
    let mut found: Vec<ComputeInstanceInfo> = Vec::new();
    for id in profile_ids {
        for instance in card.compute_instances(gpu_instance_id, id)? {
            if !found.iter().any(|seen| seen.id == instance.id) {
                found.push(instance);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(slices: u32, memory: u64, media: u32) -> ProfileInfo {
        ProfileInfo {
            id: 0,
            name: String::new(),
            slice_count: slices,
            instance_count: 1,
            multiprocessor_count: 14 * slices,
            copy_engine_count: slices,
            decoder_count: media,
            encoder_count: 0,
            jpeg_count: media,
            ofa_count: media,
            memory_size_mb: memory,
            capabilities: 0,
        }
    }

    #[test]
    fn unnamed_a100_profiles_get_nvmls_own_names() {
        let mut profiles = vec![
            counts(1, 4864, 0),
            counts(1, 4864, 1),
            counts(1, 9856, 0),
            counts(2, 9856, 0),
            counts(3, 19968, 0),
            counts(4, 19968, 0),
            counts(7, 40192, 1),
        ];
        name_unnamed(&mut profiles);
        let names: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "1g.5gb",
                "1g.5gb+me",
                "1g.10gb",
                "2g.10gb",
                "3g.20gb",
                "4g.20gb",
                "7g.40gb"
            ]
        );
    }

    #[test]
    fn a_name_the_driver_gave_is_kept() {
        let mut profiles = vec![counts(1, 4864, 0)];
        profiles[0].name = "1g.5gb".into();
        profiles[0].memory_size_mb = 1;
        name_unnamed(&mut profiles);
        assert_eq!(profiles[0].name, "1g.5gb");
    }
}
