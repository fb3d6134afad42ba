//! `mxctl partition create` and `partition destroy`: one partition at a time, for an owner
//! (`mig_layout::partition`), through the same write as an apply (`super::apply::write`).

use super::apply::{Tools, What, json, text, write};
use crate::cli::{PartitionCreate, PartitionDestroy};
use crate::config::Config;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::output::Output;
use gpu_host_probe::Host;
use gpu_partition_types::{Bdf, Token};
use mig_layout::partition::{
    CreatePartition, DestroyPartition, PartitionOutcome, PartitionRefusal, TakenBack, Which,
};

/// The one GPU `--device` names.
fn one_device(devices: &[Bdf]) -> Result<Bdf, Failure> {
    match devices {
        [device] => Ok(*device),
        _ => Err(Failure::Usage(format!(
            "one partition is on one GPU: give exactly one --device (got {})",
            devices.len()
        ))),
    }
}

/// `partition create`.
pub fn create(
    args: &PartitionCreate,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let device = one_device(&args.write.devices)?;
    let owner = args.owner.clone();
    let mut request = match (&args.profile, &args.vgpu) {
        (Some(profile), None) => CreatePartition::new(device, profile.clone(), owner),
        (None, Some(name)) => CreatePartition::vgpu(device, name.clone(), owner),
        _ => {
            return Err(Failure::Usage(
                "say what the partition is: --profile PROFILE or --vgpu TYPE".to_owned(),
            ));
        }
    };
    if let Some(placement) = args.placement {
        request = request.at(placement);
    }
    let tools = Tools {
        sriov_manage: args.sriov_manage.as_deref(),
        ..Tools::default()
    };
    write(
        What::Create(request),
        &args.write,
        tools,
        config,
        host,
        output,
        false,
    )
}

/// `partition destroy`.
pub fn destroy(
    args: &PartitionDestroy,
    config: &Config,
    host: &Host,
    output: Output,
) -> Result<Exit, Failure> {
    let device = one_device(&args.write.devices)?;
    let which = match (args.slot, &args.owner) {
        (Some(slot), _) => Which::Slot(slot),
        (None, Some(owner)) => Which::OwnedBy(owner.clone()),
        (None, None) => {
            return Err(Failure::Usage(
                "name the partition: --slot ID, or --owner TOKEN for the owner's one".to_owned(),
            ));
        }
    };
    let request = DestroyPartition::new(device, which, args.owner.clone());
    write(
        What::Destroy(request),
        &args.write,
        Tools::default(),
        config,
        host,
        output,
        false,
    )
}

/// A refusal's document: `refused` (true), `reason` (its token), `message`, and its facts
/// (`device`, and where it has them `gpu_instance_id`, `gpu_instance_ids`, `owner`, `vgpu_type`,
/// `profile`, `rule` — the placement rule's refusal, for people).
fn refusal_document(refused: &PartitionRefusal) -> serde_json::Value {
    let mut document = serde_json::json!({
        "refused": true,
        "reason": refused.kind().as_str(),
        "message": refused.to_string(),
    });
    let facts = match refused {
        PartitionRefusal::NotNvidia { device }
        | PartitionRefusal::CardDiffers { device }
        | PartitionRefusal::MigOff { device }
        | PartitionRefusal::NotPlaced { device }
        | PartitionRefusal::NoSriov { device }
        | PartitionRefusal::VfsDisabled { device }
        | PartitionRefusal::NoFreeVf { device }
        | PartitionRefusal::Unreadable { device, .. } => serde_json::json!({"device": device}),
        PartitionRefusal::NoVgpuType { device, name }
        | PartitionRefusal::TimeSliced { device, name } => {
            serde_json::json!({"device": device, "vgpu_type": name.to_string()})
        }
        PartitionRefusal::LandsElsewhere {
            device,
            gpu_instance_id,
        }
        | PartitionRefusal::ProfileHoldsVgpu {
            device,
            gpu_instance_id,
        } => serde_json::json!({"device": device, "gpu_instance_id": gpu_instance_id}),
        PartitionRefusal::NoProfile { device, profile } => {
            serde_json::json!({"device": device, "profile": profile.to_string()})
        }
        PartitionRefusal::Room { device, refused } => {
            serde_json::json!({"device": device, "rule": refused.to_string()})
        }
        PartitionRefusal::NoRoom { device, profile } => {
            serde_json::json!({"device": device, "profile": profile.to_string()})
        }
        PartitionRefusal::NoInstance {
            device,
            gpu_instance_id,
        }
        | PartitionRefusal::Inferred {
            device,
            gpu_instance_id,
        } => serde_json::json!({"device": device, "gpu_instance_id": gpu_instance_id}),
        PartitionRefusal::NotOurs { device, ownership } => {
            serde_json::json!({"device": device, "ownership": ownership})
        }
        PartitionRefusal::NoneOwned { device, owner } => {
            serde_json::json!({"device": device, "owner": owner})
        }
        PartitionRefusal::SeveralOwned {
            device,
            owner,
            gpu_instance_ids,
        } => serde_json::json!({
            "device": device, "owner": owner, "gpu_instance_ids": gpu_instance_ids,
        }),
        PartitionRefusal::InUse {
            device,
            gpu_instance_id,
            owner,
        } => serde_json::json!({
            "device": device, "gpu_instance_id": gpu_instance_id, "owner": owner,
        }),
    };
    if let (Some(members), Some(facts)) = (document.as_object_mut(), facts.as_object()) {
        members.extend(facts.clone());
    }
    document
}

/// Prints how it ended: a refusal (exit 3), or the executor's report with `refused` (false),
/// `partition` (the created partition's row as read back; `null` for a destroy),
/// `generation` (the GPU's layout generation after it) and `undone` (a failed create's GPU
/// instance taken back: `{"ran": report}`, or `{"could_not_run": why}`; else `null`).
pub fn emit(done: PartitionOutcome, output: Output) -> Result<Exit, Failure> {
    match done {
        PartitionOutcome::Refused(refused) => {
            output.emit(
                &refusal_document(&refused),
                &format!("refused ({}): {refused}\n", refused.kind().as_str()),
            )?;
            Ok(Exit::Blocked)
        }
        PartitionOutcome::Ran {
            report,
            row,
            generation,
            undone,
        } => {
            let mut document = json(&*report)?;
            let taken_back = match &undone {
                None => serde_json::Value::Null,
                Some(TakenBack::Ran(report)) => serde_json::json!({ "ran": json(&**report)? }),
                Some(TakenBack::CouldNotRun(error)) => serde_json::json!({
                    "could_not_run": gpu_host_probe::chain::Chain(&**error).to_string(),
                }),
            };
            if let Some(members) = document.as_object_mut() {
                members.insert("refused".to_owned(), serde_json::Value::Bool(false));
                members.insert("partition".to_owned(), json(&row)?);
                members.insert("generation".to_owned(), json(&generation)?);
                members.insert("undone".to_owned(), taken_back);
            }
            let mut people = text(&report);
            if let Some(row) = &row {
                people.push_str(&format!(
                    "partition: {} ({}, ordinal {}){}\n",
                    row.slot,
                    row.profile,
                    row.ordinal,
                    row.owner
                        .as_ref()
                        .map(|owner| format!(", for {owner}"))
                        .unwrap_or_default()
                ));
            }
            if let Some(generation) = generation {
                people.push_str(&format!("generation: {generation}\n"));
            }
            match &undone {
                None => {}
                Some(TakenBack::Ran(taken)) => {
                    people.push_str("the GPU instance the failed create made, taken back:\n");
                    people.push_str(&text(taken));
                }
                Some(TakenBack::CouldNotRun(error)) => people.push_str(&format!(
                    "the GPU instance the failed create made could not be taken back: {}\n",
                    gpu_host_probe::chain::Chain(&**error)
                )),
            }
            output.emit(&document, &people)?;
            Ok(Exit::of_apply(report.outcome))
        }
    }
}
