//! The card's inventory in the protocol table dropped or broken, member by member: its
//! profiles (and their signatures), GPU instances and vGPUs, each refusing the reply at its
//! pointer or losing exactly its unit.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use gpu_partition_types::Problem;
use serde_json::json;

use crate::mutations::loses;

// profiles
loses!(missing_profiles_lose_the_list, ["/profiles"], |v| remove(
    v,
    "/profiles"
));
loses!(
    profiles_that_are_not_a_list_lose_the_list,
    ["/profiles"],
    |v| set(v, "/profiles", json!({}))
);
loses!(
    a_profile_without_id_loses_that_profile,
    ["/profiles/1"],
    |v| remove(v, "/profiles/1/id")
);
loses!(
    a_profile_with_a_string_id_loses_that_profile,
    ["/profiles/0"],
    |v| set(v, "/profiles/0/id", json!("9"))
);
loses!(
    a_profile_that_is_not_an_object_loses_that_profile,
    ["/profiles/0"],
    |v| set(v, "/profiles/0", json!([9]))
);
loses!(
    a_missing_profile_name_loses_the_name,
    ["/profiles/0/name"],
    |v| remove(v, "/profiles/0/name")
);
loses!(
    a_numeric_profile_name_loses_the_name,
    ["/profiles/1/name"],
    |v| set(v, "/profiles/1/name", json!(3))
);
loses!(
    a_missing_free_instances_loses_it,
    ["/profiles/0/free_instances"],
    |v| remove(v, "/profiles/0/free_instances")
);
loses!(
    negative_free_instances_are_lost,
    ["/profiles/0/free_instances"],
    |v| set(v, "/profiles/0/free_instances", json!(-1))
);
loses!(
    fractional_free_instances_are_lost,
    ["/profiles/0/free_instances"],
    |v| set(v, "/profiles/0/free_instances", json!(1.0))
);
loses!(
    free_instances_with_an_exponent_are_lost,
    ["/profiles/0/free_instances"],
    |v| set(
        v,
        "/profiles/0/free_instances",
        serde_json::from_str::<serde_json::Value>("1e3").unwrap()
    )
);
loses!(
    free_instances_as_a_string_are_lost,
    ["/profiles/0/free_instances"],
    |v| set(v, "/profiles/0/free_instances", json!("1"))
);
loses!(
    free_instances_past_u32_are_lost,
    ["/profiles/0/free_instances"],
    |v| set(v, "/profiles/0/free_instances", json!(4_294_967_296_u64))
);
loses!(
    missing_placements_are_lost_as_in_a_reply_of_format_1_0,
    ["/profiles/0/placements"],
    |v| remove(v, "/profiles/0/placements")
);
loses!(
    a_placement_without_its_size_loses_every_placement_of_the_profile_only,
    ["/profiles/1/placements"],
    |v| remove(v, "/profiles/1/placements/2/size")
);
loses!(
    placements_that_are_not_a_list_are_lost,
    ["/profiles/0/placements"],
    |v| set(v, "/profiles/0/placements", json!({"start": 0, "size": 4}))
);
loses!(
    a_negative_placement_start_loses_the_placements,
    ["/profiles/0/placements"],
    |v| set(v, "/profiles/0/placements/1/start", json!(-4))
);
loses!(
    missing_processes_are_lost_as_in_a_reply_of_format_1_0,
    ["/processes"],
    |v| remove(v, "/processes")
);
loses!(
    a_process_without_its_pid_loses_that_process,
    ["/processes/0"],
    |v| remove(v, "/processes/0/pid")
);
loses!(
    a_numeric_process_name_loses_the_name,
    ["/processes/0/name"],
    |v| set(v, "/processes/0/name", json!(7))
);
loses!(
    a_missing_signature_loses_it,
    ["/profiles/0/signature"],
    |v| remove(v, "/profiles/0/signature")
);
loses!(
    a_memory_size_past_u64_loses_the_signature_only,
    ["/profiles/1/signature"],
    |v| set(
        v,
        "/profiles/1/signature/memory_size_mb",
        serde_json::from_str::<serde_json::Value>("18446744073709551616").unwrap()
    )
);
loses!(
    capabilities_that_are_not_a_list_lose_the_signature,
    ["/profiles/0/signature"],
    |v| set(v, "/profiles/0/signature/capabilities", json!("p2p"))
);
loses!(
    a_capability_that_is_not_a_string_loses_the_signature,
    ["/profiles/0/signature"],
    |v| set(v, "/profiles/0/signature/capabilities/0", json!(1))
);

#[test]
fn every_one_of_the_ten_signature_members_is_required_inside_it() {
    let members = [
        "slice_count",
        "instance_count",
        "multiprocessor_count",
        "copy_engine_count",
        "decoder_count",
        "encoder_count",
        "jpeg_count",
        "ofa_count",
        "memory_size_mb",
        "capabilities",
    ];
    for member in members {
        let read = edited(|v| remove(v, &format!("/profiles/1/signature/{member}")));
        assert_eq!(lost(&read), ["/profiles/1/signature"], "without {member}");
        let lost = &read.as_ref().unwrap().lost()[0];
        assert_eq!(lost.problem, Problem::Absent, "without {member}");
        assert!(
            lost.message.contains(member),
            "{member} not named in {:?}",
            lost.message
        );
    }
}

#[test]
fn a_lost_unit_names_the_unit_and_its_message_names_the_leaf() {
    let read = edited(|v| set(v, "/profiles/0/signature/ofa_count", json!("0"))).unwrap();
    let lost = read.lost();
    assert_eq!(lost[0].pointer.to_string(), "/profiles/0/signature");
    assert_eq!(lost[0].problem, Problem::WrongType);
    assert!(
        lost[0].message.contains("/profiles/0/signature/ofa_count"),
        "{}",
        lost[0].message
    );
}

// gpu_instances
loses!(
    missing_gpu_instances_lose_the_list,
    ["/gpu_instances"],
    |v| remove(v, "/gpu_instances")
);
loses!(
    gpu_instances_that_are_a_number_lose_the_list,
    ["/gpu_instances"],
    |v| set(v, "/gpu_instances", json!(1))
);
loses!(
    an_instance_without_id_loses_the_instance,
    ["/gpu_instances/0"],
    |v| remove(v, "/gpu_instances/0/id")
);
loses!(
    an_instance_without_profile_id_loses_the_instance,
    ["/gpu_instances/0"],
    |v| remove(v, "/gpu_instances/0/profile_id")
);
loses!(
    an_instance_without_uuid_loses_the_instance,
    ["/gpu_instances/0"],
    |v| remove(v, "/gpu_instances/0/uuid")
);
loses!(
    an_instance_with_a_numeric_uuid_loses_the_instance,
    ["/gpu_instances/0"],
    |v| set(v, "/gpu_instances/0/uuid", json!(5))
);
loses!(
    a_missing_placement_loses_the_placement,
    ["/gpu_instances/0/placement"],
    |v| remove(v, "/gpu_instances/0/placement")
);
loses!(
    a_placement_with_a_string_size_loses_the_placement,
    ["/gpu_instances/0/placement"],
    |v| set(v, "/gpu_instances/0/placement/size", json!("4"))
);
loses!(
    missing_compute_instances_lose_them,
    ["/gpu_instances/0/compute_instances"],
    |v| remove(v, "/gpu_instances/0/compute_instances")
);
loses!(
    a_compute_instance_without_placement_loses_the_whole_list,
    ["/gpu_instances/0/compute_instances"],
    |v| remove(v, "/gpu_instances/0/compute_instances/0/placement")
);

// vgpus
loses!(missing_vgpus_lose_the_list, ["/vgpus"], |v| remove(
    v, "/vgpus"
));
loses!(vgpus_that_are_null_lose_the_list, ["/vgpus"], |v| set(
    v,
    "/vgpus",
    json!(null)
));
loses!(
    a_vgpu_without_uuid_loses_the_vgpu,
    ["/vgpus/1"],
    |v| remove(v, "/vgpus/1/uuid")
);
loses!(
    a_vgpu_without_gpu_instance_id_loses_the_vgpu,
    ["/vgpus/0"],
    |v| remove(v, "/vgpus/0/gpu_instance_id")
);
loses!(a_vgpu_without_vm_loses_the_vgpu, ["/vgpus/0"], |v| remove(
    v,
    "/vgpus/0/vm"
));
loses!(
    a_vgpu_with_a_string_instance_id_loses_the_vgpu,
    ["/vgpus/0"],
    |v| set(v, "/vgpus/0/gpu_instance_id", json!("1"))
);
loses!(a_missing_vgpu_type_loses_the_type, ["/vgpus/0/type"], |v| {
    remove(v, "/vgpus/0/type")
});
loses!(a_numeric_vgpu_type_loses_the_type, ["/vgpus/1/type"], |v| {
    set(v, "/vgpus/1/type", json!(1))
});
loses!(
    a_missing_type_id_loses_it,
    ["/vgpus/0/type_id"],
    |v| remove(v, "/vgpus/0/type_id")
);
loses!(
    a_fractional_type_id_loses_it,
    ["/vgpus/0/type_id"],
    |v| set(v, "/vgpus/0/type_id", json!(1123.5))
);

#[test]
fn faults_in_several_units_each_cost_their_own_unit_sorted_by_pointer() {
    let read = edited(|v| {
        remove(v, "/vgpus/1/type_id");
        remove(v, "/driver/version");
        set(v, "/profiles/1/free_instances", json!(-3));
    });
    assert_eq!(
        lost(&read),
        ["/driver", "/profiles/1/free_instances", "/vgpus/1/type_id"]
    );
}
