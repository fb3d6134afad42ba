//! Generated replies written and read back: equal, in one page and in any number of pages.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_partition_types::*;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    // Escapes, quotes, slashes and non-ASCII, which the writer must escape and the reader undo.
    "[a-zA-Z0-9 ._/\"\\\\é→-]{0,12}"
}

fn mig_state() -> impl Strategy<Value = MigState> {
    prop_oneof![Just(MigState::Enabled), Just(MigState::Disabled)]
}

fn capability() -> impl Strategy<Value = Enumerated<Capability>> {
    prop_oneof![
        Just(Enumerated::Known(Capability::P2p)),
        Just(Enumerated::Known(Capability::Gfx)),
        "[a-zA-Z_]{1,8}".prop_map(|text| Enumerated::from_wire(&text)),
    ]
}

fn signature() -> impl Strategy<Value = Signature> {
    (vec(any::<u32>(), 8), any::<u64>(), vec(capability(), 0..4)).prop_map(
        |(counts, memory, capabilities)| {
            Signature::new(
                counts[0],
                counts[1],
                counts[2],
                counts[3],
                counts[4],
                counts[5],
                counts[6],
                counts[7],
                memory,
                capabilities,
            )
        },
    )
}

fn profile() -> impl Strategy<Value = Profile> {
    (
        any::<u32>(),
        text(),
        any::<u32>(),
        signature(),
        vec(placement(), 0..4),
    )
        .prop_map(|(id, name, free, signature, placements)| {
            let mut profile = Profile::new(id);
            profile.name = Lenient::Read(name);
            profile.free_instances = Lenient::Read(free);
            profile.signature = Lenient::Read(signature);
            profile.placements = Lenient::Read(placements);
            profile
        })
}

fn placement() -> impl Strategy<Value = Placement> {
    (any::<u32>(), any::<u32>()).prop_map(|(start, size)| Placement::new(start, size))
}

fn instance() -> impl Strategy<Value = GpuInstance> {
    (
        any::<u32>(),
        any::<u32>(),
        placement(),
        option::of(text()),
        vec((any::<u32>(), any::<u32>(), placement()), 0..3),
    )
        .prop_map(|(id, profile_id, placement, uuid, compute)| {
            let mut instance = GpuInstance::new(id, profile_id, uuid.into());
            instance.placement = Lenient::Read(placement);
            instance.compute_instances = Lenient::Read(
                compute
                    .into_iter()
                    .map(|(id, profile_id, placement)| {
                        ComputeInstance::new(id, profile_id, placement)
                    })
                    .collect(),
            );
            instance
        })
}

fn vgpu() -> impl Strategy<Value = Vgpu> {
    (
        text(),
        text(),
        any::<u32>(),
        option::of(any::<u32>()),
        option::of(text()),
    )
        .prop_map(|(uuid, vgpu_type, type_id, instance, vm)| {
            let mut vgpu = Vgpu::new(uuid, instance.into(), vm.into());
            vgpu.vgpu_type = Lenient::Read(vgpu_type);
            vgpu.type_id = Lenient::Read(type_id);
            vgpu
        })
}

fn missing<T>(at: JsonPointer) -> Lenient<T> {
    Lenient::Lost(LostMember::new(at, Problem::Absent, "missing member"))
}

fn reads<T>(items: Vec<T>) -> Lenient<Vec<Lenient<T>>> {
    Lenient::Read(items.into_iter().map(Lenient::Read).collect())
}

prop_compose! {
    fn reply()(
        minor in 0u32..5,
        domain in any::<u32>(), bus in any::<u8>(), device in 0u8..32, function in 0u8..8,
        capable in any::<bool>(), current in mig_state(), pending in option::of(mig_state()),
        case_pick in 0usize..4,
        kind in "[a-z_]{1,12}", message in text(),
        driver in option::of((text(), text())),
        card in option::of((option::of(text()), option::of(option::of(text())), option::of(text()))),
        architecture in option::of(any::<u32>()),
        profiles in vec(profile(), 0..5),
        instances in vec(instance(), 0..5),
        vgpus in vec(vgpu(), 0..6),
        processes in vec((any::<u32>(), text()), 0..4),
        vgpu_types in vec(vgpu_type(), 0..5),
        vgpu_mode in option::of(option::of(any::<bool>())),
    ) -> Reply {
        let case = match (capable, case_pick) {
            (true, 0) => Case::Partitions,
            (true, 1) => Case::NoneCarved,
            (_, 2) => Case::Unreadable,
            _ => Case::NotApplicable,
        };
        let mode = Mode::new(capable, current, pending.into());
        let mut reply = Reply::new(
            FormatVersion::new(1, minor),
            Bdf { domain, bus, device, function },
            mode,
            case,
        );
        reply.unreadable = (case == Case::Unreadable).then(|| {
            let mut unreadable = Unreadable::new(kind);
            unreadable.message = Lenient::Read(message);
            unreadable
        });
        reply.driver = match driver {
            Some((version, nvml_version)) => Lenient::Read(Driver::new(version, nvml_version)),
            None => Lenient::Lost(LostMember::new(JsonPointer::root().member("driver"), Problem::Absent, "missing member")),
        };
        let card_at = JsonPointer::root().member("card");
        reply.card = match card {
            Some((name, serial, uuid)) => {
                let mut card = CardIdentity::new();
                card.name = name.map_or_else(|| missing(card_at.clone().member("name")), Lenient::Read);
                card.serial = serial.map_or_else(
                    || missing(card_at.clone().member("serial")),
                    |serial| Lenient::Read(serial.into()),
                );
                card.uuid = uuid.map_or_else(|| missing(card_at.clone().member("uuid")), Lenient::Read);
                // Any number: the architectures known and those a later NVML adds.
                card.architecture = architecture.map_or_else(
                    || missing(card_at.clone().member("architecture")),
                    |number| Lenient::Read(CardArchitecture::from_nvml(number)),
                );
                Lenient::Read(card)
            }
            None => missing(card_at),
        };
        reply.profiles = reads(profiles);
        reply.gpu_instances = reads(instances);
        reply.vgpus = reads(vgpus);
        reply.processes = reads(
            processes
                .into_iter()
                .map(|(pid, name)| {
                    let mut process = Process::new(pid);
                    process.name = Lenient::Read(name);
                    process
                })
                .collect(),
        );
        reply.vgpu_types = reads(vgpu_types);
        reply.vgpu_mode = match vgpu_mode {
            Some(heterogeneous) => Lenient::Read(VgpuMode::new(heterogeneous.into())),
            None => missing(JsonPointer::root().member("vgpu_mode")),
        };
        reply
    }
}

fn vgpu_type() -> impl Strategy<Value = VgpuType> {
    (
        any::<u32>(),
        text(),
        option::of(any::<u32>()),
        any::<u64>(),
        any::<u32>(),
        option::of(any::<u32>()),
    )
        .prop_map(|(id, name, profile, framebuffer, max, per_gi)| {
            let mut kind = VgpuType::new(id);
            kind.name = Lenient::Read(name);
            kind.gpu_instance_profile_id = Lenient::Read(profile.into());
            kind.framebuffer_mib = Lenient::Read(framebuffer);
            kind.max_instances = Lenient::Read(max);
            kind.max_instances_per_gpu_instance = Lenient::Read(per_gi.into());
            kind
        })
}

proptest! {
    #[test]
    fn a_written_reply_reads_back_equal(reply in reply()) {
        let read = Reply::from_json(reply.to_json().as_bytes(), Some(&reply.device));
        prop_assert_eq!(read, Ok(reply));
    }

    #[test]
    fn a_reply_written_in_pages_reads_back_equal_in_any_page_order(
        reply in reply(),
        size in 1usize..4,
        seed in any::<u64>(),
    ) {
        let mut pages = reply.to_pages(size);
        // A cheap deterministic shuffle: rotate by the seed.
        let turn = (seed as usize) % pages.len();
        pages.rotate_left(turn);
        let read = Reply::from_json(pages.join("\n").as_bytes(), Some(&reply.device));
        prop_assert_eq!(read, Ok(reply));
    }

    #[test]
    fn a_written_reply_loses_nothing_but_what_was_already_lost(reply in reply()) {
        let read = Reply::from_json(reply.to_json().as_bytes(), None).unwrap();
        let before: Vec<String> = reply.lost().iter().map(|l| l.pointer.to_string()).collect();
        let after: Vec<String> = read.lost().iter().map(|l| l.pointer.to_string()).collect();
        prop_assert_eq!(after, before);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_reader(bytes in vec(any::<u8>(), 0..256)) {
        let _ = Reply::from_json(&bytes, None);
        let _ = VersionReply::from_json(&bytes);
    }

    #[test]
    fn any_prefix_of_a_written_reply_is_refused_not_panicked(reply in reply(), cut in 0usize..10_000) {
        let text = reply.to_json();
        let cut = cut % text.len();
        if let Some(prefix) = text.get(..cut) {
            prop_assert!(Reply::from_json(prefix.as_bytes(), None).is_err());
        }
    }
}

#[test]
fn a_lost_element_is_written_as_an_empty_object_and_read_back_lost_at_its_index() {
    let text = br#"{"format": "1.0", "device": "0000:3b:00.0",
        "mode": {"capable": true, "current": "enabled", "pending": null}, "case": "partitions",
        "vgpus": [{"uuid": "a", "gpu_instance_id": 1, "vm": null},
                  {"uuid": "b", "vm": null},
                  {"uuid": "c", "gpu_instance_id": null, "vm": null}]}"#;
    let reply = Reply::from_json(text, None).unwrap();
    let lost = |reply: &Reply| -> Vec<String> {
        reply
            .lost()
            .iter()
            .map(|l| l.pointer.to_string())
            .filter(|p| p.starts_with("/vgpus") && !p.contains("/type"))
            .collect()
    };
    assert_eq!(lost(&reply), ["/vgpus/1"]);
    let written = reply.to_json();
    assert!(
        written.contains(r#"{"uuid":"a""#) && written.contains(",{},"),
        "{written}"
    );
    assert_eq!(
        lost(&Reply::from_json(written.as_bytes(), None).unwrap()),
        ["/vgpus/1"]
    );
    let pages = reply.to_pages(1).join("\n");
    assert_eq!(
        lost(&Reply::from_json(pages.as_bytes(), None).unwrap()),
        ["/vgpus/1"]
    );
}
