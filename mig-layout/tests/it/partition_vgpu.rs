//! A MIG-backed vGPU as one partition, for its owner: made on the H100 of the vGPU bed (20
//! VFs) in the driver's order, kept by the boot restore at its placement with its owner, and
//! destroyed in the driver's order, the type cleared before its GPU instance.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::common::vgpu_bed::{Bed, H100, first, kinds, last};
use gpu_host_probe::vf::{VfTypeFile, VgpuTypes};
use gpu_partition_types::Bdf;
use layout_model::Owner;
use layout_model::partition::{Partition, Slot};
use mig_layout::partition::{
    CreatePartition, DestroyPartition, PartitionOutcome, PartitionRefusal, TakenBack, Which,
    create, destroy,
};
use mig_layout::vgpu::VgpuTypeName;
use mig_layout::{ApplyOutcome, ApplyReport, Document, Restore};
use std::collections::BTreeMap;

const MIG_ON: &str = "version: v1\nmig-configs:\n  mig-on:\n    - devices: [1]\n      mig-enabled: true\n      mig-devices: {}\n";

fn h100() -> Bdf {
    H100.parse().unwrap()
}

fn owner(name: &str) -> Owner {
    Owner::new(name).unwrap()
}

/// The bed with the H100's MIG on and nothing carved, its VFs disabled.
fn mig_on() -> Bed {
    let mut bed = Bed::new();
    let document = Document::from_text(MIG_ON).unwrap();
    let specs = document.label("mig-on").unwrap().to_vec();
    let report =
        bed.with_run(|run, options| mig_layout::apply(run, "mig-on", &specs, options).unwrap());
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    bed
}

fn made(outcome: PartitionOutcome) -> Partition {
    match outcome {
        PartitionOutcome::Ran { report, row, .. } => {
            assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
            row.expect("the created partition reads back")
        }
        PartitionOutcome::Refused(refused) => panic!("refused: {refused}"),
    }
}

fn vgpu(bed: &mut Bed, name: &str, vm: &str) -> PartitionOutcome {
    let name: VgpuTypeName = name.parse().unwrap();
    let request = CreatePartition::vgpu(h100(), name, owner(vm));
    bed.with_run(|run, options| create(run, &request, options).unwrap())
}

fn instance(bed: &mut Bed, profile: &str, vm: &str) -> PartitionOutcome {
    let request = CreatePartition::new(
        h100(),
        layout_model::ProfileKey::Name(profile.to_owned()),
        owner(vm),
    );
    bed.with_run(|run, options| create(run, &request, options).unwrap())
}

fn destroy_of(bed: &mut Bed, of: &str, by: &str) -> PartitionOutcome {
    let request = DestroyPartition::new(h100(), Which::OwnedBy(owner(of)), Some(owner(by)));
    bed.with_run(|run, options| destroy(run, &request, options).unwrap())
}

/// The H100's rows as the store keeps them: the VF of a vGPU (a GPU instance's ID is the
/// driver's to give), placement, ordinal, whether it sits on an instance, owner.
fn rows(bed: &mut Bed) -> Vec<String> {
    use host_sync::StateStore;
    let state = bed.store.load().unwrap().unwrap();
    state.gpus[&h100()]
        .division
        .as_ref()
        .unwrap()
        .partitions
        .iter()
        .map(|row| {
            let on = row.on.map(|_| "on an instance").unwrap_or_default();
            let slot = match row.slot {
                Slot::GpuInstance { .. } => "GI".to_owned(),
                other => other.to_string(),
            };
            format!(
                "{slot} {} {:?} #{} {on} {:?}",
                row.profile, row.placement, row.ordinal, row.owner
            )
        })
        .collect()
}

#[test]
fn a_vgpu_partition_enables_the_vfs_of_an_empty_card_then_makes_its_instance_then_writes_its_type()
{
    let mut bed = mig_on();
    let before = bed.writes().len();
    let row = made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    assert_eq!(row.slot, Slot::Vf { index: 0 });
    assert_eq!(row.owner, Some(owner("vm-a")));
    assert!(row.on.is_some(), "{row:?}");
    let writes = bed.writes().split_off(before);
    assert!(first(&writes, "sriov-manage -e") < first(&writes, "nvmlDeviceCreateGpuInstance"));
    assert!(
        first(&writes, "nvmlDeviceCreateGpuInstance") < first(&writes, "current_vgpu_type"),
        "{writes:#?}"
    );
    assert_eq!(bed.types_on(H100), vec![900001]);
}

#[test]
fn a_second_vgpu_partition_writes_one_instance_and_one_type_and_takes_the_next_vf() {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    let before = bed.writes().len();
    let row = made(vgpu(&mut bed, "H100XM-2-20C", "vm-b"));
    assert_eq!(row.slot, Slot::Vf { index: 1 });
    assert_eq!(row.owner, Some(owner("vm-b")));
    let writes = bed.writes().split_off(before);
    assert_eq!(
        kinds(&writes),
        [
            "nvmlDeviceCreateGpuInstanceWithPlacement",
            "nvmlGpuInstanceCreateComputeInstance",
            "current_vgpu_type"
        ],
        "{writes:#?}"
    );
}

/// The driver's side of a VF's type write on a card that cannot create the type now: every
/// type refused with `EIO` (the fake's driver answers so, `FakeVgpuTypes`), a clear carried.
struct RefusingTypes(fake_nvml::support::FakeVgpuTypes);

impl VgpuTypes for RefusingTypes {
    fn write(
        &self,
        sysfs_root: &std::path::Path,
        file: VfTypeFile,
        id: Option<gpu_partition_types::VgpuTypeId>,
    ) -> std::io::Result<()> {
        const EIO: i32 = 5;
        match id {
            Some(_) => Err(std::io::Error::from_raw_os_error(EIO)),
            None => self.0.write(sysfs_root, file, id),
        }
    }
}

/// A vGPU create of `name` for `vm` on `bed` whose type write the driver refuses: checked to
/// end `failed` with no row, the writes since then, and the report of the run that took its
/// GPU instance back.
fn refused_type_write(bed: &mut Bed, name: &str, vm: &str) -> (Vec<String>, Box<ApplyReport>) {
    let before = bed.writes().len();
    let refusing = RefusingTypes(bed.fake.types.clone());
    let name: VgpuTypeName = name.parse().unwrap();
    let request = CreatePartition::vgpu(h100(), name, owner(vm));
    let outcome = bed.with_types(&refusing, |run, options| {
        create(run, &request, options).unwrap()
    });
    let PartitionOutcome::Ran {
        report,
        row,
        undone,
        ..
    } = outcome
    else {
        panic!("refused: {outcome:?}");
    };
    assert!(
        matches!(report.outcome, ApplyOutcome::Failed(_)),
        "{report:#?}"
    );
    assert_eq!(row, None);
    let Some(TakenBack::Ran(undone)) = undone else {
        panic!("the GPU instance the create made is not taken back: {undone:?}");
    };
    (bed.writes().split_off(before), undone)
}

/// What `bed`'s store declares: its label, when, its generation and its GPUs (not the last
/// check of the cards against it, which every sync renews).
fn declared(bed: &mut Bed) -> Option<(String, u64, u64, BTreeMap<Bdf, layout_model::DeclaredGpu>)> {
    use host_sync::StateStore;
    let declared = bed.store.load().unwrap()?.declared?;
    Some((
        declared.label,
        declared.declared_at,
        declared.generation,
        declared.gpus,
    ))
}

#[test]
fn a_vgpu_create_whose_type_write_the_driver_refuses_takes_its_gpu_instance_back_and_keeps_the_declaration()
 {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    let rows_before = rows(&mut bed);
    let declared_before = declared(&mut bed);
    let (writes, undone) = refused_type_write(&mut bed, "H100XM-2-20C", "vm-b");
    assert_eq!(undone.outcome, ApplyOutcome::Done, "{undone:#?}");
    assert_eq!(
        kinds(&writes),
        [
            "nvmlDeviceCreateGpuInstanceWithPlacement",
            "nvmlGpuInstanceCreateComputeInstance",
            "nvmlComputeInstanceDestroy",
            "nvmlGpuInstanceDestroy",
        ],
        "{writes:#?}"
    );
    assert_eq!(rows(&mut bed), rows_before);
    assert_eq!(bed.types_on(H100), vec![900001]);
    assert_eq!(
        declared(&mut bed),
        declared_before,
        "the declaration stands as it was"
    );
}

#[test]
fn a_failed_first_vgpu_create_on_a_gpu_nothing_declared_leaves_it_undeclared() {
    let mut bed = Bed::with(|scenario| {
        scenario["devices"][1]["mig_mode"] = serde_json::json!({"current": 1, "pending": 1});
    });
    assert_eq!(declared(&mut bed), None);
    let (writes, undone) = refused_type_write(&mut bed, "H100XM-1-10C", "vm-a");
    assert_eq!(undone.outcome, ApplyOutcome::Done, "{undone:#?}");
    assert_eq!(
        first(&writes, "nvmlGpuInstanceDestroy"),
        writes.len() - 1,
        "{writes:#?}"
    );
    assert_eq!(
        declared(&mut bed),
        None,
        "nothing is declared by taking the instance back"
    );
}

/// The kind of the refusal `outcome` is, after checking it is one and that nothing was written
/// since `before` writes.
fn refused(bed: &Bed, outcome: PartitionOutcome, before: usize) -> PartitionRefusal {
    assert_eq!(bed.writes().len(), before, "a write before the refusal");
    match outcome {
        PartitionOutcome::Refused(refused) => refused,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn a_vgpu_whose_profile_has_an_instance_on_the_card_already_is_refused_before_any_write() {
    let mut bed = mig_on();
    // The VFs enabled by a first vGPU partition (of another profile); then vm-c's plain
    // 1g.10gb GPU instance, which could take a 1-10C: the driver could put one there, now or
    // when a restore makes both instances again.
    made(vgpu(&mut bed, "H100XM-2-20C", "vm-a"));
    made(instance(&mut bed, "1g.10gb", "vm-c"));
    let before = bed.writes().len();
    let outcome = vgpu(&mut bed, "H100XM-1-10C", "vm-d");
    let refusal = refused(&bed, outcome, before);
    assert!(
        matches!(refusal, PartitionRefusal::LandsElsewhere { device, .. } if device == h100()),
        "{refusal:?}"
    );
}

#[test]
fn a_gpu_instance_of_a_vgpu_partitions_profile_is_refused_before_any_write() {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    let before = bed.writes().len();
    let outcome = instance(&mut bed, "1g.10gb", "vm-c");
    let refusal = refused(&bed, outcome, before);
    assert_eq!(
        refusal.kind().to_string(),
        "profile_holds_vgpu",
        "{refusal}"
    );
}

#[test]
fn a_vgpu_nobody_declared_on_the_card_refuses_a_vgpu_partition_that_would_clear_it() {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-2-20C", "vm-a"));
    // The declaration forgets its vGPUs (a MIG layout applied over the host declares none).
    {
        use host_sync::StateStore;
        let mut state = bed.store.load().unwrap().unwrap();
        let declared = state.declared.as_mut().unwrap();
        let gpu = declared.gpus.get_mut(&h100()).unwrap();
        let layout_model::DeclaredGpu::Nvidia(nvidia) = gpu else {
            panic!("not NVIDIA");
        };
        nvidia.vgpu = None;
        bed.store.save(&state).unwrap();
    }
    let before = bed.writes().len();
    let outcome = vgpu(&mut bed, "H100XM-1-10C", "vm-b");
    let refusal = refused(&bed, outcome, before);
    assert_eq!(refusal.kind().to_string(), "card_differs", "{refusal}");
    assert_eq!(bed.types_on(H100), vec![900004], "vm-a's vGPU is kept");
}

#[test]
fn a_type_the_catalogue_does_not_list_and_vfs_disabled_under_instances_are_refused() {
    let mut bed = mig_on();
    let before = bed.writes().len();
    let outcome = vgpu(&mut bed, "H100XM-5-50C", "vm-a");
    assert_eq!(
        refused(&bed, outcome, before).kind().to_string(),
        "no_vgpu_type"
    );
    // A GPU instance on the card, its VFs disabled: enabling them would wipe it.
    made(instance(&mut bed, "3g.40gb", "vm-c"));
    let before = bed.writes().len();
    let outcome = vgpu(&mut bed, "H100XM-1-10C", "vm-a");
    assert_eq!(
        refused(&bed, outcome, before).kind().to_string(),
        "vfs_disabled"
    );
}

#[test]
fn a_vgpu_on_a_gpu_without_sr_iov_is_refused_as_such_before_any_write() {
    let mut bed = mig_on();
    made(instance(&mut bed, "3g.40gb", "vm-c"));
    let function = bed.host.sysfs_root().join("bus/pci/devices").join(H100);
    std::fs::remove_file(function.join("sriov_totalvfs")).unwrap();
    std::fs::remove_file(function.join("sriov_numvfs")).unwrap();
    let before = bed.writes().len();
    let outcome = vgpu(&mut bed, "H100XM-1-10C", "vm-a");
    let refusal = refused(&bed, outcome, before);
    assert!(
        matches!(refusal, PartitionRefusal::NoSriov { device } if device == h100()),
        "{refusal:?}"
    );
    assert_eq!(refusal.kind().to_string(), "no_sriov");
}

#[test]
fn a_destroy_beside_a_vgpu_whose_gpu_instance_did_not_read_is_refused_before_any_write() {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    let vf = bed
        .host
        .sysfs_root()
        .join("bus/pci/devices")
        .join(H100)
        .join("virtfn0");
    std::fs::remove_file(vf.join("nvidia/gpu_instance_id")).unwrap();
    let before = bed.writes().len();
    // Its own instance: taken as holding no vGPU, its compute instance would go, then NVML
    // would refuse the GPU instance under the vGPU.
    let outcome = destroy_of(&mut bed, "vm-a", "vm-a");
    let refusal = refused(&bed, outcome, before);
    assert_eq!(refusal.kind().to_string(), "gpu_unreadable", "{refusal}");
    assert!(
        refusal.to_string().contains("virtual function 0"),
        "{refusal}"
    );
}

#[test]
fn a_time_sliced_type_is_no_partition() {
    let mut bed = mig_on();
    match vgpu(&mut bed, "H100XM-4C", "vm-a") {
        PartitionOutcome::Refused(refused) => {
            assert_eq!(refused.kind().to_string(), "time_sliced", "{refused}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_boot_restore_brings_each_vgpu_partition_back_at_its_placement_with_its_owner() {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    made(vgpu(&mut bed, "H100XM-2-20C", "vm-b"));
    made(instance(&mut bed, "3g.40gb", "vm-c"));
    let before = rows(&mut bed);
    bed.reboot();
    let restored = bed.restore();
    let Restore::Ran(report) = restored else {
        panic!("{restored:?}");
    };
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    assert_eq!(rows(&mut bed), before);
}

#[test]
fn a_vgpu_partition_is_destroyed_by_its_owner_alone_its_type_cleared_before_its_instance() {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    made(vgpu(&mut bed, "H100XM-2-20C", "vm-b"));
    match destroy_of(&mut bed, "vm-a", "vm-b") {
        PartitionOutcome::Refused(PartitionRefusal::InUse { owner: held, .. }) => {
            assert_eq!(held, owner("vm-a"));
        }
        other => panic!("{other:?}"),
    }
    let before = bed.writes().len();
    let PartitionOutcome::Ran { report, .. } = destroy_of(&mut bed, "vm-a", "vm-a") else {
        panic!("refused");
    };
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    let writes = bed.writes().split_off(before);
    // The driver's order: the type cleared, then the compute instance, then the GPU instance.
    assert!(
        first(&writes, "current_vgpu_type") < first(&writes, "nvmlComputeInstanceDestroy"),
        "{writes:#?}"
    );
    assert!(
        last(&writes, "nvmlComputeInstanceDestroy") < first(&writes, "nvmlGpuInstanceDestroy"),
        "{writes:#?}"
    );
    assert!(
        !writes.iter().any(|line| line.starts_with("sriov-manage")),
        "{writes:#?}"
    );
    // vm-b's vGPU stays on its VF.
    assert_eq!(bed.types_on(H100), vec![900004]);
}

#[test]
fn the_last_vgpu_partition_destroyed_leaves_mig_on_and_the_vfs_enabled() {
    let mut bed = mig_on();
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    let PartitionOutcome::Ran { report, .. } = destroy_of(&mut bed, "vm-a", "vm-a") else {
        panic!("refused");
    };
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    let card = bed.card(H100);
    assert!(card.gpu_instances.is_empty());
    let sriov = host_sync::sriov::read_sriov(bed.host.sysfs_root(), h100())
        .unwrap()
        .unwrap();
    assert_eq!(sriov.vfs.len(), 20);
    assert!(bed.types_on(H100).is_empty());
    assert!(
        !bed.writes()
            .iter()
            .any(|line| line.trim_end() == "nvmlDeviceSetMigMode 0"),
        "{:#?}",
        bed.writes()
    );
}

#[test]
fn vfs_declared_but_found_disabled_under_an_adopted_instance_refuse_a_partition_that_would_enable_them()
 {
    // MIG on, instances nobody names adopted (as a GPU first declared through partitions is).
    let mut bed = Bed::new();
    let document = Document::from_text(MIG_ON).unwrap();
    let specs = document.label("mig-on").unwrap().to_vec();
    let report = bed.with_run(|run, options| {
        let adopting = options.clone().unnamed(mig_layout::Unnamed::Adopt);
        mig_layout::apply(run, "mig-on", &specs, &adopting).unwrap()
    });
    assert_eq!(report.outcome, ApplyOutcome::Done, "{report:#?}");
    // A vGPU partition made and destroyed: the GPU stays declared with its VFs enabled.
    made(vgpu(&mut bed, "H100XM-1-10C", "vm-a"));
    let PartitionOutcome::Ran { .. } = destroy_of(&mut bed, "vm-a", "vm-a") else {
        panic!("refused");
    };
    // Then, by hand, the VFs disabled and a 1g.10gb made, as `nvidia-smi mig -cgi` does.
    let disabled = std::process::Command::new(&bed.fake.sriov_manage)
        .args(["-d", H100])
        .status()
        .unwrap();
    assert!(disabled.success());
    bed.fake
        .state
        .change(|scenario| {
            let instance: fake_nvml::GpuInstance = serde_json::from_value(serde_json::json!({
                "id": 9, "profile_id": 19, "placement": {"start": 0, "size": 1},
                "compute_instances": [{"id": 0, "profile_id": 0, "placement": {"start": 0, "size": 1}}],
            }))
            .unwrap();
            scenario
                .device_at_mut(H100)
                .unwrap()
                .gpu_instances
                .push(instance);
            Ok::<(), ()>(())
        })
        .unwrap();
    // Making the declared VFs again (`sriov-manage -e`) would wipe that instance.
    let before = bed.writes().len();
    let outcome = instance(&mut bed, "3g.40gb", "vm-c");
    let refusal = refused(&bed, outcome, before);
    assert_eq!(refusal.kind().to_string(), "card_differs", "{refusal}");
    assert_eq!(
        bed.card(H100).gpu_instances.len(),
        1,
        "the instance is kept"
    );
}
