//! The host's partitions as rows, per GPU ([`partitions`]): what each GPU was last read to hold
//! ([`Division`]), with its layout generation, whether it waits for a reset, and — when the
//! last read may no longer be what it holds — why and since when (stale rows, never an empty
//! list). A sync keeps each GPU's division ([`record_divisions`]); the rows are built by
//! `layout_model::partition`'s rules.

use crate::gpu::GpuRecord;
use crate::pci::PciFunction;
use crate::state::HostState;
use gpu_host_probe::Now;
use gpu_host_probe::amdgpu::{AmdError, AmdPartitions};
use gpu_partition_types::{Bdf, PartitionMode, Reply};
use layout_model::partition::{Division, Partition, Stale, Unread};
use layout_model::{Card, Declaration, DeclaredGpu};
use std::collections::BTreeMap;
use std::path::Path;

/// What a sync read, for the divisions it keeps.
pub(crate) struct Reads<'a> {
    /// The GPUs found.
    pub gpus: &'a [PciFunction],
    /// Each NVIDIA card read whole.
    pub replies: &'a BTreeMap<Bdf, Box<Reply>>,
    /// What each AMD GPU's read showed.
    pub amd: &'a BTreeMap<Bdf, Result<Option<AmdPartitions>, AmdError>>,
    /// Where sysfs is (an NVIDIA GPU's virtual functions).
    pub sysfs_root: &'a Path,
    /// The boot and the record of writes as they stood before the cards were read.
    pub now: &'a Now,
    /// When (Unix seconds).
    pub at: u64,
}

/// Keeps each GPU's division after a sync's reads (a GPU not ours, its partitions all found,
/// none recorded): a GPU read whole gets its partitions now,
/// with its generation by `Division::after_read`'s rule; every other GPU that has one keeps
/// its last division, marked not read (with why): one whose partitions did not read, one the
/// scan could not read, one that shows none now.
pub(crate) fn record_divisions(
    records: &mut BTreeMap<Bdf, GpuRecord>,
    (declared, not_ours): (Option<&Declaration>, &BTreeMap<Bdf, crate::Ownership>),
    reads: &Reads<'_>,
) {
    for (bdf, record) in records.iter_mut() {
        let found = reads.gpus.iter().any(|gpu| gpu.bdf == *bdf);
        // A GPU not ours is divided by another: what is on it is found, none of it recorded.
        let declared = declared
            .filter(|_| !not_ours.contains_key(bdf))
            .and_then(|declared| declared.gpus.get(bdf));
        let read = if found {
            read_partitions(*bdf, record, declared, reads)
        } else {
            Err("the scan of the host's PCI devices did not read it".to_owned())
        };
        match read {
            Ok(Some(partitions)) => {
                record.division = Some(Division::after_read(
                    record.division.as_ref(),
                    *bdf,
                    partitions,
                    reads.at,
                    reads.now,
                ));
            }
            Ok(None) => {
                if let Some(division) = record.division.as_mut() {
                    division.not_read(Unread::new(reads.at, "it shows no partitions now"));
                }
            }
            Err(why) => {
                if let Some(division) = record.division.as_mut() {
                    division.not_read(Unread::new(reads.at, why));
                }
            }
        }
    }
}

/// The partitions of one GPU as this sync read them; `Ok(None)` for a GPU that has none to
/// list (neither NVIDIA nor AMD, or an AMD GPU without partition files); `Err` with why when
/// they did not read.
fn read_partitions(
    bdf: Bdf,
    record: &GpuRecord,
    declared: Option<&DeclaredGpu>,
    reads: &Reads<'_>,
) -> Result<Option<Vec<Partition>>, String> {
    let unread = || not_read_why(record);
    if record.is_nvidia() {
        let reply = reads.replies.get(&bdf).ok_or_else(unread)?;
        let card = Card::of(reply).map_err(|unreadable| unreadable.to_string())?;
        let vfs = crate::sriov::read_vf_types(reads.sysfs_root, bdf);
        if let layout_model::VfsRead::Unreadable(why) = &vfs {
            return Err(format!("its virtual functions did not read: {why}"));
        }
        let nvidia = declared.and_then(DeclaredGpu::nvidia);
        return Ok(Some(layout_model::partition::nvidia(
            &card,
            reply,
            Some(&vfs),
            nvidia,
        )));
    }
    if record.is_amd() {
        return match reads.amd.get(&bdf) {
            Some(Ok(Some(held))) => {
                let amd = declared.and_then(DeclaredGpu::amd);
                layout_model::partition::amd(held, amd)
                    .map(Some)
                    .map_err(|unknown| unknown.to_string())
            }
            Some(Ok(None)) => Ok(None),
            Some(Err(error)) => Err(gpu_host_probe::chain::Chain(error).to_string()),
            None => Err(unread()),
        };
    }
    Ok(None)
}

/// Why a GPU was not read, from its record: the read's failure, or the mode it was left in.
fn not_read_why(record: &GpuRecord) -> String {
    match (&record.message, record.partition_mode) {
        (Some(message), _) => message.clone(),
        (None, PartitionMode::NotChecked | PartitionMode::NotInUse) => format!(
            "the sync did not read it (partition mode {})",
            record.partition_mode
        ),
        (None, mode) => format!("its read gave no card (partition mode {mode})"),
    }
}

/// The sync did not read any GPU (the host takes no part): each division kept is marked not
/// read, so no surface shows it as current.
pub(crate) fn none_read(records: &mut BTreeMap<Bdf, GpuRecord>, at: u64, why: &str) {
    for division in records.values_mut().filter_map(|r| r.division.as_mut()) {
        division.not_read(Unread::new(at, why));
    }
}

/// One GPU's partitions as a toolstack lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GpuPartitions {
    /// The GPU.
    pub gpu: Bdf,
    /// What it was last read to hold, with the generation; `None`: never read.
    pub division: Option<Division>,
    /// Why the division may no longer be what the GPU holds; `None` while it is current (and
    /// when it was never read).
    pub stale: Option<Stale>,
    /// Whether the GPU waits for a reset before it holds what was asked of it
    /// ([`GpuRecord::requires_reset`]); `None`: not known.
    pub requires_reset: Option<bool>,
}

impl GpuPartitions {
    /// How old the division is at `at` (Unix seconds), in seconds; `None`: never read.
    pub fn age(&self, at: u64) -> Option<u64> {
        self.division
            .as_ref()
            .map(|division| at.saturating_sub(division.read_at))
    }
}

/// Every GPU of the host that has partitions to list (NVIDIA and AMD GPUs), in address order,
/// each with its division as last read and whether it is stale, judged against `now`. A GPU
/// that does not read keeps its last rows, marked stale: never an empty list in their place.
pub fn partitions(state: &HostState, now: &Now) -> Vec<GpuPartitions> {
    state
        .gpus
        .iter()
        .filter(|(_, record)| record.is_nvidia() || record.is_amd())
        .map(|(gpu, record)| GpuPartitions {
            gpu: *gpu,
            stale: record
                .division
                .as_ref()
                .and_then(|division| division.stale(*gpu, now)),
            division: record.division.clone(),
            requires_reset: record.requires_reset(),
        })
        .collect()
}

/// The host's partitions as `mxctl --json partition list` prints them, judged at `at` (Unix
/// seconds): `listed_at`, and `gpus`, each with `device`, `generation` (`null`: never read),
/// `read_at`, `age_s`, `stale` (whether the rows may no longer be what the GPU holds),
/// `because` (why, as a token: `never_read`, `not_read`, `earlier_boot`, `boot_untold`,
/// `written_since`, `writes_untold`; `null` while current), `why` (for people),
/// `requires_reset`, and `partitions` (`null` for a GPU never read; each with `slot`,
/// `profile`, `placement`, `on`, `compute`, `ordinal`, `origin`, `owner`).
#[derive(Debug, Clone, Copy)]
pub struct PartitionsReport<'a> {
    gpus: &'a [GpuPartitions],
    at: u64,
}

impl<'a> PartitionsReport<'a> {
    /// The report of `gpus` ([`partitions`]) at `at`.
    pub fn new(gpus: &'a [GpuPartitions], at: u64) -> Self {
        Self { gpus, at }
    }
}

impl GpuPartitions {
    /// Why the rows may not be what the GPU holds, as a token; `None` while they are current.
    pub fn because(&self) -> Option<layout_model::partition::StaleKind> {
        match (&self.division, &self.stale) {
            (None, _) => Some(layout_model::partition::StaleKind::NeverRead),
            (Some(_), stale) => stale.as_ref().map(Stale::kind),
        }
    }

    /// Why, for people; `None` while they are current.
    pub fn why(&self) -> Option<String> {
        match (&self.division, &self.stale) {
            (None, _) => Some("no sync has read its partitions yet".to_owned()),
            (Some(_), stale) => stale.as_ref().map(ToString::to_string),
        }
    }
}

impl serde::Serialize for PartitionsReport<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct Gpu<'a> {
            device: String,
            generation: Option<u64>,
            read_at: Option<u64>,
            age_s: Option<u64>,
            stale: bool,
            because: Option<&'static str>,
            why: Option<String>,
            requires_reset: Option<bool>,
            partitions: Option<&'a [Partition]>,
        }
        let gpus: Vec<Gpu<'_>> = self
            .gpus
            .iter()
            .map(|gpu| Gpu {
                device: gpu.gpu.to_string(),
                generation: gpu.division.as_ref().map(|d| d.generation),
                read_at: gpu.division.as_ref().map(|d| d.read_at),
                age_s: gpu.age(self.at),
                stale: gpu.because().is_some(),
                because: gpu.because().map(gpu_partition_types::Token::as_str),
                why: gpu.why(),
                requires_reset: gpu.requires_reset,
                partitions: gpu.division.as_ref().map(|d| d.partitions.as_slice()),
            })
            .collect();
        let mut document = serializer.serialize_struct("PartitionsReport", 2)?;
        document.serialize_field("listed_at", &self.at)?;
        document.serialize_field("gpus", &gpus)?;
        document.end()
    }
}
