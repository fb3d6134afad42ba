//! Sample replies and edits shared by the reader's tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::*;
use serde_json::{Value, json};

pub const DEVICE: &str = "0000:3b:00.0";

pub fn device() -> Bdf {
    DEVICE.parse().unwrap()
}

pub fn signature(slices: u32, capabilities: &[&str]) -> Signature {
    Signature::new(
        slices,
        7 / slices.max(1),
        16 * slices,
        slices,
        slices,
        0,
        slices,
        0,
        11 * 1024 * u64::from(slices),
        capabilities
            .iter()
            .map(|c| Enumerated::from_wire(c))
            .collect(),
    )
}

pub fn profile(id: u32, name: &str, slices: u32) -> Profile {
    let mut profile = Profile::new(id);
    profile.name = Lenient::Read(name.to_owned());
    profile.free_instances = Lenient::Read(1);
    profile.signature = Lenient::Read(signature(slices, &["p2p"]));
    // Where an instance of `slices` may go on an 8-slice card (a 3g instance takes 4).
    let size = if slices == 3 { 4 } else { slices.max(1) };
    profile.placements = Lenient::Read(
        (0..8 / size)
            .map(|at| Placement::new(at * size, size))
            .collect(),
    );
    profile
}

pub fn vgpu(
    uuid: &str,
    vgpu_type: &str,
    type_id: u32,
    gi: Nullable<u32>,
    vm: Nullable<String>,
) -> Vgpu {
    let mut vgpu = Vgpu::new(uuid.into(), gi, vm);
    vgpu.vgpu_type = Lenient::Read(vgpu_type.into());
    vgpu.type_id = Lenient::Read(type_id);
    vgpu
}

/// A card with MIG on, two profiles, one GPU instance with a compute instance, two vGPUs.
pub fn sample() -> Reply {
    let mode = Mode::new(true, MigState::Enabled, Nullable::Null);
    let mut reply = Reply::new(FormatVersion::new(1, 4), device(), mode, Case::Partitions);
    reply.driver = Lenient::Read(Driver::new("570.124.06".into(), "12.570.124.06".into()));
    let mut card = CardIdentity::new();
    card.name = Lenient::Read("NVIDIA H200".to_owned());
    card.serial = Lenient::Read(Nullable::Value("1654923004321".to_owned()));
    card.uuid = Lenient::Read("GPU-5a3c9f0e-8a1b-4c2d-9e7f-0a1b2c3d4e5f".to_owned());
    card.architecture = Lenient::Read(Architecture::Hopper.into());
    reply.card = Lenient::Read(card);
    reply.profiles = Lenient::Read(vec![
        Lenient::Read(profile(9, "3g.71gb", 3)),
        Lenient::Read(profile(19, "1g.18gb", 1)),
    ]);
    let mut instance = GpuInstance::new(1, 9, Nullable::Null);
    instance.placement = Lenient::Read(Placement::new(0, 4));
    instance.compute_instances =
        Lenient::Read(vec![ComputeInstance::new(0, 2, Placement::new(0, 4))]);
    reply.gpu_instances = Lenient::Read(vec![Lenient::Read(instance)]);
    reply.vgpus = Lenient::Read(vec![
        Lenient::Read(vgpu(
            "4b1c0000-0000-0000-0000-000000000001",
            "NVIDIA H200-3-71C",
            1123,
            Nullable::Value(1),
            Nullable::Null,
        )),
        Lenient::Read(vgpu(
            "4b1c0000-0000-0000-0000-000000000002",
            "NVIDIA H200-1-18C",
            1120,
            Nullable::Null,
            Nullable::Value("vm-7".into()),
        )),
    ]);
    let mut process = Process::new(4242);
    process.name = Lenient::Read("python3".to_owned());
    reply.processes = Lenient::Read(vec![Lenient::Read(process)]);
    reply.vgpu_types = Lenient::Read(vec![
        Lenient::Read(vgpu_type(1123, "NVIDIA H200-3-71C", Some(9), 72704, 2)),
        Lenient::Read(vgpu_type(1130, "NVIDIA H200-141C", None, 144384, 1)),
    ]);
    reply.vgpu_mode = Lenient::Read(VgpuMode::new(Nullable::Value(false)));
    reply
}

/// A vGPU type with every member read: one per GPU instance when MIG-backed.
pub fn vgpu_type(
    id: u32,
    name: &str,
    profile: Option<u32>,
    framebuffer_mib: u64,
    max: u32,
) -> VgpuType {
    let mut kind = VgpuType::new(id);
    kind.name = Lenient::Read(name.to_owned());
    kind.gpu_instance_profile_id = Lenient::Read(profile.into());
    kind.framebuffer_mib = Lenient::Read(framebuffer_mib);
    kind.max_instances = Lenient::Read(max);
    kind.max_instances_per_gpu_instance = Lenient::Read(profile.map(|_| 1).into());
    kind
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
