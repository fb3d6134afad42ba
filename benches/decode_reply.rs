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
            Lenient::Read(Profile {
                id,
                name: Lenient::Read(format!("{}g.{}gb", id % 7 + 1, 18 * (id % 7 + 1))),
                free_instances: Lenient::Read(id % 3),
                signature: Lenient::Read(Signature {
                    slice_count: id % 7 + 1,
                    instance_count: 7 / (id % 7 + 1),
                    multiprocessor_count: 16 * (id % 7 + 1),
                    copy_engine_count: id % 7 + 1,
                    decoder_count: id % 5,
                    encoder_count: 0,
                    jpeg_count: id % 4,
                    ofa_count: id % 2,
                    memory_size_mb: 18_176 * u64::from(id % 7 + 1),
                    capabilities: vec![Capability::P2p.into(), Capability::Gfx.into()],
                }),
            })
        })
        .collect();
    let gpu_instances = (0..64)
        .map(|id| {
            Lenient::Read(GpuInstance {
                id,
                profile_id: id % 64,
                placement: Lenient::Read(Placement {
                    start: id % 8,
                    size: 1,
                }),
                uuid: Nullable::Value(format!("MIG-5c0e7f7a-3b4d-5e6f-8a9b-{id:012x}")),
                compute_instances: Lenient::Read(
                    (0..4)
                        .map(|ci| ComputeInstance {
                            id: ci,
                            profile_id: ci,
                            placement: Placement { start: ci, size: 1 },
                        })
                        .collect(),
                ),
            })
        })
        .collect();
    let vgpus = (0..512)
        .map(|n: u32| {
            Lenient::Read(Vgpu {
                uuid: format!("4b1c2d3e-4f50-6172-8394-{n:012x}"),
                vgpu_type: Lenient::Read("NVIDIA H200-1-18C".to_owned()),
                type_id: Lenient::Read(1120 + n % 8),
                gpu_instance_id: Nullable::Value(n % 64),
                vm: Nullable::Value(format!("9f8e7d6c-5b4a-3928-1706-{n:012x}")),
            })
        })
        .collect();
    Reply {
        format: FormatVersion::new(1, 0),
        device: Bdf {
            domain: 0,
            bus: 0x3b,
            device: 0,
            function: 0,
        },
        mode: Mode {
            capable: true,
            current: MigState::Enabled,
            pending: Nullable::Null,
        },
        case: Case::Partitions,
        unreadable: None,
        driver: Lenient::Read(Driver {
            version: "570.124.06".to_owned(),
            nvml_version: "12.570.124.06".to_owned(),
        }),
        profiles: Lenient::Read(profiles),
        gpu_instances: Lenient::Read(gpu_instances),
        vgpus: Lenient::Read(vgpus),
    }
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
