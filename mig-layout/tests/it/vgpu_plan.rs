//! The vGPU plan: the driver's order (MIG mode, `sriov-manage -e`, instances, type writes),
//! nothing where the card holds the spec, and nothing at all while a VM uses a VF it changes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::Holder;
use gpu_partition_types::{Bdf, Lenient, VgpuType};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::sriov::{Sriov, read_sriov};
use mig_layout::vgpu::{
    Missing, VgpuCard, VgpuDocument, VgpuRefusal, VgpuSpec, VgpuStep, plan_vgpu, plan_vgpu_leave,
};

const PF: &str = "0000:3b:00.0";

/// The published A100 PCIe 40GB types (IDs, maxima: OpenForBC's captures and
/// vgpu-device-manager's example config), each said to fit one per GPU instance as a driver
/// would give it (NVIDIA publishes no such count).
fn catalogue() -> Vec<VgpuType> {
    [
        (474, "NVIDIA A100-1-5C", Some(19), 7),
        (475, "NVIDIA A100-2-10C", Some(14), 3),
        (468, "NVIDIA A100-4C", None, 10),
    ]
    .into_iter()
    .map(|(id, name, profile, max)| {
        let mut kind = VgpuType::new(id);
        kind.name = Lenient::Read(name.to_owned());
        kind.gpu_instance_profile_id = Lenient::Read(profile.into());
        kind.max_instances = Lenient::Read(max);
        kind.max_instances_per_gpu_instance = Lenient::Read(profile.map(|_| 1).into());
        kind
    })
    .collect()
}

fn spec(types: &str) -> VgpuSpec {
    let text = format!(
        "version: v1\nvgpu-configs:\n  this:\n    - devices: all\n      vgpu-devices:\n{types}"
    );
    VgpuDocument::from_text(&text)
        .unwrap()
        .config("this")
        .unwrap()[0]
        .clone()
}

fn mixed() -> VgpuSpec {
    spec("        A100-1-5C: 3\n        A100-2-10C: 1\n")
}

/// A PF with `total` VFs possible and `types` enabled (the current type of each, 0 for none),
/// VF `n` at `0000:3b:01.n` (for `n` below 8) in IOMMU group `40 + n`.
fn sriov(total: u32, types: &[u32]) -> Sriov {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = FakeSysfs::new(dir.path()).unwrap();
    sysfs.nvidia(PF, Some("nvidia")).unwrap();
    sysfs.sriov(PF, total).unwrap();
    for (index, current) in types.iter().enumerate() {
        let vf = format!("0000:3b:{:02x}.{}", 1 + index / 8, index % 8);
        sysfs.virtual_function(&vf, PF, Some("nvidia")).unwrap();
        sysfs.vgpu(&vf, *current, &[], None).unwrap();
        sysfs.iommu_group(&vf, 40 + index as u32).unwrap();
    }
    read_sriov(dir.path(), PF.parse().unwrap())
        .unwrap()
        .unwrap()
}

fn card<'a>(
    mig_enabled: bool,
    sriov: &'a Sriov,
    catalogue: &'a [VgpuType],
    holders: &'a [Holder],
) -> VgpuCard<'a> {
    VgpuCard {
        device: PF.parse().unwrap(),
        mig_enabled,
        heterogeneous: Some(false),
        sriov,
        catalogue,
        holders,
    }
}

/// The plan's steps by kind, in order: `mig-on`, `vfs-on`, `instances`, `write <index> <id>`.
fn kinds(steps: &[VgpuStep]) -> Vec<String> {
    steps
        .iter()
        .map(|step| match step {
            VgpuStep::DisableVfs => "vfs-off".to_owned(),
            VgpuStep::MigMode(on) => format!("mig-{}", if *on { "on" } else { "off" }),
            VgpuStep::EnableVfs => "vfs-on".to_owned(),
            VgpuStep::Heterogeneous => "heterogeneous".to_owned(),
            VgpuStep::GpuInstances(_) => "instances".to_owned(),
            VgpuStep::ClearType { index } => format!("clear {index}"),
            VgpuStep::WriteType { index, id, .. } => format!("write {index} {id}"),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_host_after_a_reboot_gets_mig_then_the_vfs_then_the_instances_then_the_types() {
    let (sriov, types) = (sriov(16, &[]), catalogue());
    let steps = plan_vgpu(&mixed(), &card(false, &sriov, &types, &[])).unwrap();
    assert_eq!(
        kinds(&steps),
        [
            "mig-on",
            "vfs-on",
            "instances",
            "write 0 474",
            "write 1 474",
            "write 2 474",
            "write 3 475"
        ]
    );
}

#[test]
fn the_instances_come_after_the_vfs_whatever_the_mig_mode() {
    // MIG already on and no VFs: sriov-manage -e would wipe instances made before it.
    let (sriov, types) = (sriov(16, &[]), catalogue());
    let steps = plan_vgpu(&mixed(), &card(true, &sriov, &types, &[])).unwrap();
    let at = |kind: &str| kinds(&steps).iter().position(|k| k == kind).unwrap();
    assert!(at("vfs-on") < at("instances"), "{:?}", kinds(&steps));
}

#[test]
fn a_host_that_holds_the_spec_gets_no_vf_step_and_only_the_mig_layout_to_diff() {
    let (sriov, types) = (sriov(16, &[474, 0, 474, 475, 474]), catalogue());
    let steps = plan_vgpu(&mixed(), &card(true, &sriov, &types, &[])).unwrap();
    assert_eq!(kinds(&steps), ["instances"]);
}

#[test]
fn a_time_sliced_spec_the_host_holds_is_no_step_at_all() {
    let (sriov, types) = (sriov(16, &[468, 468]), catalogue());
    let steps = plan_vgpu(
        &spec("        A100-4C: 2\n"),
        &card(false, &sriov, &types, &[]),
    )
    .unwrap();
    assert!(steps.is_empty(), "{steps:?}");
}

#[test]
fn a_vf_of_an_unwanted_type_is_cleared_and_the_free_vfs_filled_in_index_order() {
    // VF 0 keeps its 474 and VF 1 its 475; VF 2 holds a second 475, one more than the spec
    // wants: it is cleared (first: the GPU instance under it may go), and the two 474s still
    // wanted go to the free VFs 2 and 3.
    let (sriov, types) = (sriov(16, &[474, 475, 475, 0, 0]), catalogue());
    let steps = plan_vgpu(&mixed(), &card(true, &sriov, &types, &[])).unwrap();
    assert_eq!(
        kinds(&steps),
        ["clear 2", "instances", "write 2 474", "write 3 474"]
    );
}

#[test]
fn vfs_that_exist_under_mig_off_are_disabled_before_mig_goes_on_and_enabled_after() {
    let (sriov, types) = (sriov(16, &[0, 0]), catalogue());
    let steps = plan_vgpu(&mixed(), &card(false, &sriov, &types, &[])).unwrap();
    assert_eq!(
        kinds(&steps)[..4],
        ["vfs-off", "mig-on", "vfs-on", "instances"]
    );
}

fn two_types_heterogeneous() -> VgpuSpec {
    spec("        A100-4C: 2\n").with_heterogeneous(true)
}

#[test]
fn heterogeneous_mode_is_set_after_the_vfs_and_before_any_type() {
    let (sriov, types) = (sriov(16, &[]), catalogue());
    let steps = plan_vgpu(
        &two_types_heterogeneous(),
        &card(false, &sriov, &types, &[]),
    )
    .unwrap();
    assert_eq!(
        kinds(&steps),
        ["vfs-on", "heterogeneous", "write 0 468", "write 1 468"]
    );
}

#[test]
fn heterogeneous_mode_the_card_holds_is_no_step_and_one_it_lacks_is_set_before_the_types() {
    let (sriov, types) = (sriov(16, &[468, 0]), catalogue());
    let mut on = card(false, &sriov, &types, &[]);
    on.heterogeneous = Some(true);
    let steps = plan_vgpu(&two_types_heterogeneous(), &on).unwrap();
    assert_eq!(kinds(&steps), ["write 1 468"]);
    on.heterogeneous = Some(false);
    let steps = plan_vgpu(&two_types_heterogeneous(), &on).unwrap();
    assert_eq!(kinds(&steps), ["heterogeneous", "write 1 468"]);
}

#[test]
fn heterogeneous_mode_with_mig_backed_types_is_refused_before_any_step() {
    let (sriov, types) = (sriov(16, &[]), catalogue());
    assert_eq!(
        plan_vgpu(
            &mixed().with_heterogeneous(true),
            &card(false, &sriov, &types, &[])
        )
        .unwrap_err(),
        VgpuRefusal::NotAVgpuHost {
            device: PF.parse().unwrap(),
            missing: Missing::HeterogeneousWithMig
        }
    );
}

#[test]
fn heterogeneous_mode_on_a_card_whose_setting_is_not_known_is_refused() {
    let (sriov, types) = (sriov(16, &[]), catalogue());
    let mut card = card(false, &sriov, &types, &[]);
    card.heterogeneous = None;
    assert_eq!(
        plan_vgpu(&two_types_heterogeneous(), &card).unwrap_err(),
        VgpuRefusal::NotAVgpuHost {
            device: PF.parse().unwrap(),
            missing: Missing::Heterogeneous
        }
    );
}

#[test]
fn a_vm_on_a_vf_the_plan_would_change_refuses_it_naming_the_vf_and_the_pid() {
    let (sriov, types) = (sriov(16, &[474, 475, 475, 0, 0]), catalogue());
    let holders = [Holder::new(7301, "qemu-system-x86", "/dev/vfio/42")];
    let error = plan_vgpu(&mixed(), &card(true, &sriov, &types, &holders)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "0000:3b:01.2 (virtual function 2 of 0000:3b:00.0) is in use: pid 7301 (qemu-system-x86)"
    );
}

#[test]
fn a_vm_on_a_vf_the_plan_leaves_alone_does_not_refuse_it() {
    let (sriov, types) = (sriov(16, &[474, 475, 475, 0, 0]), catalogue());
    let holders = [Holder::new(7301, "qemu-system-x86", "/dev/vfio/40")];
    assert!(plan_vgpu(&mixed(), &card(true, &sriov, &types, &holders)).is_ok());
}

#[test]
fn leave_disables_the_vfs_first_then_turns_mig_off_and_a_vm_on_any_vf_refuses_it() {
    let (sriov, types) = (sriov(16, &[474, 0]), catalogue());
    let steps = plan_vgpu_leave(&card(true, &sriov, &types, &[])).unwrap();
    assert_eq!(kinds(&steps), ["vfs-off", "mig-off"]);
    let holders = [Holder::new(7302, "qemu-system-x86", "/dev/vfio/41")];
    let error = plan_vgpu_leave(&card(true, &sriov, &types, &holders)).unwrap_err();
    assert!(
        matches!(error, VgpuRefusal::InUse { index: 1, .. }),
        "{error:?}"
    );
}

#[test]
fn fewer_vfs_enabled_than_the_spec_has_vgpus_are_enabled_again_all_of_them() {
    let (sriov, types) = (sriov(16, &[474]), catalogue());
    let steps = plan_vgpu(&mixed(), &card(true, &sriov, &types, &[])).unwrap();
    assert_eq!(kinds(&steps)[..3], ["vfs-off", "vfs-on", "instances"]);
}

#[test]
fn more_vgpus_than_the_gpu_can_have_vfs_are_refused_before_any_step() {
    let (sriov, types) = (sriov(2, &[]), catalogue());
    let error = plan_vgpu(&mixed(), &card(false, &sriov, &types, &[])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "0000:3b:00.0: 4 vGPUs asked for, and the GPU can have 2 virtual functions"
    );
}

#[test]
fn a_type_the_card_does_not_list_is_refused_as_impossible() {
    let (sriov, types) = (sriov(16, &[]), catalogue());
    let error = plan_vgpu(
        &spec("        A100-7-40C: 1\n"),
        &card(false, &sriov, &types, &[]),
    )
    .unwrap_err();
    assert!(matches!(error, VgpuRefusal::Impossible { .. }), "{error:?}");
}

#[test]
fn a_vf_without_vgpu_files_says_the_host_is_not_a_per_vf_vgpu_host() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = FakeSysfs::new(dir.path()).unwrap();
    sysfs
        .nvidia(PF, Some("nvidia"))
        .unwrap()
        .sriov(PF, 16)
        .unwrap();
    sysfs
        .virtual_function("0000:3b:00.4", PF, Some("nvidia"))
        .unwrap();
    let sriov = read_sriov(dir.path(), PF.parse::<Bdf>().unwrap())
        .unwrap()
        .unwrap();
    let types = catalogue();
    let error = plan_vgpu(
        &spec("        A100-4C: 1\n"),
        &card(false, &sriov, &types, &[]),
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            VgpuRefusal::NotAVgpuHost {
                missing: Missing::VgpuFiles { index: 0 },
                ..
            }
        ),
        "{error:?}"
    );
}

/// The VFs' types after the plan's steps, as the driver would hold them.
fn after(steps: &[VgpuStep], before: &[u32], total: u32) -> Vec<u32> {
    let mut types = before.to_vec();
    for step in steps {
        match step {
            VgpuStep::EnableVfs => types = vec![0; total as usize],
            VgpuStep::DisableVfs => types.clear(),
            VgpuStep::ClearType { index } => types[*index as usize] = 0,
            VgpuStep::WriteType { index, id, .. } => {
                assert_eq!(
                    types[*index as usize], 0,
                    "a type written over another: {steps:?}"
                );
                types[*index as usize] = id.get();
            }
            _ => {}
        }
    }
    types
}

proptest::proptest! {
    // Each case builds two sysfs trees on disk: 64 cases cover the 4^8 VF states' shapes well.
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Whatever the VFs hold, the plan leaves exactly the spec's vGPUs on them, writes no VF
    /// twice, and writes nothing where they already hold it.
    #[test]
    fn the_plan_leaves_exactly_the_spec_s_vgpus_and_writes_nothing_already_held(
        before in proptest::collection::vec(proptest::sample::select(vec![0u32, 474, 475, 468]), 0..8),
        small in 0u32..4,
        medium in 0u32..2,
    ) {
        let (sriov, types) = (sriov(8, &before), catalogue());
        let wanted = spec(&format!(
            "        A100-1-5C: {}\n        A100-2-10C: {}\n",
            small + 1,
            medium + 1
        ));
        let steps = plan_vgpu(&wanted, &card(true, &sriov, &types, &[])).unwrap();
        let held = after(&steps, &before, 8);
        let count = |id: u32| held.iter().filter(|&&t| t == id).count() as u32;
        proptest::prop_assert_eq!((count(474), count(475), count(468)), (small + 1, medium + 1, 0));
        let again = plan_vgpu(&wanted, &card(true, &sriov_of(&held), &types, &[])).unwrap();
        proptest::prop_assert_eq!(kinds(&again), ["instances"]);
    }
}

fn sriov_of(types: &[u32]) -> Sriov {
    sriov(8, types)
}

/// The catalogue with a second time-sliced type, A100-5C (469: OpenForBC's capture).
fn two_time_sliced() -> Vec<VgpuType> {
    let mut kinds = catalogue();
    let mut five = VgpuType::new(469);
    five.name = Lenient::Read("NVIDIA A100-5C".to_owned());
    five.gpu_instance_profile_id = Lenient::Read(None.into());
    five.max_instances = Lenient::Read(8);
    five.max_instances_per_gpu_instance = Lenient::Read(None.into());
    kinds.push(five);
    kinds
}

#[test]
fn two_time_sliced_types_without_heterogeneous_mode_are_refused_before_any_step() {
    let catalogue = two_time_sliced();
    let sriov = sriov(16, &[468, 468]);
    let refused = plan_vgpu(
        &spec("        A100-4C: 1\n        A100-5C: 1\n"),
        &card(false, &sriov, &catalogue, &[]),
    )
    .unwrap_err();
    let VgpuRefusal::TypesTogether { types, .. } = &refused else {
        panic!("{refused:?}");
    };
    let names: Vec<String> = types.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["A100-4C", "A100-5C"]);
    assert!(refused.to_string().contains("nvmlDeviceGetCreatableVgpus"));
}

#[test]
fn two_time_sliced_types_run_together_with_heterogeneous_mode_asked_or_kept_on() {
    let catalogue = two_time_sliced();
    let both = spec("        A100-4C: 1\n        A100-5C: 1\n");
    let sriov = sriov(16, &[468, 0]);
    let asked = plan_vgpu(
        &both.clone().with_heterogeneous(true),
        &card(false, &sriov, &catalogue, &[]),
    )
    .unwrap();
    assert_eq!(kinds(&asked), ["heterogeneous", "write 1 469"]);
    // The card's mode is on and the VFs stay: it stays on.
    let mut on = card(false, &sriov, &catalogue, &[]);
    on.heterogeneous = Some(true);
    assert_eq!(kinds(&plan_vgpu(&both, &on).unwrap()), ["write 1 469"]);
}

#[test]
fn a_restore_puts_each_type_on_its_declared_vf_and_clears_a_vf_that_holds_another() {
    use gpu_partition_types::VgpuTypeId;
    use layout_model::DeclaredVf;
    let catalogue = two_time_sliced();
    let id = |id| VgpuTypeId::new(id).unwrap();
    // VF 0 holds 469 and VF 1 468: the declaration puts 468 on VF 0 and 469 on VF 1.
    let sriov = sriov(16, &[469, 468, 0]);
    let declared = [
        DeclaredVf::new(0, id(468), "A100-4C"),
        DeclaredVf::new(1, id(469), "A100-5C"),
    ];
    let both = spec("        A100-4C: 1\n        A100-5C: 1\n").with_heterogeneous(true);
    let mut on = card(false, &sriov, &catalogue, &[]);
    on.heterogeneous = Some(true);
    let steps = mig_layout::vgpu::plan_vgpu_on_vfs(&both, &declared, &on).unwrap();
    assert_eq!(
        kinds(&steps),
        ["clear 0", "clear 1", "write 0 468", "write 1 469"]
    );
    // Each VF holding its declared type: nothing to do.
    let held = sriov_of(&[468, 469, 0]);
    let mut held_card = card(false, &held, &catalogue, &[]);
    held_card.heterogeneous = Some(true);
    assert_eq!(
        mig_layout::vgpu::plan_vgpu_on_vfs(&both, &declared, &held_card).unwrap(),
        []
    );
}
