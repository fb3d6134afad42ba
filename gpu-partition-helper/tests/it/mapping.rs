//! NVML's answers to the reply, with the NVML calls behind the traits and recorded answers
//! (`recorded`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_helper::api::{GpuInstanceInfo, NvmlFailure};
use gpu_partition_helper::read::{Answer, read_card};
use gpu_partition_types::{Case, Nullable, PartitionMode, Reply};
use std::collections::BTreeMap;

use crate::common;
use crate::recorded::*;

#[test]
fn mig_on_with_instances_is_partitions_with_catalogue_instances_and_vgpus() {
    let reply = reply(&host(Ok(mig_on_with_instances())));
    insta::assert_json_snapshot!(
        "mig_on_with_instances",
        serde_json::from_str::<serde_json::Value>(&reply.to_json()).unwrap()
    );
    let back = read_back(&reply);
    assert_eq!(back.outcome().partition_mode(), PartitionMode::Enabled);
    assert_eq!(back.case, Case::Partitions);
    // Only the vGPU whose type NVML could not name loses anything, and only its type.
    let lost = common::lost_pointers(&back);
    assert_eq!(lost, ["/vgpus/1/type"]);
}

#[test]
fn profile_capability_bits_become_p2p_and_gfx() {
    let back = read_back(&reply(&host(Ok(mig_on_with_instances()))));
    let profiles = back.profiles.read().unwrap();
    let caps: Vec<Vec<String>> = profiles
        .iter()
        .map(|p| {
            p.read()
                .unwrap()
                .signature
                .read()
                .unwrap()
                .capabilities
                .iter()
                .map(|c| c.as_str().to_owned())
                .collect()
        })
        .collect();
    assert_eq!(caps, [vec!["p2p"], vec!["p2p", "gfx"]]);
}

#[test]
fn mig_on_with_no_instance_is_none_carved_and_enabled() {
    let mut card = mig_on_with_instances();
    card.instances.clear();
    let back = read_back(&reply(&host(Ok(card))));
    assert_eq!(
        (back.case, back.outcome().partition_mode()),
        (Case::NoneCarved, PartitionMode::Enabled)
    );
}

#[test]
fn mig_off_with_on_pending_is_none_carved_and_enable_on_reboot() {
    let mut card = mig_on_with_instances();
    card.mig_mode = Ok((false, true));
    card.profile_error = Some(NvmlFailure::NotSupported);
    let back = read_back(&reply(&host(Ok(card))));
    assert_eq!(
        (back.case, back.outcome().partition_mode()),
        (Case::NoneCarved, PartitionMode::EnableOnReboot)
    );
    assert_eq!(back.gpu_instances.read().map(Vec::len), Some(0));
}

#[test]
fn mig_on_with_off_pending_is_disable_on_reboot() {
    let mut card = mig_on_with_instances();
    card.mig_mode = Ok((true, false));
    assert_eq!(
        read_back(&reply(&host(Ok(card))))
            .outcome()
            .partition_mode(),
        PartitionMode::DisableOnReboot
    );
}

#[test]
fn a_card_without_mig_is_not_applicable() {
    let mut card = mig_on_with_instances();
    card.mig_mode = Err(NvmlFailure::NotSupported);
    let back = read_back(&reply(&host(Ok(card))));
    assert_eq!(
        (back.case, back.outcome().partition_mode()),
        (Case::NotApplicable, PartitionMode::NotSupported)
    );
    assert!(!back.mode.capable);
}

#[test]
fn a_card_in_use_by_another_client_is_busy() {
    assert!(matches!(
        read_card(&host(Err(NvmlFailure::InUse("held".into()))), device()),
        Answer::Busy(_)
    ));
    let mut card = mig_on_with_instances();
    card.mig_mode = Err(NvmlFailure::InUse("held".into()));
    assert!(matches!(
        read_card(&host(Ok(card)), device()),
        Answer::Busy(_)
    ));
}

#[test]
fn no_permission_is_unreadable_with_permission_denied() {
    assert_eq!(
        unreadable_kind(Err(NvmlFailure::NoPermission("EPERM".into()))),
        "permission_denied"
    );
}

#[test]
fn a_card_nvml_does_not_know_is_unreadable_with_not_found() {
    assert_eq!(
        unreadable_kind(Err(NvmlFailure::NotFound("no such bus id".into()))),
        "not_found"
    );
}

#[test]
fn any_other_nvml_error_is_unreadable_with_driver_error() {
    assert_eq!(
        unreadable_kind(Err(NvmlFailure::Driver("GPU is lost".into()))),
        "driver_error"
    );
    let mut card = mig_on_with_instances();
    card.mig_mode = Err(NvmlFailure::Driver("GPU is lost".into()));
    assert_eq!(unreadable_kind(Ok(card)), "driver_error");
}

#[test]
fn a_missing_nvml_library_is_unreadable_with_driver_error_naming_the_library() {
    let answer = gpu_partition_helper::read::failed(
        device(),
        "loading NVML",
        &NvmlFailure::LibraryMissing("cannot load libnvidia-ml.so.1".into()),
    );
    let Answer::Reply(reply) = answer else {
        panic!("{answer:?}")
    };
    common::assert_unreadable_without_nvml(&read_back(&reply));
}

#[test]
fn a_gpu_instance_listing_that_fails_with_mig_on_is_unreadable_not_a_guess() {
    let mut card = mig_on_with_instances();
    card.instances
        .insert(9, Err(NvmlFailure::Driver("timeout".into())));
    assert_eq!(unreadable_kind(Ok(card)), "driver_error");
}

#[test]
fn a_capacity_nvml_cannot_give_costs_only_that_profiles_free_instances() {
    let mut card = mig_on_with_instances();
    card.capacity
        .insert(9, Err(NvmlFailure::Driver("x".into())));
    let lost = common::lost_pointers(&read_back(&reply(&host(Ok(card)))));
    assert_eq!(lost, ["/profiles/1/free_instances", "/vgpus/1/type"]);
}

#[test]
fn driver_versions_nvml_cannot_give_cost_only_the_driver_member() {
    let mut host = host(Ok(mig_on_with_instances()));
    host.versions = Err(NvmlFailure::Driver("x".into()));
    let lost = common::lost_pointers(&read_back(&reply(&host)));
    assert_eq!(lost, ["/driver", "/vgpus/1/type"]);
}

#[test]
fn a_time_sliced_vgpu_has_no_gpu_instance() {
    let back = read_back(&reply(&host(Ok(mig_on_with_instances()))));
    let vgpus = back.vgpus.read().unwrap();
    assert!(vgpus[1].read().unwrap().gpu_instance_id.is_null());
}

#[test]
fn a_gpu_instance_of_a_profile_past_the_old_bound_of_17_is_read() {
    let mut card = mig_on_with_instances();
    card.profiles.push((17, profile(32, "3g.71gb+gfx", 3, 0x2)));
    card.instances = BTreeMap::from([(
        32,
        Ok(vec![GpuInstanceInfo {
            id: 3,
            profile_id: 32,
            start: 0,
            size: 4,
        }]),
    )]);
    let back = read_back(&reply(&host(Ok(card))));
    assert_eq!(back.case, Case::Partitions);
    let ids: Vec<u32> = back
        .gpu_instances
        .read()
        .unwrap()
        .iter()
        .map(|gi| gi.read().unwrap().profile_id)
        .collect();
    assert_eq!(ids, [32]);
}

#[test]
fn without_the_v_call_the_v1_call_serves_and_names_come_from_the_counts() {
    let mut card = mig_on_with_instances();
    card.profile_v = Err(NvmlFailure::FunctionMissing(
        "nvmlDeviceGetGpuInstanceProfileInfoV".into(),
    ));
    let back = read_back(&reply(&host(Ok(card))));
    let names: Vec<String> = back
        .profiles
        .read()
        .unwrap()
        .iter()
        .map(|p| p.read().unwrap().name.read().unwrap().clone())
        .collect();
    assert_eq!(names, ["1g.18gb", "3g.54gb"]);
}

#[test]
fn a_refused_v_call_falls_back_to_the_v1_call() {
    for refused in [NvmlFailure::NotSupported, NvmlFailure::InvalidArgument] {
        let mut card = mig_on_with_instances();
        card.profile_v = Err(refused.clone());
        let back = read_back(&reply(&host(Ok(card))));
        assert_eq!(back.profiles.read().map(Vec::len), Some(2), "{refused:?}");
    }
}

#[test]
fn an_invalid_argument_on_the_mig_mode_is_a_failed_read_not_not_applicable() {
    let mut card = mig_on_with_instances();
    card.mig_mode = Err(NvmlFailure::InvalidArgument);
    assert_eq!(unreadable_kind(Ok(card)), "driver_error");
}

#[test]
fn a_vgpu_whose_gpu_instance_cannot_be_read_is_lost_not_time_sliced() {
    let mut card = mig_on_with_instances();
    if let Ok(vgpus) = &mut card.vgpus {
        vgpus[0].gpu_instance_id = Err(NvmlFailure::Driver("GPU is lost".into()));
    }
    let back = read_back(&reply(&host(Ok(card))));
    let lost = common::lost_pointers(&back);
    assert_eq!(lost, ["/vgpus/0", "/vgpus/1/type"]);
}

#[test]
fn the_vgpu_type_catalogue_is_read_in_mib_with_null_for_what_a_time_sliced_type_lacks() {
    let reply = read_back(&reply(&host(Ok(mig_on_with_instances()))));
    let types: Vec<_> = reply
        .vgpu_types
        .read()
        .unwrap()
        .iter()
        .map(|kind| kind.read().unwrap().clone())
        .collect();
    assert_eq!(types[0].framebuffer_mib.read(), Some(&(18 * 1024)));
    assert_eq!(
        types[0].gpu_instance_profile_id.read(),
        Some(&Nullable::Value(19))
    );
    assert_eq!(
        types[0].max_instances_per_gpu_instance.read(),
        Some(&Nullable::Value(1))
    );
    assert_eq!(
        types[1].gpu_instance_profile_id.read(),
        Some(&Nullable::Null)
    );
    assert_eq!(
        types[1].max_instances_per_gpu_instance.read(),
        Some(&Nullable::Null)
    );
    assert!(
        reply
            .lost()
            .iter()
            .all(|lost| !lost.pointer.to_string().starts_with("/vgpu_types")),
        "{:?}",
        reply.lost()
    );
}

#[test]
fn a_count_per_gpu_instance_the_driver_does_not_give_is_lost_not_guessed() {
    let mut card = mig_on_with_instances();
    card.vgpu_types = Ok(vec![vgpu_type(
        1120,
        "NVIDIA H200-1-18C",
        Some(19),
        18,
        Err(NvmlFailure::NotSupported),
    )]);
    let reply = read_back(&reply(&host(Ok(card))));
    let lost = vgpu_catalogue_lost(&reply);
    assert_eq!(lost, ["/vgpu_types/0/max_instances_per_gpu_instance"]);
}

#[test]
fn a_card_without_vgpu_support_lists_no_type_and_loses_nothing() {
    let mut card = mig_on_with_instances();
    card.vgpu_types = Err(NvmlFailure::NotSupported);
    let reply = read_back(&reply(&host(Ok(card))));
    assert_eq!(reply.vgpu_types.read().map(Vec::len), Some(0));
    assert!(vgpu_catalogue_lost(&reply).is_empty());
}

#[test]
fn a_card_without_the_heterogeneous_setting_says_null_and_a_driver_without_the_call_loses_it() {
    let without = read_back(&reply(&host(Ok(mig_on_with_instances()))));
    assert_eq!(
        without.vgpu_mode.read().map(|mode| mode.heterogeneous),
        Some(Nullable::Null)
    );
    let mut card = mig_on_with_instances();
    card.heterogeneous = Err(NvmlFailure::FunctionMissing(
        "nvmlDeviceGetVgpuHeterogeneousMode".into(),
    ));
    let old = read_back(&reply(&host(Ok(card))));
    let lost = vgpu_catalogue_lost(&old);
    assert_eq!(lost, ["/vgpu_mode"]);
    let mut card = mig_on_with_instances();
    card.heterogeneous = Ok(true);
    let on = read_back(&reply(&host(Ok(card))));
    assert_eq!(
        on.vgpu_mode.read().map(|mode| mode.heterogeneous),
        Some(Nullable::Value(true))
    );
}

/// The lost members of the vGPU catalogue and mode (the recorded card loses a vGPU's type
/// besides, on purpose).
fn vgpu_catalogue_lost(reply: &Reply) -> Vec<String> {
    common::lost_pointers(reply)
        .into_iter()
        .filter(|pointer| pointer.starts_with("/vgpu_types") || pointer.starts_with("/vgpu_mode"))
        .collect()
}

#[test]
fn the_card_architecture_is_nvml_s_number_read_as_its_architecture() {
    let back = read_back(&reply(&host(Ok(mig_on_with_instances()))));
    assert_eq!(
        back.architecture(),
        Some(gpu_partition_types::Architecture::Hopper.into())
    );
}

#[test]
fn an_architecture_number_a_later_nvml_adds_is_passed_on_unchanged() {
    let mut card = mig_on_with_instances();
    card.architecture = Ok(11);
    let back = read_back(&reply(&host(Ok(card))));
    let architecture = back.architecture().unwrap();
    assert_eq!((architecture.known(), architecture.nvml()), (None, 11));
    assert!(!common::lost_pointers(&back).contains(&"/card/architecture".to_owned()));
}

#[test]
fn an_architecture_nvml_does_not_know_or_cannot_give_is_lost_not_written_as_a_number() {
    for answer in [
        Ok(0xffff_ffff),
        Err(NvmlFailure::FunctionMissing(
            "nvmlDeviceGetArchitecture".into(),
        )),
        Err(NvmlFailure::NotSupported),
    ] {
        let mut card = mig_on_with_instances();
        card.architecture = answer.clone();
        let back = read_back(&reply(&host(Ok(card))));
        assert_eq!(back.architecture(), None, "{answer:?}");
        assert_eq!(
            common::lost_pointers(&back),
            ["/card/architecture", "/vgpus/1/type"],
            "{answer:?}"
        );
    }
}
