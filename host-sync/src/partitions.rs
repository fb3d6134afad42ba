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
use layout_model::{AfterRestart, Card, Declaration, DeclaredGpu, DivisionAfterRestart, Placed};
use std::collections::BTreeMap;

/// What a sync read, for the divisions it keeps.
pub(crate) struct Reads<'a> {
    /// The GPUs found.
    pub gpus: &'a [PciFunction],
    /// Each NVIDIA card read whole.
    pub replies: &'a BTreeMap<Bdf, Box<Reply>>,
    /// What each AMD GPU's read showed.
    pub amd: &'a BTreeMap<Bdf, Result<Option<AmdPartitions>, AmdError>>,
    /// What the VFs of each NVIDIA card read whole hold (read once per sync).
    pub vfs: &'a BTreeMap<Bdf, layout_model::VfsRead>,
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
    (declared, not_ours): (
        Option<&Declaration>,
        &BTreeMap<Bdf, gpu_host_probe::Ownership>,
    ),
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
            Ok(Some((partitions, unadmitted))) => {
                let mut division = Division::after_read(
                    record.division.as_ref(),
                    *bdf,
                    partitions,
                    reads.at,
                    reads.now,
                );
                division.unadmitted = unadmitted;
                record.division = Some(division);
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

/// A GPU's partitions as a sync read them, and the declared GPU instances its card no longer
/// admits.
type ReadDivision = (Vec<Partition>, Vec<Placed>);

/// The partitions of one GPU as this sync read them, with the declared GPU instances the card
/// no longer admits (`layout_model::partition::unadmitted`); `Ok(None)` for a GPU that has none
/// to list (neither NVIDIA nor AMD, or an AMD GPU without partition files); `Err` with why when
/// they did not read.
fn read_partitions(
    bdf: Bdf,
    record: &GpuRecord,
    declared: Option<&DeclaredGpu>,
    reads: &Reads<'_>,
) -> Result<Option<ReadDivision>, String> {
    let unread = || not_read_why(record);
    if record.is_nvidia() {
        let reply = reads.replies.get(&bdf).ok_or_else(unread)?;
        let card = Card::of(reply).map_err(|unreadable| unreadable.to_string())?;
        let vfs = reads.vfs.get(&bdf).ok_or_else(unread)?;
        if let layout_model::VfsRead::Unreadable(why) = vfs {
            return Err(format!("its virtual functions did not read: {why}"));
        }
        let nvidia = declared.and_then(DeclaredGpu::nvidia);
        let rows = layout_model::partition::nvidia(&card, reply, Some(vfs), nvidia);
        let unadmitted = nvidia
            .map(|nvidia| layout_model::partition::unadmitted(&card, nvidia))
            .unwrap_or_default();
        return Ok(Some((rows, unadmitted)));
    }
    if record.is_amd() {
        return match reads.amd.get(&bdf) {
            Some(Ok(Some(held))) => {
                let amd = declared.and_then(DeclaredGpu::amd);
                layout_model::partition::amd(held, amd)
                    .map(|rows| Some((rows, Vec::new())))
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
    /// What a host restart keeps of an NVIDIA GPU and does to its division; `None` for an
    /// AMD GPU.
    pub restart: Option<GpuRestart>,
}

/// What a host restart keeps of one NVIDIA GPU and does to its recorded division.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct GpuRestart {
    /// What a restart keeps, from the architecture the GPU's last answered read gave
    /// ([`AfterRestart::of`]: unknown where the read did not say it).
    pub keeps: AfterRestart,
    /// What it does to the division ([`AfterRestart::division`]): whether it comes back by
    /// itself, what the boot restore redoes, and whether that needs a reset.
    pub division: DivisionAfterRestart,
}

/// What a restart keeps of a GPU and does to its division, by `layout_model`'s rule: NVIDIA
/// GPUs only (the rule is NVIDIA's facts); the MIG mode to hold is the one read (on, or on
/// after the next reset), unknown where the mode was not read.
fn after_restart(record: &GpuRecord) -> Option<GpuRestart> {
    if !record.is_nvidia() {
        return None;
    }
    let mig_on = match record.partition_mode {
        PartitionMode::Enabled | PartitionMode::EnableOnReboot => Some(true),
        PartitionMode::Disabled | PartitionMode::DisableOnReboot | PartitionMode::NotSupported => {
            Some(false)
        }
        PartitionMode::Unknown
        | PartitionMode::PossiblyEnabled
        | PartitionMode::NotChecked
        | PartitionMode::NotInUse => None,
    };
    let holds_partitions = record
        .division
        .as_ref()
        .is_some_and(|division| !division.partitions.is_empty());
    let keeps = AfterRestart::of(record.architecture);
    Some(GpuRestart {
        keeps,
        division: keeps.division(mig_on, holds_partitions),
    })
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
            restart: after_restart(record),
        })
        .collect()
}

/// The host's partitions as `mxctl --json partition list` prints them, judged at `at` (Unix
/// seconds): `listed_at`, and `gpus`, each with `device`, `generation` (`null`: never read),
/// `read_at`, `age_s`, `stale` (whether the rows may no longer be what the GPU holds),
/// `because` (why, as a token: `never_read`, `not_read`, `earlier_boot`, `boot_untold`,
/// `written_since`, `writes_untold`; `null` while current), `why` (for people),
/// `requires_reset`, `unadmitted` (the declared GPU instances the card, as last read, no longer
/// admits, each `{profile_id, placement}`: they make `requires_reset` true), `partitions`
/// (`null` for a GPU never read; each with `slot`,
/// `profile`, `placement`, `on`, `compute`, `ordinal`, `origin`, `owner`), `architecture`
/// (the NVIDIA GPU's, `hopper`, `nvml:N` for a number not known, `null` when not known), and
/// `after_restart` (`null` for an AMD GPU): `mig_mode` (`kept`, `cleared`, `no_mig`,
/// `unknown`), `enabling_mig_needs_reset` (`needed`, `not_needed`, `no_mig`, `unknown`),
/// `instances_kept` and `vfs_kept` (false on every architecture), `comes_back` (whether the
/// division comes back by itself, with no restore and no reset; `null`: not known), `restore`
/// (what the boot restore redoes: `nothing`, `partitions`, `mode_and_partitions`, `unknown`)
/// and `needs_reset` (whether that needs a GPU reset; `null`: not known).
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
            unadmitted: &'a [Placed],
            partitions: Option<&'a [Partition]>,
            architecture: Option<String>,
            after_restart: Option<Restart>,
        }
        #[derive(serde::Serialize)]
        struct Restart {
            mig_mode: &'static str,
            enabling_mig_needs_reset: &'static str,
            instances_kept: bool,
            vfs_kept: bool,
            comes_back: Option<bool>,
            restore: &'static str,
            needs_reset: Option<bool>,
        }
        use gpu_partition_types::Token;
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
                unadmitted: gpu
                    .division
                    .as_ref()
                    .map_or(&[][..], |d| d.unadmitted.as_slice()),
                partitions: gpu.division.as_ref().map(|d| d.partitions.as_slice()),
                architecture: gpu
                    .restart
                    .and_then(|restart| restart.keeps.architecture)
                    .map(|architecture| architecture.to_string()),
                after_restart: gpu.restart.map(|GpuRestart { keeps, division }| Restart {
                    mig_mode: keeps.mig_mode.as_str(),
                    enabling_mig_needs_reset: keeps.enabling_mig_needs_reset.as_str(),
                    instances_kept: keeps.instances_kept,
                    vfs_kept: keeps.vfs_kept,
                    comes_back: division.comes_back,
                    restore: division.restore.as_str(),
                    needs_reset: division.needs_reset,
                }),
            })
            .collect();
        let mut document = serializer.serialize_struct("PartitionsReport", 2)?;
        document.serialize_field("listed_at", &self.at)?;
        document.serialize_field("gpus", &gpus)?;
        document.end()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use layout_model::{MigModeAfterRestart, Restore};

    /// The conformance suite's full state: its first GPU an NVIDIA one read as a Hopper with
    /// MIG on and a division; AMD GPUs beside it.
    fn listed() -> Vec<GpuPartitions> {
        let (_, state) = crate::conformance::states().remove(0);
        let now = Now::new(state.boot.clone(), gpu_host_probe::Ledger::Empty);
        partitions(&state, &now)
    }

    #[test]
    fn a_hopper_gpu_with_a_division_says_it_does_not_come_back_and_the_restore_turns_mig_on_again()
    {
        let listed = listed();
        let first = &listed[0];
        let restart = first.restart.unwrap();
        assert_eq!(restart.keeps.mig_mode, MigModeAfterRestart::Cleared);
        let after = restart.division;
        assert_eq!(
            (after.comes_back, after.restore, after.needs_reset),
            (Some(false), Restore::ModeAndPartitions, Some(false))
        );
    }

    #[test]
    fn a_gpu_whose_architecture_was_never_read_knows_only_that_its_partitions_do_not_come_back() {
        let listed = listed();
        // The second GPU has a division and no architecture recorded.
        let second = &listed[1];
        assert_eq!(second.restart.and_then(|r| r.keeps.architecture), None);
        assert_eq!(
            second
                .restart
                .map(|r| (r.division.comes_back, r.division.restore)),
            Some((Some(false), Restore::Unknown))
        );
    }

    #[test]
    fn an_amd_gpu_has_no_restart_answer_of_nvidia_s_rule() {
        let listed = listed();
        let amd: Vec<&GpuPartitions> = listed
            .iter()
            .filter(|gpu| {
                gpu.division.as_ref().is_some_and(|d| {
                    d.partitions.iter().any(|p| {
                        matches!(p.slot, layout_model::partition::Slot::AmdPartition { .. })
                    })
                })
            })
            .collect();
        assert!(!amd.is_empty());
        assert!(amd.iter().all(|gpu| gpu.restart.is_none()));
    }

    #[test]
    fn the_report_names_the_architecture_and_what_a_restart_does() {
        let listed = listed();
        let report = serde_json::to_value(PartitionsReport::new(&listed, 0)).unwrap();
        let first = &report["gpus"][0];
        assert_eq!(first["architecture"], "hopper");
        assert_eq!(
            first["after_restart"],
            serde_json::json!({
                "mig_mode": "cleared",
                "enabling_mig_needs_reset": "not_needed",
                "instances_kept": false,
                "vfs_kept": false,
                "comes_back": false,
                "restore": "mode_and_partitions",
                "needs_reset": false,
            })
        );
    }
}
