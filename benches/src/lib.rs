//! Criterion benchmarks live beside this file as `[[bench]]` targets; see `Cargo.toml`. What
//! they share lives here: the large reply of `decode_reply`, which `decode_count` (a binary for
//! callgrind) decodes too.

pub mod decode_fixture {
    //! A large reply (64 profiles with their placements, 64 GPU instances, 512 vGPUs, 16
    //! processes, 32 vGPU types) as the helper pretty-prints it, and the strict derive of the
    //! same shape.
    use gpu_partition_types::*;

    /// The baseline: the same shape, strict, with serde's derive.
    #[allow(dead_code)]
    pub mod strict {
        use serde::Deserialize;

        #[derive(Debug, Deserialize)]
        pub struct Reply {
            pub format: String,
            pub device: String,
            pub mode: Mode,
            pub case: String,
            pub driver: Driver,
            pub card: Card,
            pub profiles: Vec<Profile>,
            pub gpu_instances: Vec<GpuInstance>,
            pub vgpus: Vec<Vgpu>,
            pub processes: Vec<Process>,
            pub vgpu_types: Vec<VgpuType>,
            pub vgpu_mode: VgpuMode,
        }
        #[derive(Debug, Deserialize)]
        pub struct VgpuType {
            pub id: u32,
            pub name: String,
            pub gpu_instance_profile_id: Option<u32>,
            pub framebuffer_mib: u64,
            pub max_instances: u32,
            pub max_instances_per_gpu_instance: Option<u32>,
        }
        #[derive(Debug, Deserialize)]
        pub struct VgpuMode {
            pub heterogeneous: Option<bool>,
        }
        #[derive(Debug, Deserialize)]
        pub struct Card {
            pub name: String,
            pub serial: Option<String>,
            pub uuid: String,
            pub architecture: u32,
        }
        #[derive(Debug, Deserialize)]
        pub struct Process {
            pub pid: u32,
            pub name: String,
        }
        #[derive(Debug, Deserialize)]
        pub struct Mode {
            pub capable: bool,
            pub current: String,
            pub pending: Option<String>,
        }
        #[derive(Debug, Deserialize)]
        pub struct Driver {
            pub version: String,
            pub nvml_version: String,
        }
        #[derive(Debug, Deserialize)]
        pub struct Profile {
            pub id: u32,
            pub name: String,
            pub free_instances: u32,
            pub signature: Signature,
            pub placements: Vec<Placement>,
        }
        #[derive(Debug, Deserialize)]
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
        #[derive(Debug, Deserialize)]
        pub struct Placement {
            pub start: u32,
            pub size: u32,
        }
        #[derive(Debug, Deserialize)]
        pub struct GpuInstance {
            pub id: u32,
            pub profile_id: u32,
            pub placement: Placement,
            pub uuid: Option<String>,
            pub compute_instances: Vec<ComputeInstance>,
        }
        #[derive(Debug, Deserialize)]
        pub struct ComputeInstance {
            pub id: u32,
            pub profile_id: u32,
            pub placement: Placement,
        }
        #[derive(Debug, Deserialize)]
        pub struct Vgpu {
            pub uuid: String,
            #[serde(rename = "type")]
            pub vgpu_type: String,
            pub type_id: u32,
            pub gpu_instance_id: Option<u32>,
            pub vm: Option<String>,
        }
    }

    pub fn large_reply() -> Reply {
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
                let size = id % 7 + 1;
                profile.placements = Lenient::Read(
                    (0..8 / size)
                        .map(|n| Placement::new(n * size, size))
                        .collect(),
                );
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
        let device = Bdf::on_bus(0x3b);
        let mode = Mode::new(true, MigState::Enabled, Nullable::Null);
        let mut reply = Reply::new(FormatVersion::new(1, 4), device, mode, Case::Partitions);
        reply.driver = Lenient::Read(Driver::new(
            "570.124.06".to_owned(),
            "12.570.124.06".to_owned(),
        ));
        let mut card = CardIdentity::new();
        card.name = Lenient::Read("NVIDIA H200".to_owned());
        card.serial = Lenient::Read(Nullable::Value("1654923004321".to_owned()));
        card.uuid = Lenient::Read("GPU-5a3c9f0e-8a1b-4c2d-9e7f-0a1b2c3d4e5f".to_owned());
        card.architecture = Lenient::Read(Architecture::Hopper.into());
        reply.card = Lenient::Read(card);
        reply.profiles = Lenient::Read(profiles);
        reply.gpu_instances = Lenient::Read(gpu_instances);
        reply.vgpus = Lenient::Read(vgpus);
        reply.processes = Lenient::Read(
            (0..16)
                .map(|pid| {
                    let mut process = Process::new(4000 + pid);
                    process.name = Lenient::Read(format!("qemu-system-x86_64 {pid}"));
                    Lenient::Read(process)
                })
                .collect(),
        );
        reply.vgpu_types = Lenient::Read(
            (0..32)
                .map(|n: u32| {
                    let mut kind = VgpuType::new(1100 + n);
                    kind.name = Lenient::Read(format!("NVIDIA H200-1-18C{n}"));
                    kind.gpu_instance_profile_id = Lenient::Read(Nullable::Value(n % 8));
                    kind.framebuffer_mib = Lenient::Read(18_432);
                    kind.max_instances = Lenient::Read(7);
                    kind.max_instances_per_gpu_instance = Lenient::Read(Nullable::Value(1));
                    Lenient::Read(kind)
                })
                .collect(),
        );
        reply.vgpu_mode = Lenient::Read(VgpuMode::new(Nullable::Null));
        reply
    }

    /// The large reply as text, indented (about 220 KB).
    pub fn large_reply_text() -> String {
        serde_json::to_string_pretty(&large_reply()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::decode_fixture::{large_reply_text, strict};
    use gpu_partition_types::Reply;

    /// The decode benchmark compares two readers of one text: both must read all of it, or the
    /// comparison means nothing (a new member of the format once made the lenient one lose
    /// `/card` while nobody ran the benchmark).
    #[test]
    fn the_decode_benchmarks_reply_reads_whole_with_both_readers() {
        let text = large_reply_text();
        let reply = Reply::from_json(text.as_bytes(), None).unwrap();
        assert!(reply.lost().is_empty(), "{:?}", reply.lost());
        assert!(reply.unknown_members.is_empty());
        assert_eq!(
            serde_json::from_str::<strict::Reply>(&text)
                .unwrap()
                .vgpus
                .len(),
            512
        );
    }
}
