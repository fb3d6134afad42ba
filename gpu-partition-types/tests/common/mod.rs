//! Sample replies and edits shared by the reader's tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::*;
use serde_json::{Value, json};

pub const DEVICE: &str = "0000:3b:00.0";

pub fn device() -> Bdf {
    DEVICE.parse().unwrap()
}

pub fn signature(slices: u32, capabilities: &[&str]) -> Signature {
    Signature {
        slice_count: slices,
        instance_count: 7 / slices.max(1),
        multiprocessor_count: 16 * slices,
        copy_engine_count: slices,
        decoder_count: slices,
        encoder_count: 0,
        jpeg_count: slices,
        ofa_count: 0,
        memory_size_mb: 11 * 1024 * u64::from(slices),
        capabilities: capabilities
            .iter()
            .map(|c| Enumerated::from_wire(c))
            .collect(),
    }
}

pub fn profile(id: u32, name: &str, slices: u32) -> Profile {
    Profile {
        id,
        name: Lenient::Read(name.to_owned()),
        free_instances: Lenient::Read(1),
        signature: Lenient::Read(signature(slices, &["p2p"])),
    }
}

/// A card with MIG on, two profiles, one GPU instance with a compute instance, two vGPUs.
pub fn sample() -> Reply {
    Reply {
        format: FormatVersion::new(1, 0),
        device: device(),
        mode: Mode {
            capable: true,
            current: MigState::Enabled,
            pending: Nullable::Null,
        },
        case: Case::Partitions,
        unreadable: None,
        driver: Lenient::Read(Driver {
            version: "570.124.06".into(),
            nvml_version: "12.570.124.06".into(),
        }),
        profiles: Lenient::Read(vec![
            Lenient::Read(profile(9, "3g.71gb", 3)),
            Lenient::Read(profile(19, "1g.18gb", 1)),
        ]),
        gpu_instances: Lenient::Read(vec![Lenient::Read(GpuInstance {
            id: 1,
            profile_id: 9,
            placement: Lenient::Read(Placement { start: 0, size: 4 }),
            uuid: Nullable::Null,
            compute_instances: Lenient::Read(vec![ComputeInstance {
                id: 0,
                profile_id: 2,
                placement: Placement { start: 0, size: 4 },
            }]),
        })]),
        vgpus: Lenient::Read(vec![
            Lenient::Read(Vgpu {
                uuid: "4b1c0000-0000-0000-0000-000000000001".into(),
                vgpu_type: Lenient::Read("NVIDIA H200-3-71C".into()),
                type_id: Lenient::Read(1123),
                gpu_instance_id: Nullable::Value(1),
                vm: Nullable::Null,
            }),
            Lenient::Read(Vgpu {
                uuid: "4b1c0000-0000-0000-0000-000000000002".into(),
                vgpu_type: Lenient::Read("NVIDIA H200-1-18C".into()),
                type_id: Lenient::Read(1120),
                gpu_instance_id: Nullable::Null,
                vm: Nullable::Value("vm-7".into()),
            }),
        ]),
    }
}

/// The sample as written JSON.
pub fn written() -> Value {
    serde_json::from_str(&sample().to_json()).unwrap()
}

pub fn read_value(value: &Value) -> Result<Reply, RefusedReply> {
    Reply::from_json(value.to_string().as_bytes(), Some(&device()))
}

/// Reads the written sample after `edit`.
pub fn edited(edit: impl FnOnce(&mut Value)) -> Result<Reply, RefusedReply> {
    let mut value = written();
    edit(&mut value);
    read_value(&value)
}

/// Replaces the member at `pointer` (its parent must exist).
pub fn set(value: &mut Value, pointer: &str, new: Value) {
    let (parent, name) = pointer.rsplit_once('/').unwrap();
    match value.pointer_mut(parent).unwrap() {
        Value::Object(map) => {
            map.insert(name.to_owned(), new);
        }
        Value::Array(items) => items[name.parse::<usize>().unwrap()] = new,
        other => panic!("{parent} is {other}"),
    }
}

/// Removes the member at `pointer`.
pub fn remove(value: &mut Value, pointer: &str) {
    let (parent, name) = pointer.rsplit_once('/').unwrap();
    let removed = value
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .and_then(|map| map.remove(name));
    assert!(removed.is_some(), "nothing at {pointer}");
}

pub fn refusal(read: &Result<Reply, RefusedReply>) -> Option<String> {
    read.as_ref().err().map(|e| e.pointer.to_string())
}

pub fn lost(read: &Result<Reply, RefusedReply>) -> Vec<String> {
    match read {
        Ok(reply) => reply.lost().iter().map(|l| l.pointer.to_string()).collect(),
        Err(e) => panic!("refused: {e}"),
    }
}

pub fn unknown(read: &Result<Reply, RefusedReply>) -> Vec<String> {
    match read {
        Ok(reply) => reply.unknown().iter().map(ToString::to_string).collect(),
        Err(e) => panic!("refused: {e}"),
    }
}

pub fn json_null() -> Value {
    json!(null)
}
