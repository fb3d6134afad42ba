//! The machine's record of writes to its cards ([`CardWrites`]): every write this project makes
//! to a GPU — a batch of the helper's `apply`, a warm reset of any method — is recorded here,
//! under the host lock, before it starts ([`HostLock::record_write`]). An observation of the
//! cards (a sync's check of the declared layout) keeps where the record stood when it read them
//! ([`WriteMark`]); any write recorded since to a card it covers ends what it says of that card
//! ([`Ledger::since`]).
//!
//! The record sits beside the machine lock (`/run/gpu-host-probe/sys.writes` for root), so every
//! `Host` of the machine, whatever its state directory, writes and reads the same one (and over
//! the machine's own sysfs, whatever directory it names: one that is not the machine's is
//! refused, and its `Host::now` says the record cannot be read, [`crate::rendezvous`]); it is on
//! `/run`, so a reboot empties it, and an observation of an earlier boot is over anyway. Each
//! record has an identity of its own: a mark of another record (one removed and made again)
//! tells nothing of the writes since.

use crate::host::Host;
use crate::lock::HostLock;
use gpu_partition_types::Bdf;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The extension of the record's file, beside the machine lock's (`sys.lock`, `sys.writes`).
pub const WRITES_EXTENSION: &str = "writes";

/// What wrote to a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Writer {
    /// A batch of the partition helper's `apply` (a layout's steps: instances, the mode).
    HelperApply,
    /// A warm reset.
    WarmReset {
        /// The method, as its token (`metax`, `nvidia`, `pci`).
        method: String,
    },
    /// NVIDIA's `sriov-manage`: the GPU's virtual functions enabled or disabled (and its GPU
    /// instances wiped by the rebind).
    SriovManage {
        /// Enabled (`-e`), else disabled (`-d`).
        enable: bool,
    },
    /// A virtual function's vGPU type written (`current_vgpu_type`).
    VgpuType {
        /// The VF's number.
        index: u32,
    },
    /// An AMD GPU's compute partition written (`current_compute_partition`): it changes at
    /// once.
    AmdComputePartition,
    /// An AMD GPU's memory partition requested (`current_memory_partition`): a request for its
    /// XGMI hive that a driver reload carries out.
    AmdMemoryPartition,
    /// A kernel module unloaded and loaded again (`modprobe -r`, `modprobe`): every GPU it
    /// drives is taken away and set up anew.
    DriverReload {
        /// The module (`amdgpu`).
        module: String,
    },
}

impl fmt::Display for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HelperApply => f.write_str("the partition helper's apply"),
            Self::WarmReset { method } => write!(f, "a warm reset ({method})"),
            Self::SriovManage { enable: true } => f.write_str("sriov-manage -e"),
            Self::SriovManage { enable: false } => f.write_str("sriov-manage -d"),
            Self::VgpuType { index } => {
                write!(f, "a vGPU type written to virtual function {index}")
            }
            Self::AmdComputePartition => f.write_str("a compute partition written"),
            Self::AmdMemoryPartition => f.write_str("a memory partition requested"),
            Self::DriverReload { module } => write!(f, "a reload of the {module} driver"),
        }
    }
}

/// One write, as the record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CardWrite {
    /// Its number in the record: one more than the write before it.
    pub seq: u64,
    /// What wrote (`by`, and a reset's `method`, in the file).
    #[serde(flatten)]
    pub by: Writer,
    /// When it started (Unix milliseconds; for people: the order is [`CardWrite::seq`]'s).
    pub at_unix_ms: u64,
}

impl CardWrite {
    /// Write number `seq` by `by`, started at `at_unix_ms`.
    pub fn new(seq: u64, by: Writer, at_unix_ms: u64) -> Self {
        Self {
            seq,
            by,
            at_unix_ms,
        }
    }
}

impl fmt::Display for CardWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {} (Unix time)", self.by, self.at_unix_ms / 1000)
    }
}

/// The record: the last write to each card, and the last one that named no card (it touched
/// every card of the machine).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CardWrites {
    /// This record's identity, made when its first write was recorded.
    pub ledger: String,
    /// The number of the last write recorded.
    pub seq: u64,
    /// The last write of each card, by address.
    #[serde(default)]
    pub devices: BTreeMap<Bdf, CardWrite>,
    /// The last write that named no card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<CardWrite>,
}

impl CardWrites {
    /// The record `ledger` at its write `seq`, with each card's last write and the last that
    /// named no card.
    pub fn new(
        ledger: impl Into<String>,
        seq: u64,
        devices: BTreeMap<Bdf, CardWrite>,
        machine: Option<CardWrite>,
    ) -> Self {
        Self {
            ledger: ledger.into(),
            seq,
            devices,
            machine,
        }
    }
}

/// Where the record stood when an observation was made (under the host lock, before the
/// cards were read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WriteMark {
    /// The record's identity; `None` when none existed yet (no write since the boot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<String>,
    /// The number of its last write then (0 with no record).
    pub seq: u64,
}

impl WriteMark {
    /// A mark as a store keeps it.
    pub fn new(ledger: Option<String>, seq: u64) -> Self {
        Self { ledger, seq }
    }
}

/// The record as it reads now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ledger {
    /// No write has been recorded (since the machine booted: the record lives on `/run`).
    Empty,
    /// The record.
    Read(CardWrites),
    /// The record did not read: nothing can be said of the writes since any mark.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why, for people.
        why: String,
    },
}

/// A write recorded since a mark, to a card an observation covers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WrittenSince {
    /// The card; `None` for a write that named no card (it touched them all).
    pub device: Option<Bdf>,
    /// The write.
    pub write: CardWrite,
}

impl fmt::Display for WrittenSince {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.device {
            Some(device) => write!(f, "{device} was written by {}", self.write),
            None => write!(f, "every card was written by {}", self.write),
        }
    }
}

/// What the record says of the writes since a mark ([`Ledger::since`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// None of the cards asked about was written.
    Unwritten,
    /// These were (in address order, a write that named no card last).
    Written(Vec<WrittenSince>),
    /// It cannot be told: why, for people (the record does not read, or it is another record
    /// than the mark's).
    CannotTell(String),
}

impl Ledger {
    /// Where the record stands now; `None` when it does not read.
    pub fn mark(&self) -> Option<WriteMark> {
        match self {
            Self::Empty => Some(WriteMark::new(None, 0)),
            Self::Read(writes) => Some(WriteMark::new(Some(writes.ledger.clone()), writes.seq)),
            Self::Unreadable { .. } => None,
        }
    }

    /// The writes recorded after `mark` to any of `devices` (a write that named no card counts
    /// for each).
    pub fn since(&self, mark: &WriteMark, devices: &[Bdf]) -> Since {
        let writes = match self {
            Self::Empty if mark.ledger.is_none() => return Since::Unwritten,
            Self::Empty => {
                return Since::CannotTell(
                    "the record of writes to the cards is gone since they were read".to_owned(),
                );
            }
            Self::Unreadable { path, why } => {
                return Since::CannotTell(format!(
                    "the record of writes to the cards {} does not read: {why}",
                    path.display()
                ));
            }
            Self::Read(writes) => writes,
        };
        let after = match &mark.ledger {
            // No record then: every write in this one came after.
            None => 0,
            Some(ledger) if *ledger == writes.ledger => mark.seq,
            Some(_) => {
                return Since::CannotTell(
                    "the record of writes to the cards was made anew since they were read"
                        .to_owned(),
                );
            }
        };
        let mut found: Vec<WrittenSince> = devices
            .iter()
            .filter_map(|device| {
                let write = writes.devices.get(device).filter(|w| w.seq > after)?;
                Some(WrittenSince {
                    device: Some(*device),
                    write: write.clone(),
                })
            })
            .collect();
        found.sort_by_key(|written| written.device);
        found.dedup();
        if let Some(write) = writes.machine.as_ref().filter(|w| w.seq > after) {
            found.push(WrittenSince {
                device: None,
                write: write.clone(),
            });
        }
        if found.is_empty() {
            Since::Unwritten
        } else {
            Since::Written(found)
        }
    }

    /// The record of the machine whose lock (or record) file is `path`'s sibling: read
    /// without following a link, only when it is this user's.
    pub fn read(path: &Path) -> Ledger {
        let unreadable = |why: String| Ledger::Unreadable {
            path: path.to_path_buf(),
            why,
        };
        match crate::fs::read_own(path) {
            Ok(None) => Ledger::Empty,
            Ok(Some(bytes)) => match serde_json::from_slice::<CardWrites>(&bytes) {
                Ok(writes) => Ledger::Read(writes),
                Err(error) => unreadable(error.to_string()),
            },
            Err(error) => unreadable(error.to_string()),
        }
    }
}

/// What a stored observation is judged against now: the boot the host runs and the record of
/// writes to its cards ([`Host::now`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Now {
    /// The boot now.
    pub boot: crate::Boot,
    /// The record now.
    pub writes: Ledger,
}

impl Now {
    /// The boot and record known now (an embedder that reads them another way; tests).
    pub fn new(boot: crate::Boot, writes: Ledger) -> Self {
        Self { boot, writes }
    }
}

/// The record of writes could not be kept: the write it was to record is not made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record could not be put into JSON.
    #[error("cannot encode the record of writes to the cards")]
    Encode(#[source] serde_json::Error),
    /// The record could not be written.
    #[error("cannot record a write to the cards")]
    Write(#[from] crate::fs::WriteError),
}

/// The record's file of the machine whose lock file is `machine_lock`.
pub(crate) fn ledger_path(machine_lock: &Path) -> PathBuf {
    machine_lock.with_extension(WRITES_EXTENSION)
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

impl HostLock {
    /// Records, before it starts, a write of `by` to `devices` (none named: every card of the
    /// machine). Every write of this project to a card records itself so (the helper's
    /// `apply`, a warm reset); an embedder that writes to a card another way records it too,
    /// so no observation made before says anything of the card after. A record that does not
    /// read is started anew (a mark of the old one then tells nothing: fail closed).
    pub fn record_write(&self, devices: &[Bdf], by: Writer) -> Result<(), RecordError> {
        // The machine lock keeps other processes out; this keeps the holder's threads apart.
        let _one = self
            .writes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = ledger_path(self.machine_path());
        let mut writes = match Ledger::read(&path) {
            Ledger::Read(writes) => writes,
            Ledger::Empty => fresh(),
            Ledger::Unreadable { path, why } => {
                tracing::warn!(
                    "the record of writes to the cards {} does not read ({why}); starting it anew",
                    path.display()
                );
                fresh()
            }
        };
        writes.seq = writes.seq.saturating_add(1);
        let write = CardWrite {
            seq: writes.seq,
            by,
            at_unix_ms: unix_ms(),
        };
        if devices.is_empty() {
            writes.machine = Some(write);
        } else {
            for device in devices {
                writes.devices.insert(*device, write.clone());
            }
        }
        let mut bytes = serde_json::to_vec_pretty(&writes).map_err(RecordError::Encode)?;
        bytes.push(b'\n');
        let (dir, name) = match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => (dir.to_path_buf(), name.to_string_lossy().into_owned()),
            _ => (PathBuf::from("."), path.to_string_lossy().into_owned()),
        };
        crate::fs::remove_stale_temporaries(&dir, &name);
        crate::fs::write_atomic(&dir, &name, &bytes)?;
        Ok(())
    }
}

/// A record with its own identity and no write yet.
fn fresh() -> CardWrites {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_nanos())
        .unwrap_or_default();
    CardWrites {
        ledger: format!("{nanos:x}-{:x}", std::process::id()),
        seq: 0,
        devices: BTreeMap::new(),
        machine: None,
    }
}

impl Host {
    /// The boot the host runs and the record of writes to its cards, now: what a stored
    /// observation of the cards is judged against.
    pub fn now(&self) -> Now {
        let writes = match crate::rendezvous::machine_lock(self) {
            Ok(lock) => Ledger::read(&ledger_path(&lock.path)),
            // The directory named is refused: no record there tells anything of the machine.
            Err(refused) => Ledger::Unreadable {
                path: ledger_path(&refused.path),
                why: crate::LockError::from(refused).to_string(),
            },
        };
        Now {
            boot: self.boot(),
            writes,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn record(ledger: &str, seq: u64, devices: &[(u8, u64)], machine: Option<u64>) -> Ledger {
        let write = |seq| CardWrite {
            seq,
            by: Writer::HelperApply,
            at_unix_ms: 1_767_229_200_000,
        };
        Ledger::Read(CardWrites {
            ledger: ledger.to_owned(),
            seq,
            devices: devices
                .iter()
                .map(|(b, s)| (Bdf::on_bus(*b), write(*s)))
                .collect(),
            machine: machine.map(write),
        })
    }

    #[test]
    fn a_write_after_the_mark_to_a_card_asked_about_is_written_and_others_are_not() {
        let ledger = record("a", 5, &[(1, 3), (2, 5)], None);
        let mark = WriteMark::new(Some("a".into()), 4);
        let found = match ledger.since(&mark, &[Bdf::on_bus(1), Bdf::on_bus(2)]) {
            Since::Written(found) => found,
            other => unreachable!("{other:?}"),
        };
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].device, Some(Bdf::on_bus(2)));
        assert_eq!(
            ledger.since(&mark, &[Bdf::on_bus(1), Bdf::on_bus(3)]),
            Since::Unwritten
        );
    }

    #[test]
    fn a_write_that_named_no_card_counts_for_every_card() {
        let ledger = record("a", 7, &[], Some(7));
        let mark = WriteMark::new(Some("a".into()), 6);
        let found = match ledger.since(&mark, &[Bdf::on_bus(9)]) {
            Since::Written(found) => found,
            other => unreachable!("{other:?}"),
        };
        assert_eq!(found[0].device, None);
    }

    #[test]
    fn a_mark_of_another_record_or_a_record_gone_or_unreadable_cannot_tell() {
        let mark = WriteMark::new(Some("a".into()), 1);
        for ledger in [
            record("b", 1, &[], None),
            Ledger::Empty,
            Ledger::Unreadable {
                path: "/run/x.writes".into(),
                why: "torn".into(),
            },
        ] {
            assert!(
                matches!(ledger.since(&mark, &[Bdf::on_bus(1)]), Since::CannotTell(_)),
                "{ledger:?}"
            );
        }
    }

    #[test]
    fn a_mark_taken_with_no_record_sees_every_write_of_the_record_made_since() {
        let mark = Ledger::Empty.mark().unwrap();
        assert_eq!(
            Ledger::Empty.since(&mark, &[Bdf::on_bus(1)]),
            Since::Unwritten
        );
        let ledger = record("c", 1, &[(1, 1)], None);
        assert!(matches!(
            ledger.since(&mark, &[Bdf::on_bus(1)]),
            Since::Written(_)
        ));
    }
}
