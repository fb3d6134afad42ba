//! From NVML's answers to a reply: the mapping, pure over the [`NvmlHost`] trait.

use crate::api::{
    NvmlCard, NvmlFailure, NvmlHost, ProcessInfo, ProfileInfo, VgpuInfo, VgpuTypeInfo,
};
use crate::catalogue;
use gpu_partition_types::{
    Bdf, Capability, CardArchitecture, CardIdentity, Case, ComputeInstance, Driver, Enumerated,
    FormatVersion, GpuInstance, JsonPointer, Lenient, LostMember, MigState, Mode, Nullable,
    Placement, Problem, Process, Profile, Reply, Signature, Unreadable, Vgpu, VgpuMode, VgpuType,
};

// NVML's capability bits are the API's; they stay reachable here, where they were first.
pub use crate::api::{CAPS_GFX, CAPS_P2P};

/// What the helper answers for one card.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// A reply to print.
    Reply(Box<Reply>),
    /// The card is held by another client: exit 75 with this message on stderr.
    Busy(String),
}

/// A reply saying the card could not be read, and why (`unreadable.kind`).
pub fn unreadable(device: Bdf, kind: &str, message: impl Into<String>) -> Reply {
    // The mode is not known; the reader takes nothing from it when the case is unreadable.
    let mut reply = Reply::new(
        FormatVersion::CURRENT,
        device,
        not_capable(),
        Case::Unreadable,
    );
    let mut why = Unreadable::new(kind.to_owned());
    why.message = Lenient::Read(message.into());
    reply.unreadable = Some(why);
    // Nothing was read of the card: an empty list would say it holds none.
    reply.profiles = lost("profiles", "the card could not be read");
    reply.gpu_instances = lost("gpu_instances", "the card could not be read");
    reply.vgpus = lost("vgpus", "the card could not be read");
    reply.processes = lost("processes", "the card could not be read");
    reply.vgpu_types = lost("vgpu_types", "the card could not be read");
    reply
}

/// The mode of a card that cannot be partitioned (or whose mode is not known).
fn not_capable() -> Mode {
    Mode::new(false, MigState::Disabled, Nullable::Null)
}

/// The `unreadable.kind` of a failure; `None` for NVML's in-use error, which makes the helper
/// exit 75 instead.
pub fn kind_of(failure: &NvmlFailure) -> Option<&'static str> {
    match failure {
        NvmlFailure::InUse(_) => None,
        NvmlFailure::NoPermission(_) => Some("permission_denied"),
        NvmlFailure::NotFound(_) => Some("not_found"),
        NvmlFailure::LibraryMissing(_)
        | NvmlFailure::NotSupported
        | NvmlFailure::InvalidArgument
        | NvmlFailure::InsufficientResources(_)
        | NvmlFailure::ResetRequired(_)
        | NvmlFailure::FunctionMissing(_)
        | NvmlFailure::Driver(_) => Some("driver_error"),
    }
}

/// The answer for a failure that stops the read.
pub fn failed(device: Bdf, what: &str, failure: &NvmlFailure) -> Answer {
    match kind_of(failure) {
        None => Answer::Busy(format!("{device}: {what}: {failure}")),
        Some(kind) => Answer::Reply(Box::new(unreadable(
            device,
            kind,
            format!("{what}: {failure}"),
        ))),
    }
}

fn lost<T>(member: &str, why: impl Into<String>) -> Lenient<T> {
    Lenient::Lost(LostMember::new(
        JsonPointer::root().member(member),
        Problem::Absent,
        why,
    ))
}

/// Reads one card through NVML and maps NVML's answers to the reply.
pub fn read_card(host: &dyn NvmlHost, device: Bdf) -> Answer {
    let card = match host.card(&device.to_string()) {
        Ok(card) => card,
        Err(failure) => return failed(device, "finding the card", &failure),
    };
    let driver = match host.versions() {
        Ok((version, nvml_version)) => Lenient::Read(Driver::new(version, nvml_version)),
        Err(failure) => lost("driver", failure.to_string()),
    };
    match read_opened(card.as_ref(), device, driver) {
        Ok(reply) => Answer::Reply(Box::new(reply)),
        Err(answer) => answer,
    }
}

/// nvml.h's `NVML_DEVICE_ARCH_UNKNOWN`: NVML answered, and does not know the architecture.
const NVML_DEVICE_ARCH_UNKNOWN: u32 = 0xffff_ffff;

/// The board: its model, serial (`null` where the board has none), UUID and architecture, each
/// lost alone with NVML's reason when the call fails.
fn identity(card: &dyn NvmlCard) -> Lenient<CardIdentity> {
    let at = JsonPointer::root().member("card");
    let member = |name: &str, value: Result<String, NvmlFailure>| match value {
        Ok(value) => Lenient::Read(value),
        Err(failure) => Lenient::Lost(LostMember::new(
            at.clone().member(name),
            Problem::Absent,
            failure.to_string(),
        )),
    };
    let mut identity = CardIdentity::new();
    identity.name = member("name", card.name());
    identity.serial = match card.serial() {
        Ok(serial) => Lenient::Read(Nullable::Value(serial)),
        Err(NvmlFailure::NotSupported) => Lenient::Read(Nullable::Null),
        Err(failure) => Lenient::Lost(LostMember::new(
            at.clone().member("serial"),
            Problem::Absent,
            failure.to_string(),
        )),
    };
    identity.uuid = member("uuid", card.uuid());
    identity.architecture = match card.architecture() {
        // NVML's own "unknown" is no architecture: left out (lost), never written as a number.
        Ok(NVML_DEVICE_ARCH_UNKNOWN) => Lenient::Lost(LostMember::new(
            at.clone().member("architecture"),
            Problem::Absent,
            "NVML does not know the architecture (NVML_DEVICE_ARCH_UNKNOWN)",
        )),
        Ok(number) => Lenient::Read(CardArchitecture::from_nvml(number)),
        Err(failure) => Lenient::Lost(LostMember::new(
            at.clone().member("architecture"),
            Problem::Absent,
            failure.to_string(),
        )),
    };
    Lenient::Read(identity)
}

fn read_opened(card: &dyn NvmlCard, device: Bdf, driver: Lenient<Driver>) -> Result<Reply, Answer> {
    let stop = |what: &str, failure: NvmlFailure| failed(device, what, &failure);
    let board = identity(card);
    let vgpus = match card.vgpus() {
        Ok(vgpus) => Lenient::Read(vgpus.into_iter().enumerate().map(to_vgpu).collect()),
        Err(NvmlFailure::NotSupported) => Lenient::Read(Vec::new()),
        Err(NvmlFailure::InUse(why)) => return Err(stop("listing vGPUs", NvmlFailure::InUse(why))),
        Err(failure) => lost("vgpus", failure.to_string()),
    };
    let processes = match card.processes() {
        Ok(found) => Lenient::Read(found.into_iter().map(to_process).collect()),
        Err(NvmlFailure::InUse(why)) => {
            return Err(stop("listing processes", NvmlFailure::InUse(why)));
        }
        Err(failure) => lost("processes", failure.to_string()),
    };
    let vgpu_types = match card.vgpu_types() {
        Ok(types) => Lenient::Read(types.into_iter().map(to_vgpu_type).collect()),
        // A card (or a driver) without vGPU supports no type.
        Err(NvmlFailure::NotSupported) => Lenient::Read(Vec::new()),
        Err(failure) => lost("vgpu_types", failure.to_string()),
    };
    let vgpu_mode = match card.vgpu_heterogeneous_mode() {
        Ok(on) => Lenient::Read(VgpuMode::new(Nullable::Value(on))),
        Err(NvmlFailure::NotSupported) => Lenient::Read(VgpuMode::new(Nullable::Null)),
        // A driver without the call cannot say whether the card has the setting.
        Err(failure) => lost("vgpu_mode", failure.to_string()),
    };
    let (current, pending) = match card.mig_mode() {
        Ok(mode) => mode,
        Err(NvmlFailure::NotSupported) => {
            let mut reply = Reply::new(
                FormatVersion::CURRENT,
                device,
                not_capable(),
                Case::NotApplicable,
            );
            reply.driver = driver;
            reply.card = board;
            reply.vgpus = vgpus;
            reply.processes = processes;
            reply.vgpu_types = vgpu_types;
            reply.vgpu_mode = vgpu_mode;
            return Ok(reply);
        }
        Err(failure) => return Err(stop("reading the MIG mode", failure)),
    };
    let state = |on: bool| {
        if on {
            MigState::Enabled
        } else {
            MigState::Disabled
        }
    };
    let mode = Mode::new(
        true,
        state(current),
        if pending == current {
            Nullable::Null
        } else {
            Nullable::Value(state(pending))
        },
    );
    // With MIG off, a driver may answer no profile index; the catalogue is then empty.
    let catalogue = match catalogue::gpu_instance_profiles(card) {
        Ok(profiles) => Some(profiles),
        Err(NvmlFailure::InUse(why)) => {
            return Err(stop("listing profiles", NvmlFailure::InUse(why)));
        }
        Err(failure) if current => return Err(stop("listing profiles", failure)),
        Err(_) => None,
    };
    let mut instances = Vec::new();
    if current {
        for profile in catalogue.iter().flatten() {
            match card.gpu_instances(profile.id) {
                Ok(found) => instances.extend(found),
                Err(NvmlFailure::NotSupported) => {}
                Err(failure) => return Err(stop("listing GPU instances", failure)),
            }
        }
        // By ID, whatever order the profiles came in.
        instances.sort_by_key(|instance| instance.id);
    }
    let gpu_instances: Vec<Lenient<GpuInstance>> = instances
        .iter()
        .map(|info| {
            let compute_instances = match catalogue::compute_instances(card, info.id) {
                Ok(list) => Lenient::Read(
                    list.into_iter()
                        .map(|ci| {
                            ComputeInstance::new(
                                ci.id,
                                ci.profile_id,
                                Placement::new(ci.start, ci.size),
                            )
                        })
                        .collect(),
                ),
                Err(failure) => keep(Err(failure)),
            };
            let mut instance = GpuInstance::new(info.id, info.profile_id, Nullable::Null);
            instance.placement = Lenient::Read(Placement::new(info.start, info.size));
            instance.compute_instances = compute_instances;
            Lenient::Read(instance)
        })
        .collect();
    let profiles = match catalogue {
        Some(catalogue) => Lenient::Read(
            catalogue
                .into_iter()
                .map(|info| Lenient::Read(to_profile(card, info)))
                .collect(),
        ),
        None => lost("profiles", "NVML did not list the profiles"),
    };
    let case = if gpu_instances.is_empty() {
        Case::NoneCarved
    } else {
        Case::Partitions
    };
    let mut reply = Reply::new(FormatVersion::CURRENT, device, mode, case);
    reply.driver = driver;
    reply.card = board;
    reply.profiles = profiles;
    reply.gpu_instances = Lenient::Read(gpu_instances);
    reply.vgpus = vgpus;
    reply.processes = processes;
    reply.vgpu_types = vgpu_types;
    reply.vgpu_mode = vgpu_mode;
    Ok(reply)
}

/// A process: its pid, and its name when the driver gives it.
fn to_process(info: ProcessInfo) -> Lenient<Process> {
    let mut process = Process::new(info.pid);
    process.name = keep(info.name);
    Lenient::Read(process)
}

fn to_profile(card: &dyn NvmlCard, info: ProfileInfo) -> Profile {
    let mut capabilities = Vec::new();
    if info.capabilities & CAPS_P2P != 0 {
        capabilities.push(Enumerated::Known(Capability::P2p));
    }
    if info.capabilities & CAPS_GFX != 0 {
        capabilities.push(Enumerated::Known(Capability::Gfx));
    }
    let mut profile = Profile::new(info.id);
    profile.name = Lenient::Read(info.name);
    profile.free_instances = keep(card.remaining_capacity(info.id));
    profile.placements = keep(card.placements(info.id).map(|found| {
        found
            .into_iter()
            .map(|(start, size)| Placement::new(start, size))
            .collect()
    }));
    profile.signature = Lenient::Read(Signature::new(
        info.slice_count,
        info.instance_count,
        info.multiprocessor_count,
        info.copy_engine_count,
        info.decoder_count,
        info.encoder_count,
        info.jpeg_count,
        info.ofa_count,
        info.memory_size_mb,
        capabilities,
    ));
    profile
}

/// A value NVML may not give: read, or lost with NVML's reason (lost members are not written).
fn keep<T>(value: Result<T, NvmlFailure>) -> Lenient<T> {
    match value {
        Ok(value) => Lenient::Read(value),
        Err(failure) => Lenient::Lost(LostMember::new(
            JsonPointer::root(),
            Problem::Absent,
            failure.to_string(),
        )),
    }
}

/// vGPU number `index`: lost whole (`/vgpus/N`) when its UUID or its GPU instance cannot be
/// read, since an element needs both; a `null` instance would claim a time-sliced vGPU.
fn to_vgpu((index, info): (usize, VgpuInfo)) -> Lenient<Vgpu> {
    let lost = |what: &str, failure: NvmlFailure| {
        Lenient::Lost(LostMember::new(
            JsonPointer::root().member("vgpus").index(index),
            Problem::Absent,
            format!("{what}: {failure}"),
        ))
    };
    let uuid = match info.uuid {
        Ok(uuid) => uuid,
        Err(failure) => return lost("its UUID", failure),
    };
    let gpu_instance_id = match info.gpu_instance_id {
        Ok(id) => id,
        Err(failure) => return lost("its GPU instance", failure),
    };
    let mut vgpu = Vgpu::new(uuid, gpu_instance_id.into(), info.vm.into());
    vgpu.vgpu_type = keep(info.type_name);
    vgpu.type_id = keep(info.type_id);
    Lenient::Read(vgpu)
}

/// NVML gives a framebuffer in bytes; the reply says MiB.
const MIB: u64 = 1 << 20;

/// A vGPU type: its ID always (NVML listed it), each other member read or lost with NVML's
/// reason.
fn to_vgpu_type(info: VgpuTypeInfo) -> Lenient<VgpuType> {
    let mut kind = VgpuType::new(info.id);
    kind.name = keep(info.name);
    kind.gpu_instance_profile_id = keep(info.gpu_instance_profile_id.map(Nullable::from));
    kind.framebuffer_mib = keep(info.framebuffer_bytes.map(|bytes| bytes / MIB));
    kind.max_instances = keep(info.max_instances);
    kind.max_instances_per_gpu_instance =
        keep(info.max_instances_per_gpu_instance.map(Nullable::from));
    Lenient::Read(kind)
}
