//! How a GPU's virtual functions compare with the vGPUs declared on them: per VF, each VF whose
//! type is not its declared one named with what it holds and what it should; a declaration of
//! an earlier schema, by count, compared by count.

use gpu_partition_types::{Bdf, VgpuTypeId};
use layout_model::{
    DeclaredVf, DeclaredVgpu, DifferenceKind, Fact, VfFound, VfsRead, VgpuDeclared,
};

fn gpu() -> Bdf {
    "0000:3b:00.0".parse().unwrap()
}

fn id(id: u32) -> VgpuTypeId {
    VgpuTypeId::new(id).unwrap()
}

/// VF 0 and VF 1 declared A100-10C (471) and A100-20C (472).
fn two_types() -> VgpuDeclared {
    VgpuDeclared::on(
        vec![
            DeclaredVf::new(0, id(471), "A100-10C"),
            DeclaredVf::new(1, id(472), "A100-20C"),
        ],
        true,
    )
}

/// The VFs found, each with its type (0: none).
fn found(types: &[u32]) -> VfsRead {
    VfsRead::Read(
        (0u32..)
            .zip(types)
            .map(|(index, type_id)| VfFound::new(index, VgpuTypeId::new(*type_id)))
            .collect(),
    )
}

fn kinds(declared: &VgpuDeclared, vfs: &VfsRead) -> Vec<DifferenceKind> {
    declared
        .drift(gpu(), vfs)
        .iter()
        .map(|difference| difference.kind())
        .collect()
}

#[test]
fn vfs_holding_their_declared_types_do_not_drift() {
    assert_eq!(two_types().drift(gpu(), &found(&[471, 472, 0, 0])), []);
}

#[test]
fn two_vfs_that_swap_types_are_two_differences_each_naming_its_vf_found_and_wanted() {
    let drift = two_types().drift(gpu(), &found(&[472, 471, 0, 0]));
    assert_eq!(
        drift.iter().map(|d| d.fact.clone()).collect::<Vec<_>>(),
        [
            Fact::VfType {
                index: 0,
                found: Some(id(472)),
                wanted: Some(DeclaredVf::new(0, id(471), "A100-10C")),
            },
            Fact::VfType {
                index: 1,
                found: Some(id(471)),
                wanted: Some(DeclaredVf::new(1, id(472), "A100-20C")),
            },
        ]
    );
    assert_eq!(
        drift[0].to_string(),
        "0000:3b:00.0 (vf_type): virtual function 0 holds vGPU type 472; the declaration puts \
         A100-10C (471) on it"
    );
    assert_eq!(drift[0].remedy(), layout_model::Remedy::Restore);
}

#[test]
fn no_vf_where_vgpus_are_declared_is_vfs_gone_then_each_declared_vf_found_empty() {
    let drift = two_types().drift(gpu(), &VfsRead::Read(Vec::new()));
    assert_eq!(drift[0].fact, Fact::VfsGone { declared: 2 });
    assert_eq!(
        kinds(&two_types(), &VfsRead::Read(Vec::new())),
        [
            DifferenceKind::VfsGone,
            DifferenceKind::VfType,
            DifferenceKind::VfType
        ]
    );
}

#[test]
fn a_vf_holding_a_type_where_none_is_declared_differs_naming_it() {
    let drift = two_types().drift(gpu(), &found(&[471, 472, 471, 0]));
    assert_eq!(
        drift.iter().map(|d| d.fact.clone()).collect::<Vec<_>>(),
        [Fact::VfType {
            index: 2,
            found: Some(id(471)),
            wanted: None,
        }]
    );
    assert_eq!(
        drift[0].message(),
        "virtual function 2 holds vGPU type 471; the declaration puts none on it"
    );
}

#[test]
fn a_leave_declares_the_vfs_off_and_a_type_left_on_a_vf_drifts() {
    let off = VgpuDeclared::Off;
    assert_eq!(off.drift(gpu(), &VfsRead::Read(Vec::new())), []);
    assert_eq!(
        kinds(&off, &found(&[0, 474])),
        [DifferenceKind::VfType],
        "VF 1 holds 474"
    );
}

#[test]
fn a_declaration_by_counts_of_an_earlier_schema_is_compared_by_counts() {
    let counted = VgpuDeclared::Counted {
        types: vec![DeclaredVgpu::new(id(471), "A100-10C", 4)],
        heterogeneous: false,
    };
    assert_eq!(counted.drift(gpu(), &found(&[471, 471, 471, 471])), []);
    // Which VF holds a type is not declared: two VFs swapping types is no difference.
    assert_eq!(
        kinds(&counted, &found(&[471, 471, 471, 469])),
        [DifferenceKind::VgpuCount, DifferenceKind::VgpuExtra]
    );
    assert_eq!(
        counted.drift(gpu(), &found(&[471, 0, 471, 471]))[0].fact,
        Fact::VgpuCount {
            type_id: id(471),
            name: "A100-10C".into(),
            found: 3,
            wanted: 4,
        }
    );
}

#[test]
fn vfs_that_do_not_read_are_vfs_unreadable_with_why() {
    let drift = two_types().drift(
        gpu(),
        &VfsRead::Unreadable("sriov_numvfs: not a number".into()),
    );
    assert_eq!(
        drift,
        [layout_model::Difference::new(
            gpu(),
            Fact::VfsUnreadable {
                why: "sriov_numvfs: not a number".into()
            }
        )]
    );
}

#[test]
fn an_embedder_asks_which_vfs_hold_their_declared_type() {
    let VfsRead::Read(vfs) = found(&[472, 472, 0, 474]) else {
        unreachable!("found reads")
    };
    // VF 1 holds its type, VF 2 its none; VF 0 holds another, VF 3 one where none is declared.
    assert_eq!(two_types().holding(&vfs), [1, 2]);
}

#[test]
fn a_declaration_per_vf_reads_back_as_it_was_written_and_no_type_id_is_0() {
    let text = serde_json::to_string(&two_types()).unwrap();
    assert_eq!(
        text,
        r#"{"vfs":"on","types":[{"index":0,"type_id":471,"name":"A100-10C"},{"index":1,"type_id":472,"name":"A100-20C"}],"heterogeneous":true}"#
    );
    assert_eq!(
        serde_json::from_str::<VgpuDeclared>(&text).unwrap(),
        two_types()
    );
    let zero = r#"{"vfs":"on","types":[{"index":0,"type_id":0,"name":"A100-10C"}]}"#;
    assert!(serde_json::from_str::<VgpuDeclared>(zero).is_err());
}
