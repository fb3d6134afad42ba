//! How a GPU's virtual functions compare with the vGPUs it is declared to hold: each kind of
//! drift with its facts, and nothing where the GPU declares no vGPU.

use gpu_partition_types::Bdf;
use layout_model::{Board, DeclaredGpu, DeclaredVgpu, DifferenceKind, Fact, VfsRead, Want};

fn gpu() -> Bdf {
    "0000:3b:00.0".parse().unwrap()
}

fn declared(vgpus: Vec<DeclaredVgpu>) -> DeclaredGpu {
    DeclaredGpu::new(&Want::disabled(), Board::default()).with_vgpus(vgpus)
}

fn four_10c() -> DeclaredGpu {
    declared(vec![DeclaredVgpu::new(471, "A100-10C", 4)])
}

fn kinds(gpu_declared: &DeclaredGpu, found: &VfsRead) -> Vec<DifferenceKind> {
    gpu_declared
        .vf_drift(gpu(), found)
        .iter()
        .map(|difference| difference.kind())
        .collect()
}

#[test]
fn vfs_holding_every_declared_type_in_its_count_do_not_drift() {
    let found = VfsRead::Read(vec![Some(471), Some(471), Some(471), Some(471), None, None]);
    assert!(four_10c().vf_drift(gpu(), &found).is_empty());
}

#[test]
fn no_vf_where_vgpus_are_declared_is_vfs_gone_naming_each_declared_type_none_found() {
    let drift = four_10c().vf_drift(gpu(), &VfsRead::Read(Vec::new()));
    assert_eq!(drift.len(), 2);
    assert_eq!(drift[0].fact, Fact::VfsGone { declared: 4 });
    assert_eq!(
        drift[1].fact,
        Fact::VgpuCount {
            type_id: 471,
            name: "A100-10C".into(),
            found: 0,
            wanted: 4,
        }
    );
    assert_eq!(
        drift[0].to_string(),
        "0000:3b:00.0 (vfs_gone): no virtual function is enabled; 4 vGPU(s) are declared on them"
    );
}

#[test]
fn a_type_gone_from_a_vf_is_its_count_found_and_wanted() {
    let found = VfsRead::Read(vec![Some(471), None, Some(471), Some(471)]);
    let drift = four_10c().vf_drift(gpu(), &found);
    assert_eq!(
        drift[0].fact,
        Fact::VgpuCount {
            type_id: 471,
            name: "A100-10C".into(),
            found: 3,
            wanted: 4,
        }
    );
}

#[test]
fn a_type_changed_on_a_vf_is_one_fewer_of_the_declared_and_one_undeclared() {
    let found = VfsRead::Read(vec![Some(471), Some(471), Some(471), Some(469)]);
    assert_eq!(
        kinds(&four_10c(), &found),
        vec![DifferenceKind::VgpuCount, DifferenceKind::VgpuExtra]
    );
}

#[test]
fn a_leave_declares_no_vgpu_and_a_type_left_on_a_vf_drifts() {
    let left = declared(Vec::new());
    assert!(left.vf_drift(gpu(), &VfsRead::Read(Vec::new())).is_empty());
    assert_eq!(
        kinds(&left, &VfsRead::Read(vec![None, Some(474)])),
        vec![DifferenceKind::VgpuExtra]
    );
}

#[test]
fn a_mig_layout_alone_says_nothing_of_the_vfs() {
    let mig_only = DeclaredGpu::new(&Want::disabled(), Board::default());
    assert!(
        mig_only
            .vf_drift(gpu(), &VfsRead::Read(vec![Some(474)]))
            .is_empty()
    );
}

#[test]
fn vfs_that_do_not_read_are_vfs_unreadable_with_why() {
    let drift = four_10c().vf_drift(
        gpu(),
        &VfsRead::Unreadable("sriov_numvfs: not a number".into()),
    );
    assert_eq!(
        drift[0].fact,
        Fact::VfsUnreadable {
            why: "sriov_numvfs: not a number".into()
        }
    );
}
