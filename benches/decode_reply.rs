//! Decoding a large reply (64 profiles, 64 GPU instances, 512 vGPUs, about 200 KB) with the
//! lenient reader, against a plain strict `#[derive(Deserialize)]` decode of the same shape.

use criterion::{Criterion, criterion_group, criterion_main};
use gpu_partition_types::*;
use std::hint::black_box;

/// The baseline: the same shape, strict, with serde's derive.
#[allow(dead_code)]
mod strict {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub struct Reply {
        pub format: String,
        pub device: String,
        pub mode: Mode,
        pub case: String,
        pub driver: Driver,
        pub profiles: Vec<Profile>,
        pub gpu_instances: Vec<GpuInstance>,
        pub vgpus: Vec<Vgpu>,
    }
    #[derive(Deserialize)]
    pub struct Mode {
        pub capable: bool,
        pub current: String,
        pub pending: Option<String>,
    }
    #[derive(Deserialize)]
    pub struct Driver {
        pub version: String,
        pub nvml_version: String,
    }
    #[derive(Deserialize)]
    pub struct Profile {
        pub id: u32,
        pub name: String,
        pub free_instances: u32,
        pub signature: Signature,
    }
    #[derive(Deserialize)]
    pub struct Signature {
        pub slice_count: u32,
        pub instance_count: u32,
        pub multiprocessor_count: u32,
        pub copy_engine_count: u32,
        pub decoder_count: u32,
        pub encoder_count: u32,
        pub jpeg_count: u32,
        pub ofa_count: u32,
        pub memory_size_mb: u64,
        pub capabilities: Vec<String>,
    }
    #[derive(Deserialize)]
    pub struct Placement {
        pub start: u32,
        pub size: u32,
    }
    #[derive(Deserialize)]
    pub struct GpuInstance {
        pub id: u32,
        pub profile_id: u32,
        pub placement: Placement,
        pub uuid: Option<String>,
        pub compute_instances: Vec<ComputeInstance>,
    }
    #[derive(Deserialize)]
    pub struct ComputeInstance {
        pub id: u32,
        pub profile_id: u32,
        pub placement: Placement,
    }
    #[derive(Deserialize)]
    pub struct Vgpu {
        pub uuid: String,
        #[serde(rename = "type")]
        pub vgpu_type: String,
        pub type_id: u32,
        pub gpu_instance_id: Option<u32>,
        pub vm: Option<String>,
    }
}

fn large_reply() -> Reply {
    let profiles = (0..64)
        .map(|id| {
            let mut profile = Profile::new(id);
            profile.name = Lenient::Read(format!("{}g.{}gb", id % 7 + 1, 18 * (id % 7 + 1)));
            profile.free_instances = Lenient::Read(id % 3);
            profile.signature = Lenient::Read(Signature::new(
                id % 7 + 1,
                7 / (id % 7 + 1),
                16 * (id % 7 + 1),
                id % 7 + 1,
                id % 5,
                0,
                id % 4,
                id % 2,
                18_176 * u64::from(id % 7 + 1),
                vec![Capability::P2p.into(), Capability::Gfx.into()],
            ));
            Lenient::Read(profile)
        })
        .collect();
    let gpu_instances = (0..64)
        .map(|id| {
            let uuid = format!("MIG-5c0e7f7a-3b4d-5e6f-8a9b-{id:012x}");
            let mut instance = GpuInstance::new(id, id % 64, Nullable::Value(uuid));
            instance.placement = Lenient::Read(Placement::new(id % 8, 1));
            instance.compute_instances = Lenient::Read(
                (0..4)
                    .map(|ci| ComputeInstance::new(ci, ci, Placement::new(ci, 1)))
                    .collect(),
            );
            Lenient::Read(instance)
        })
        .collect();
    let vgpus = (0..512)
        .map(|n: u32| {
            let mut vgpu = Vgpu::new(
                format!("4b1c2d3e-4f50-6172-8394-{n:012x}"),
                Nullable::Value(n % 64),
                Nullable::Value(format!("9f8e7d6c-5b4a-3928-1706-{n:012x}")),
            );
            vgpu.vgpu_type = Lenient::Read("NVIDIA H200-1-18C".to_owned());
            vgpu.type_id = Lenient::Read(1120 + n % 8);
            Lenient::Read(vgpu)
        })
        .collect();
    let device = Bdf {
        domain: 0,
        bus: 0x3b,
        device: 0,
        function: 0,
    };
    let mode = Mode::new(true, MigState::Enabled, Nullable::Null);
    let mut reply = Reply::new(FormatVersion::new(1, 0), device, mode, Case::Partitions);
    reply.driver = Lenient::Read(Driver::new(
        "570.124.06".to_owned(),
        "12.570.124.06".to_owned(),
    ));
    reply.profiles = Lenient::Read(profiles);
    reply.gpu_instances = Lenient::Read(gpu_instances);
    reply.vgpus = Lenient::Read(vgpus);
    reply
}

fn decode(c: &mut Criterion) {
    // Indented, as a helper that pretty-prints writes it: about 200 KB.
    let text = serde_json::to_string_pretty(&large_reply()).unwrap_or_default();
    let bytes = text.as_bytes();
    // Both decoders must accept the input, or the comparison means nothing.
    assert!(Reply::from_json(bytes, None).is_ok_and(|reply| reply.lost().is_empty()));
    assert!(serde_json::from_slice::<strict::Reply>(bytes).is_ok());
    eprintln!("reply size: {} bytes", bytes.len());

    let mut group = c.benchmark_group("decode_large_reply");
    group.bench_function("strict_derive_baseline", |b| {
        b.iter(|| serde_json::from_slice::<strict::Reply>(black_box(bytes)).map(|r| r.vgpus.len()))
    });
    group.bench_function("lenient_reader", |b| {
        b.iter(|| Reply::from_json(black_box(bytes), None).map(|r| r.format))
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
