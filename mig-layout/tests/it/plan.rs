//! The planner's rules, table by table, over the A100 and H100 catalogues the real helper
//! printed (through the fake NVML's scenarios), and the published layout files planned on them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{carry_out, document, reply};
use gpu_host_probe::PciIdentity;
use gpu_partition_types::{Placement, Step};
use layout_model::{ProfileKey, Want, differences};
use mig_layout::plan;
use mig_layout::{HostGpu, ImpossibleKind, select};

fn want(pairs: &[(&str, u32)]) -> Want {
    Want::enabled(
        pairs
            .iter()
            .map(|(name, count)| (ProfileKey::Name((*name).to_owned()), *count))
            .collect(),
    )
}

fn at(start: u32, size: u32) -> Placement {
    Placement::new(start, size)
}

fn placements(plan: &mig_layout::CardPlan) -> Vec<(String, u32, u32)> {
    plan.create
        .iter()
        .map(|c| (c.profile.clone(), c.placement.start, c.placement.size))
        .collect()
}

#[test]
fn mig_off_to_seven_1g_5gb_sets_the_mode_then_creates_seven_at_slices_0_to_6() {
    let plan = plan(&reply("a100-mig-off"), &want(&[("1g.5gb", 7)])).unwrap();
    assert_eq!(plan.set_mode, Some(true));
    assert!(plan.destroy.is_empty() && !plan.reset);
    let starts: Vec<u32> = plan.create.iter().map(|c| c.placement.start).collect();
    assert_eq!(starts, [0, 1, 2, 3, 4, 5, 6]);
    assert!(
        plan.create
            .iter()
            .all(|c| c.profile_id == 19 && c.compute_profile_id == 0)
    );
    // The mode is set first, then the creates: the first batch holds only the mode.
    assert_eq!(plan.first_batch(), vec![Step::SetMigMode { enabled: true }]);
}

#[test]
fn a_card_already_as_wanted_gets_no_step() {
    let card = reply("a100-mig-off");
    let wanted = want(&[("1g.5gb", 2), ("2g.10gb", 1), ("3g.20gb", 1)]);
    let applied = carry_out(&card, &plan(&card, &wanted).unwrap());
    let again = plan(&applied, &wanted).unwrap();
    assert!(again.is_empty(), "{again:?}");
    assert!(differences(&applied, &wanted).is_empty());
}

#[test]
fn one_gpu_instance_changed_among_several_destroys_and_creates_only_it() {
    // The carved A100: a 3g.20gb at 0 and a 2g.10gb at 4, each with its compute instance.
    let card = reply("a100-mig-on-carved");
    let plan = plan(&card, &want(&[("3g.20gb", 1), ("1g.10gb", 1)])).unwrap();
    assert_eq!(
        plan.destroy,
        vec![
            Step::DestroyComputeInstance {
                gpu_instance_id: 2,
                compute_instance_id: 0
            },
            Step::DestroyGpuInstance { gpu_instance_id: 2 }
        ]
    );
    assert_eq!(plan.kept, [1]);
    assert_eq!(placements(&plan), [("1g.10gb".to_owned(), 4, 2)]);
    assert_eq!(plan.set_mode, None);
}

#[test]
fn the_planner_undoes_a_first_choice_that_leaves_no_room() {
    // 4g.20gb takes 0..3 only; 2g.10gb could go at 0, 2 or 4: it must go at 4.
    let plan = plan(
        &reply("a100-mig-on-none-carved"),
        &want(&[("2g.10gb", 1), ("4g.20gb", 1)]),
    )
    .unwrap();
    let mut placed = placements(&plan);
    placed.sort();
    assert_eq!(
        placed,
        [("2g.10gb".to_owned(), 4, 2), ("4g.20gb".to_owned(), 0, 4)]
    );
}

#[test]
fn placements_are_the_same_for_the_same_card_and_layout() {
    let card = reply("h100-mig-off");
    let wanted = want(&[("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)]);
    let first = plan(&card, &wanted).unwrap();
    for _ in 0..10 {
        assert_eq!(plan(&card, &wanted).unwrap(), first);
    }
    assert_eq!(
        placements(&first),
        [
            ("1g.10gb".to_owned(), 0, 1),
            ("1g.10gb".to_owned(), 1, 1),
            ("2g.20gb".to_owned(), 2, 2),
            ("3g.40gb".to_owned(), 4, 4),
        ]
    );
    // Every instance lies on one of its profile's placements, none overlapping.
    let mut used = 0u32;
    for create in &first.create {
        let mask = ((1u32 << create.placement.size) - 1) << create.placement.start;
        assert_eq!(used & mask, 0, "{:?}", first.create);
        used |= mask;
    }
}

#[test]
fn too_many_instances_are_refused_naming_the_gpu_and_profile() {
    let refused = plan(&reply("a100-mig-off"), &want(&[("1g.5gb", 8)])).unwrap_err();
    assert_eq!(refused.kind, ImpossibleKind::TooMany);
    assert_eq!(refused.profile.as_deref(), Some("1g.5gb"));
    assert_eq!(
        refused.message,
        "0000:3b:00.0: 8 × 1g.5gb asked, and the card holds at most 7"
    );
}

#[test]
fn instances_that_fit_no_placement_together_are_refused() {
    let refused = plan(
        &reply("a100-mig-off"),
        &want(&[("3g.20gb", 2), ("1g.5gb", 1)]),
    )
    .unwrap_err();
    assert_eq!(refused.kind, ImpossibleKind::NoFit);
    assert!(
        refused.message.starts_with("0000:3b:00.0: "),
        "{}",
        refused.message
    );
    assert!(
        refused.message.contains("2 × 3g.20gb"),
        "{}",
        refused.message
    );
}

#[test]
fn a_profile_the_card_does_not_have_is_refused_with_the_cards_own_names() {
    // An H100's name on an A100: names drift between boards, and are never guessed across.
    let refused = plan(
        &reply("a100-mig-off"),
        &want(&[("1g.10gb", 1), ("3g.40gb", 1)]),
    )
    .unwrap_err();
    assert_eq!(refused.kind, ImpossibleKind::UnknownProfile);
    assert_eq!(refused.profile.as_deref(), Some("3g.40gb"));
    assert!(
        refused.message.contains("1g.5gb, 2g.10gb"),
        "{}",
        refused.message
    );
}

#[test]
fn a_profile_named_by_id_is_the_same_as_by_name_and_twice_is_refused() {
    let by_id = Want::enabled(vec![(ProfileKey::Id(19), 3)]);
    let by_name = want(&[("1g.5gb", 3)]);
    let card = reply("a100-mig-off");
    assert_eq!(plan(&card, &by_id).unwrap(), plan(&card, &by_name).unwrap());
    let twice = Want::enabled(vec![
        (ProfileKey::Id(19), 1),
        (ProfileKey::Name("1g.5gb".into()), 1),
    ]);
    assert_eq!(
        plan(&card, &twice).unwrap_err().kind,
        ImpossibleKind::NamedTwice
    );
}

#[test]
fn leaving_destroys_compute_instances_before_their_gpu_instances_then_turns_mig_off() {
    let plan = plan(&reply("a100-mig-on-carved"), &Want::disabled()).unwrap();
    let ops: Vec<String> = plan
        .first_batch()
        .iter()
        .map(|s| s.op().to_string())
        .collect();
    assert_eq!(
        ops,
        [
            "destroy_compute_instance",
            "destroy_compute_instance",
            "destroy_gpu_instance",
            "destroy_gpu_instance",
            "set_mig_mode"
        ]
    );
    assert!(plan.create.is_empty());
}

#[test]
fn a_mode_change_already_pending_plans_a_reset_and_no_second_set() {
    let mut card = reply("a100-mig-off");
    card.mode.pending =
        gpu_partition_types::Nullable::Value(gpu_partition_types::MigState::Enabled);
    let plan = plan(&card, &want(&[("7g.40gb", 1)])).unwrap();
    assert!(plan.reset);
    assert_eq!(plan.set_mode, None);
    assert_eq!(placements(&plan), [("7g.40gb".to_owned(), 0, 8)]);
}

#[test]
fn mig_on_with_no_instance_wanted_on_a_card_already_on_is_no_step() {
    let plan = plan(
        &reply("a100-mig-on-none-carved"),
        &Want::enabled(Vec::new()),
    )
    .unwrap();
    assert!(plan.is_empty());
}

#[test]
fn a_kept_instance_without_its_compute_instance_gets_one_and_is_not_destroyed() {
    let mut card = reply("a100-mig-on-carved");
    if let gpu_partition_types::Lenient::Read(list) = &mut card.gpu_instances {
        if let Some(gpu_partition_types::Lenient::Read(gi)) = list.first_mut() {
            gi.compute_instances = gpu_partition_types::Lenient::Read(Vec::new());
        }
    }
    let plan = plan(&card, &want(&[("3g.20gb", 1), ("2g.10gb", 1)])).unwrap();
    assert!(plan.destroy.is_empty(), "{:?}", plan.destroy);
    assert_eq!(plan.fill.len(), 1);
    assert_eq!(plan.fill[0].gpu_instance_id, 1);
    assert_eq!(plan.fill[0].compute_profile_id, 2);
}

fn a100(index: u32) -> HostGpu {
    HostGpu::new(
        index,
        format!("0000:{:02x}:00.0", 0x3b + index).parse().unwrap(),
        PciIdentity::new(0x10de, 0x20b0, 0x030200),
    )
}

fn h100(index: u32) -> HostGpu {
    HostGpu::new(
        index,
        format!("0000:{:02x}:00.0", 0x3b + index).parse().unwrap(),
        PciIdentity::new(0x10de, 0x2330, 0x030200),
    )
}

/// Every label of a document selected on `gpus` and planned on `card`: the plans, or why not.
fn plan_all(file: &str, gpus: &[HostGpu], card: &str) -> Vec<String> {
    let doc = document(file);
    let mut lines = Vec::new();
    for label in doc.labels() {
        let selection = select(doc.label(label).unwrap(), gpus).unwrap();
        for wanted in selection.wanted {
            let mut card = reply(card);
            card.device = wanted.gpu.bdf;
            let line = match plan(&card, &wanted.want) {
                Ok(plan) => {
                    let applied = carry_out(&card, &plan);
                    assert!(differences(&applied, &wanted.want).is_empty(), "{label}");
                    format!(
                        "{label} GPU {}: {} create(s){}",
                        wanted.gpu.index,
                        plan.create.len(),
                        if plan.set_mode.is_some() {
                            ", mode set"
                        } else {
                            ""
                        }
                    )
                }
                Err(impossible) => format!(
                    "{label} GPU {}: refused ({}) {}",
                    wanted.gpu.index, impossible.kind, impossible.message
                ),
            };
            lines.push(line);
        }
    }
    lines
}

#[test]
fn the_readme_examples_plan_on_an_a100_host_of_eight() {
    let gpus: Vec<HostGpu> = (0..8).map(a100).collect();
    insta::assert_snapshot!(
        plan_all("mig-parted-examples-config.yaml", &gpus, "a100-mig-off").join("\n")
    );
}

#[test]
fn the_readme_examples_on_an_h100_are_refused_for_the_a100_names_and_all_enabled_plans() {
    let gpus: Vec<HostGpu> = (0..2).map(h100).collect();
    insta::assert_snapshot!(
        plan_all("mig-parted-examples-config.yaml", &gpus, "h100-mig-off").join("\n")
    );
}

#[test]
fn the_operators_h100_entries_select_by_device_id_and_plan_on_an_h100() {
    let gpus: Vec<HostGpu> = (0..2).map(h100).collect();
    insta::assert_snapshot!(
        plan_all("gpu-operator-h100-excerpt.yaml", &gpus, "h100-mig-off").join("\n")
    );
}

#[test]
fn the_operators_default_config_selects_an_a100_by_its_filter() {
    let gpus = [a100(0)];
    insta::assert_snapshot!(
        plan_all(
            "gpu-operator-default-mig-parted-config.yaml",
            &gpus,
            "a100-mig-off"
        )
        .join("\n")
    );
}

#[test]
fn two_entries_naming_one_gpu_are_refused_with_both_lines() {
    let doc = mig_layout::Document::from_text(
        "version: v1\nmig-configs:\n  l:\n    - devices: all\n      mig-enabled: false\n    - devices: [1]\n      mig-enabled: false\n",
    )
    .unwrap();
    let error = select(doc.label("l").unwrap(), &[a100(0), a100(1)]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "GPU 1 (0000:3c:00.0) is named by two entries, at lines 4 and 6; each GPU may be named once"
    );
}

#[test]
fn an_index_the_host_does_not_have_names_nothing_and_is_said() {
    let doc = document("mig-parted-examples-config.yaml");
    let selection = select(doc.label("custom-config").unwrap(), &[a100(0), a100(1)]).unwrap();
    assert_eq!(selection.wanted.len(), 2);
    assert!(selection.wanted.iter().all(|w| !w.want.enabled));
    assert_eq!(selection.absent.len(), 6, "{:?}", selection.absent);
    assert_eq!(selection.absent[0].device, mig_layout::DeviceRef::Index(2));
    assert!(
        selection.absent[0].to_string().contains("GPU 2"),
        "{:?}",
        selection.absent
    );
}

#[test]
fn a_gpu_instance_is_placed_where_the_card_says_it_may() {
    let plan = plan(&reply("a100-mig-off"), &want(&[("1g.10gb", 4)])).unwrap();
    let starts: Vec<Placement> = plan.create.iter().map(|c| c.placement).collect();
    assert_eq!(starts, [at(0, 2), at(2, 2), at(4, 2), at(6, 2)]);
}

#[test]
fn a_filter_naming_a_subsystem_selects_only_the_gpu_whose_sysfs_subsystem_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = host_sync::fake_sysfs::FakeSysfs::new(dir.path()).unwrap();
    for (bdf, subsystem) in [("0000:3b:00.0", "0x1795"), ("0000:3c:00.0", "0x16c1")] {
        sysfs.nvidia(bdf, Some("nvidia")).unwrap();
        let device = sysfs.device_dir(bdf);
        std::fs::write(device.join("subsystem_vendor"), "0x10de\n").unwrap();
        std::fs::write(device.join("subsystem_device"), format!("{subsystem}\n")).unwrap();
    }
    let gpus = mig_layout::host_gpus(sysfs.root()).unwrap();
    let doc = mig_layout::Document::from_text(
        "version: v1\nmig-configs:\n  l:\n    - devices: all\n      device-filter: \"0x233510DE:0x16C110DE\"\n      mig-enabled: false\n",
    )
    .unwrap();
    let selection = select(doc.label("l").unwrap(), &gpus).unwrap();
    let chosen: Vec<String> = selection
        .wanted
        .iter()
        .map(|wanted| wanted.gpu.bdf.to_string())
        .collect();
    assert_eq!(chosen, ["0000:3c:00.0"]);
}

#[test]
fn an_instance_the_want_removes_is_destroyed_while_the_others_it_does_not_name_are_adopted() {
    use layout_model::{Placed, Unnamed};
    // The carved A100: a 3g.20gb at 0 (GPU instance 1) and a 2g.10gb at 4 (GPU instance 2).
    let card = reply("a100-mig-on-carved");
    let kept = Want::enabled(vec![(ProfileKey::Id(9), 1)])
        .placed(vec![Placed::new(9, at(0, 4))])
        .unnamed(Unnamed::Adopt);
    let adopting = plan(&card, &kept).unwrap();
    assert!(adopting.destroy.is_empty(), "{adopting:?}");
    assert_eq!(adopting.adopted, [2]);
    let removing = plan(&card, &kept.removing(vec![Placed::new(14, at(4, 2))])).unwrap();
    assert_eq!(
        removing.destroy,
        vec![
            Step::DestroyComputeInstance {
                gpu_instance_id: 2,
                compute_instance_id: 0
            },
            Step::DestroyGpuInstance { gpu_instance_id: 2 }
        ]
    );
    assert_eq!(
        (removing.kept.as_slice(), removing.adopted.as_slice()),
        (&[1][..], &[][..])
    );
    assert!(removing.create.is_empty());
}
