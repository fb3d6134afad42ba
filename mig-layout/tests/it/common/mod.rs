//! Test support: the fixture replies (what the real helper printed over the fake NVML's A100
//! and H100 scenarios), the fixture layout files, and a model of the driver that carries out a
//! plan on a reply (every write at once, as a card whose mode changes without a reset).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::{
    Case, ComputeInstance, GpuInstance, Lenient, MigState, Nullable, Placement, Reply, Step,
};
use layout_model::Card;
use mig_layout::{CardPlan, Document};
use std::path::PathBuf;

pub mod amd_bed;
pub mod bed;
pub mod vgpu_bed;

/// The host of a test bed in `dir`: its state and locks there, booted (`proc/`) with the bed's
/// one boot ID, its sysfs at `sysfs_root`.
pub fn booted_host(dir: &std::path::Path, sysfs_root: &std::path::Path) -> host_sync::Host {
    let proc_root = fake_nvml::support::ProcRoot::booted(
        dir.join("proc"),
        "11111111-2222-3333-4444-555555555555",
    )
    .unwrap();
    host_sync::Host::new(dir.join("state"))
        .with_sysfs_root(sysfs_root)
        .with_proc_root(proc_root.path())
        .with_lock_dir(dir.join("locks"))
}

/// A sync of a bed's host with the pool on.
pub fn sync_enabled(
    host: &host_sync::Host,
    helper: &gpu_host_probe::helper::Helper,
    store: &mut host_sync::MemoryStore,
    after_boot: host_sync::AfterBoot,
) -> host_sync::SyncReport {
    host_sync::sync(
        host,
        helper,
        store,
        &host_sync::SyncOptions::new(host_sync::Pool::Enabled, after_boot),
    )
    .unwrap()
}

/// The lines of the call log at `path` (empty when there is none yet) that `keep` keeps.
pub fn logged(path: &std::path::Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| keep(line))
        .map(str::to_owned)
        .collect()
}

/// Asserts that `report` ended as `outcome`, showing its detail when it did not.
#[track_caller]
pub fn assert_outcome(report: &mig_layout::ApplyReport, outcome: mig_layout::ApplyOutcome) {
    assert_eq!(report.outcome, outcome, "{:?}", report.detail);
}

/// Asserts that the detail of `report` says `text`.
#[track_caller]
pub fn assert_detail_says(report: &mig_layout::ApplyReport, text: &str) {
    assert!(
        report.detail.as_deref().unwrap_or_default().contains(text),
        "{:?}",
        report.detail
    );
}

pub fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

/// A fixture reply: `a100-mig-off`, `a100-mig-on-none-carved`, `a100-mig-on-carved`,
/// `h100-mig-off`.
pub fn reply(name: &str) -> Reply {
    let text = std::fs::read(data(&format!("replies/{name}.json"))).unwrap();
    Reply::from_json(&text, None).unwrap()
}

/// A fixture layout document of `tests/data/mig-parted/`.
pub fn document(name: &str) -> Document {
    let text = std::fs::read_to_string(data(&format!("mig-parted/{name}"))).unwrap();
    Document::from_text(&text).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn instances(reply: &mut Reply) -> &mut Vec<Lenient<GpuInstance>> {
    match &mut reply.gpu_instances {
        Lenient::Read(list) => list,
        Lenient::Lost(_) => panic!("instances lost"),
    }
}

/// The card after `plan` ran on it, every write taking effect at once.
pub fn carry_out(reply: &Reply, plan: &CardPlan) -> Reply {
    let card = Card::of(reply).unwrap();
    let mut after = reply.clone();
    for step in &plan.destroy {
        match *step {
            Step::DestroyComputeInstance {
                gpu_instance_id,
                compute_instance_id,
            } => {
                for gi in instances(&mut after)
                    .iter_mut()
                    .filter_map(Lenient::read_mut)
                {
                    if gi.id == gpu_instance_id {
                        if let Lenient::Read(cis) = &mut gi.compute_instances {
                            cis.retain(|ci| ci.id != compute_instance_id);
                        }
                    }
                }
            }
            Step::DestroyGpuInstance { gpu_instance_id } => {
                instances(&mut after)
                    .retain(|gi| gi.read().is_none_or(|gi| gi.id != gpu_instance_id));
            }
            other => panic!("{other:?} among the destroys"),
        }
    }
    if let Some(enabled) = plan.set_mode {
        after.mode.current = if enabled {
            MigState::Enabled
        } else {
            MigState::Disabled
        };
        after.mode.pending = Nullable::Null;
    }
    if plan.reset {
        if let Nullable::Value(pending) = after.mode.pending {
            after.mode.current = pending;
        }
        after.mode.pending = Nullable::Null;
        instances(&mut after).clear();
    }
    let first = instances(&mut after)
        .iter()
        .filter_map(Lenient::read)
        .map(|gi| gi.id)
        .max()
        .unwrap_or(0)
        + 1;
    let mut created = Vec::new();
    for (create, id) in plan.create.iter().zip(first..) {
        let mut gi = GpuInstance::new(id, create.profile_id, Nullable::Null);
        gi.placement = Lenient::Read(create.placement);
        gi.compute_instances = Lenient::Read(Vec::new());
        instances(&mut after).push(Lenient::Read(gi));
        created.push(id);
    }
    for step in plan.compute_batch(&created) {
        let Step::CreateComputeInstance {
            gpu_instance_id,
            profile_id,
            ..
        } = step
        else {
            panic!("{step:?}");
        };
        for gi in instances(&mut after)
            .iter_mut()
            .filter_map(Lenient::read_mut)
        {
            if gi.id == gpu_instance_id {
                let slices = card.profile(gi.profile_id).and_then(|p| p.slices).unwrap();
                if let Lenient::Read(cis) = &mut gi.compute_instances {
                    let id = cis.iter().map(|ci| ci.id + 1).max().unwrap_or(0);
                    cis.push(ComputeInstance::new(
                        id,
                        profile_id,
                        Placement::new(0, slices),
                    ));
                }
            }
        }
    }
    after.case = if instances(&mut after).is_empty() {
        Case::NoneCarved
    } else {
        Case::Partitions
    };
    after
}
