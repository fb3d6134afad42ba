//! The plan of an AMD partition layout: from what the host's AMD GPUs hold (each one's
//! partitions as sysfs shows them, its XGMI hive, who holds it) and what a layout wants of
//! some of them, the writes in the order the driver needs, or why none may be made. Pure: an
//! executor runs the steps. The rules and their sources are in the project's `docs/amd.md`:
//!
//! - memory first: a memory partition written to `current_memory_partition` is only a request,
//!   for the GPU's whole XGMI hive, that takes effect when the driver is reloaded (amdgpu's
//!   `current_memory_partition_store`, `amdgpu_gmc_prepare_nps_mode_change`); so every request
//!   is made, then the driver is reloaded once, then the compute partitions are set (a reload
//!   sets each GPU's compute partition anew), as Device Config Manager orders it;
//! - a GPU that holds what is wanted is no step (a second apply writes nothing);
//! - refused before any write: a pair the kernel's table refuses (`aqua_vanjaram.c`), a memory
//!   partition the GPU does not offer (its `available_memory_partition`: the part and its
//!   VBIOS decide), a compute partition it does not offer with its memory partition now, a hive
//!   asked for two memory partitions or with a member the layout leaves out that the request
//!   would change, and a GPU a process holds (the reload needs every AMD GPU of the host
//!   idle).

use crate::vgpu_plan::describe;
use gpu_host_probe::Holder;
use gpu_host_probe::amdgpu::AmdPartitions;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition, list};
use gpu_partition_types::Bdf;
use layout_model::amd::AmdWant;

/// What the host holds of one AMD GPU, as read before the plan.
#[derive(Debug, Clone, Copy)]
pub struct AmdCard<'a> {
    /// The GPU.
    pub device: Bdf,
    /// Its partitions (`gpu_host_probe::amdgpu::read_partitions`).
    pub partitions: &'a AmdPartitions,
    /// The processes holding its device files open (`/dev/dri/renderD*`, `/dev/kfd`).
    pub holders: &'a [Holder],
    /// A memory partition requested of it that still waits for a driver reload (this host's
    /// record: the kernel shows none); `None`: none.
    pub requested: Option<MemoryPartition>,
}

impl<'a> AmdCard<'a> {
    /// The GPU at `device` with `partitions`, no process holding it and no memory partition
    /// waiting for a reload: a card as the kernel shows it once a reload is done.
    #[must_use]
    pub fn unheld(device: Bdf, partitions: &'a AmdPartitions) -> Self {
        Self {
            device,
            partitions,
            holders: &[],
            requested: None,
        }
    }
}

/// One step of an AMD plan, in the order it is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AmdStep {
    /// The memory partition requested (`current_memory_partition`): it waits for the reload.
    RequestMemory {
        /// The GPU.
        device: Bdf,
        /// The mode.
        mode: MemoryPartition,
    },
    /// The driver reloaded (`modprobe -r amdgpu`, `modprobe amdgpu`): every requested memory
    /// partition takes effect, on every GPU of each hive.
    ReloadDriver,
    /// The compute partition set (`current_compute_partition`): at once.
    SetCompute {
        /// The GPU.
        device: Bdf,
        /// The mode.
        mode: ComputePartition,
    },
}

impl AmdStep {
    /// The GPU it writes; `None` for the reload (every AMD GPU of the host).
    pub fn device(&self) -> Option<Bdf> {
        match self {
            Self::RequestMemory { device, .. } | Self::SetCompute { device, .. } => Some(*device),
            Self::ReloadDriver => None,
        }
    }
}

impl std::fmt::Display for AmdStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RequestMemory { mode, .. } => write!(
                f,
                "request memory partition {mode} (current_memory_partition; it holds after the \
                 driver reload)"
            ),
            Self::ReloadDriver => f.write_str("reload the amdgpu driver (every AMD GPU)"),
            Self::SetCompute { mode, .. } => {
                write!(
                    f,
                    "set compute partition {mode} (current_compute_partition)"
                )
            }
        }
    }
}

impl serde::Serialize for AmdStep {
    /// `{"step": "request_memory", "device", "mode"}`, `{"step": "reload_driver"}`,
    /// `{"step": "set_compute", "device", "mode"}`, each with its `message`.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        match self {
            Self::RequestMemory { device, mode } => {
                map.serialize_entry("step", "request_memory")?;
                map.serialize_entry("device", &device.to_string())?;
                map.serialize_entry("mode", mode)?;
            }
            Self::ReloadDriver => map.serialize_entry("step", "reload_driver")?,
            Self::SetCompute { device, mode } => {
                map.serialize_entry("step", "set_compute")?;
                map.serialize_entry("device", &device.to_string())?;
                map.serialize_entry("mode", mode)?;
            }
        }
        map.serialize_entry("message", &self.to_string())?;
        map.end()
    }
}

/// Why an AMD plan takes no step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AmdRefusal {
    /// The kernel does not run this compute partition with this memory partition.
    #[error(
        "{device}: {compute} with {memory} is refused by the kernel: {compute} runs with {} \
         (aqua_vanjaram.c; a GPU has no more memory partitions than compute partitions)",
        list(layout_model::amd::memory_modes(*compute))
    )]
    Incompatible {
        /// The GPU.
        device: Bdf,
        /// The compute partition asked for.
        compute: ComputePartition,
        /// The memory partition asked for.
        memory: MemoryPartition,
    },
    /// The GPU does not offer the memory partition (its part or VBIOS).
    #[error(
        "{device}: {wanted} is not offered: the GPU offers {} (available_memory_partition)",
        offered_memory(offered, *current)
    )]
    MemoryNotOffered {
        /// The GPU.
        device: Bdf,
        /// The mode asked for.
        wanted: MemoryPartition,
        /// What it offers (empty: one mode only, `current`).
        offered: Vec<MemoryPartition>,
        /// Its memory partition now.
        current: Option<MemoryPartition>,
    },
    /// The GPU does not offer the compute partition with its memory partition now.
    #[error(
        "{device}: {wanted} is not offered {}: it offers {} (available_compute_partition{})",
        with_memory.map_or_else(
            || "with its memory partition now".to_owned(),
            |memory| format!("once its memory partition is {memory}")
        ),
        if offered.is_empty() { "none".to_owned() } else { list(offered) },
        if with_memory.is_some() {
            " now, and __aqua_vanjaram_update_available_partition_mode for the memory partition \
             asked for"
        } else {
            ""
        }
    )]
    ComputeNotOffered {
        /// The GPU.
        device: Bdf,
        /// The mode asked for.
        wanted: ComputePartition,
        /// What it offers (with the memory partition asked for, where that changes).
        offered: Vec<ComputePartition>,
        /// The memory partition asked for, where it changes (what it offers then follows the
        /// kernel's rule from what it offers now); `None`: with its memory partition now.
        with_memory: Option<MemoryPartition>,
    },
    /// Two GPUs of one hive are asked for different memory partitions; a request applies to
    /// every GPU of the hive.
    #[error(
        "{device} and {other} are in one XGMI hive ({hive}) and are asked for {wanted} and \
         {other_wanted}: a memory partition is the whole hive's"
    )]
    HiveSplit {
        /// The hive.
        hive: u64,
        /// One GPU.
        device: Bdf,
        /// Its memory partition asked for.
        wanted: MemoryPartition,
        /// Another.
        other: Bdf,
        /// Its memory partition asked for.
        other_wanted: MemoryPartition,
    },
    /// A GPU of the hive the layout leaves out would be changed by the hive's request.
    #[error(
        "{device} is asked for {wanted}, which its XGMI hive ({hive}) takes whole, and {left} \
         of the hive is in {} and not in the layout",
        left_memory.map_or_else(|| "no known memory partition".to_owned(), |m| m.to_string())
    )]
    HiveMemberLeft {
        /// The hive.
        hive: u64,
        /// The GPU asked for the change.
        device: Bdf,
        /// The mode asked for.
        wanted: MemoryPartition,
        /// The member left out.
        left: Bdf,
        /// Its memory partition now.
        left_memory: Option<MemoryPartition>,
    },
    /// A memory partition requested of the GPU waits for a driver reload, for another mode than
    /// wanted, while the GPU is already in the wanted one: the kernel keeps the request (a write
    /// of the mode the GPU is in does not take it back), and the next reload would carry it out.
    #[error(
        "{device}: memory partition {requested} was requested and waits for a driver reload, and \
         the layout wants {wanted}, which the GPU is in now: the kernel keeps the request (writing \
         the mode it is in does not take it back: current_memory_partition_store), so the next \
         reload would make it {requested}; reload the driver first, then apply"
    )]
    RequestPending {
        /// The GPU.
        device: Bdf,
        /// The mode requested.
        requested: MemoryPartition,
        /// The mode wanted (and held).
        wanted: MemoryPartition,
    },
    /// A GPU the plan writes (or every GPU, for a reload) is in use.
    #[error("{device} is in use: {}", describe(holders))]
    InUse {
        /// The GPU.
        device: Bdf,
        /// Who holds it.
        holders: Vec<Holder>,
        /// Whether it is held only against the driver's reload (the layout leaves it alone).
        for_reload: bool,
    },
}

impl AmdRefusal {
    /// The reason an apply it refuses is blocked with: `gpu_busy` for a GPU in use,
    /// `memory_request_pending` for a request of ours waiting for another mode, else
    /// `layout_impossible`.
    pub fn reason(&self) -> crate::report::ApplyReason {
        use crate::report::ApplyReason;
        match self {
            Self::InUse { .. } => ApplyReason::GpuBusy,
            Self::RequestPending { .. } => ApplyReason::MemoryRequestPending,
            Self::Incompatible { .. }
            | Self::MemoryNotOffered { .. }
            | Self::ComputeNotOffered { .. }
            | Self::HiveSplit { .. }
            | Self::HiveMemberLeft { .. } => ApplyReason::LayoutImpossible,
        }
    }
}

impl AmdRefusal {
    /// The refusal as an impossible layout (`impossible` of the report), with its kind and the
    /// mode at fault; `None` for a GPU in use or a request pending, which are no layout's
    /// fault.
    pub fn impossible(&self) -> Option<crate::Impossible> {
        use crate::ImpossibleKind as Kind;
        let (device, kind, mode) = match self {
            Self::Incompatible {
                device,
                compute,
                memory,
            } => (
                *device,
                Kind::AmdIncompatible,
                format!("{compute}+{memory}"),
            ),
            Self::MemoryNotOffered { device, wanted, .. } => {
                (*device, Kind::AmdNotOffered, wanted.to_string())
            }
            Self::ComputeNotOffered { device, wanted, .. } => {
                (*device, Kind::AmdNotOffered, wanted.to_string())
            }
            Self::HiveSplit { device, wanted, .. }
            | Self::HiveMemberLeft { device, wanted, .. } => {
                (*device, Kind::AmdHive, wanted.to_string())
            }
            Self::RequestPending { .. } | Self::InUse { .. } => return None,
        };
        Some(crate::Impossible::new(
            device,
            Some(mode),
            kind,
            self.to_string(),
        ))
    }
}

fn offered_memory(offered: &[MemoryPartition], current: Option<MemoryPartition>) -> String {
    match (offered.is_empty(), current) {
        (false, _) => list(offered),
        (true, Some(current)) => format!("{current} only"),
        (true, None) => "none".to_owned(),
    }
}

/// The steps that bring the GPUs of `wants` to what each is wanted to be, given every AMD GPU
/// of the host (`cards`: a reload reaches them all, and a hive's request its every member),
/// after every check a write must wait for. None where every GPU holds what it is wanted to be.
/// A GPU of `wants` that `cards` lacks is the caller's to refuse.
pub fn plan_amd(
    cards: &[AmdCard<'_>],
    wants: &[(Bdf, AmdWant)],
) -> Result<Vec<AmdStep>, AmdRefusal> {
    let card = |device: Bdf| cards.iter().find(|card| card.device == device);
    let mut memory = Vec::new();
    let mut compute = Vec::new();
    for (device, want) in wants {
        let device = *device;
        let Some(card) = card(device) else {
            continue;
        };
        let read = card.partitions;
        if !layout_model::amd::runs_with(want.compute, want.memory) {
            return Err(AmdRefusal::Incompatible {
                device,
                compute: want.compute,
                memory: want.memory,
            });
        }
        if let Some(requested) = card.requested.filter(|mode| *mode != want.memory) {
            if read.memory == Some(want.memory) {
                return Err(AmdRefusal::RequestPending {
                    device,
                    requested,
                    wanted: want.memory,
                });
            }
        }
        let memory_changes = read.memory != Some(want.memory);
        if memory_changes {
            if !read.available_memory.contains(&want.memory) {
                return Err(AmdRefusal::MemoryNotOffered {
                    device,
                    wanted: want.memory,
                    offered: read.available_memory.clone(),
                    current: read.memory,
                });
            }
            memory.push(AmdStep::RequestMemory {
                device,
                mode: want.memory,
            });
        }
        // After a reload the driver sets the compute partition anew: it is set then, and must
        // be one the GPU offers once its new memory partition holds — refused now, before the
        // reload reaches every GPU of the host.
        if memory_changes || read.compute != want.compute {
            let offered = if memory_changes {
                offered_with(read, want.memory)
            } else {
                read.available_compute.clone()
            };
            if !offered.contains(&want.compute) {
                return Err(AmdRefusal::ComputeNotOffered {
                    device,
                    wanted: want.compute,
                    offered,
                    with_memory: memory_changes.then_some(want.memory),
                });
            }
            compute.push(AmdStep::SetCompute {
                device,
                mode: want.compute,
            });
        }
    }
    check_hives(cards, wants)?;
    let reload = !memory.is_empty();
    // Nothing a process uses may change: every GPU of the host for a reload, else each GPU set.
    for card in cards {
        let written = compute.iter().any(
            |step| matches!(step, AmdStep::SetCompute { device, .. } if *device == card.device),
        );
        if (reload || written) && !card.holders.is_empty() {
            return Err(AmdRefusal::InUse {
                device: card.device,
                holders: card.holders.to_vec(),
                for_reload: !written && reload,
            });
        }
    }
    let mut steps = memory;
    if reload {
        steps.push(AmdStep::ReloadDriver);
    }
    steps.extend(compute);
    Ok(steps)
}

/// The compute partitions a GPU will offer once its memory partition is `memory`: by the
/// kernel's rule (`__aqua_vanjaram_update_available_partition_mode`: the modes its XCC count
/// supports that run with the memory partition), for the XCC counts whose offering with the
/// memory partition now is what the GPU offers now (the sysfs files name no XCC count, and a
/// count its offering rules out is no candidate), those any of them offers: a mode none offers
/// is refused before the reload; where what it offers now fits two counts (DPX alone in NPS2:
/// 4 or 8 XCCs), a mode only one of them offers is left to the read after the reload. Where no
/// count fits (a VBIOS that offers less), what it offers now that runs with `memory`.
fn offered_with(read: &AmdPartitions, memory: MemoryPartition) -> Vec<ComputePartition> {
    use layout_model::amd::{offered, runs_with, xcc_candidates};
    let candidates = xcc_candidates(read);
    let Some((first, others)) = candidates
        .split_first()
        .filter(|_| !read.available_compute.is_empty())
    else {
        return read
            .available_compute
            .iter()
            .copied()
            .filter(|mode| runs_with(*mode, memory))
            .collect();
    };
    let mut all = offered(*first, memory);
    for xccs in others {
        for mode in offered(*xccs, memory) {
            if !all.contains(&mode) {
                all.push(mode);
            }
        }
    }
    all.sort();
    all
}

/// Every hive a memory request reaches ends in one memory partition: no two of its GPUs asked
/// for different ones, and none the layout leaves out in another.
fn check_hives(cards: &[AmdCard<'_>], wants: &[(Bdf, AmdWant)]) -> Result<(), AmdRefusal> {
    let hive_of = |device: Bdf| {
        cards
            .iter()
            .find(|card| card.device == device)
            .and_then(|card| card.partitions.hive)
    };
    for (device, want) in wants {
        let Some(hive) = hive_of(*device) else {
            continue;
        };
        for (other, other_want) in wants {
            if hive_of(*other) == Some(hive) && other_want.memory != want.memory {
                return Err(AmdRefusal::HiveSplit {
                    hive,
                    device: *device,
                    wanted: want.memory,
                    other: *other,
                    other_wanted: other_want.memory,
                });
            }
        }
        let changes = cards
            .iter()
            .find(|card| card.device == *device)
            .is_some_and(|card| card.partitions.memory != Some(want.memory));
        if !changes {
            continue;
        }
        for member in cards
            .iter()
            .filter(|card| card.partitions.hive == Some(hive))
        {
            let named = wants.iter().any(|(named, _)| *named == member.device);
            if !named && member.partitions.memory != Some(want.memory) {
                return Err(AmdRefusal::HiveMemberLeft {
                    hive,
                    device: *device,
                    wanted: want.memory,
                    left: member.device,
                    left_memory: member.partitions.memory,
                });
            }
        }
    }
    Ok(())
}
