//! A toolstack's start-up, composed from the crates as a toolstack composes them (what to copy):
//!
//! 1. Its own state store: the host fields and the GPU records as rows of text columns in its
//!    own database (here a map in memory behind a mutex, standing for SQLite), rebuilt from
//!    the stored fields on load, each value parsed back and refused when it does not read. It
//!    passes the conformance suite of `host-sync` (`cargo test -p examples --example
//!    toolstack-startup`).
//! 2. After its database sync, the host sync on a thread of its own, with boot detection (the
//!    sync reads the boot id from the host's procfs itself), while the toolstack starts its
//!    other services; then the store back, with the report.
//! 3. The why of every failed read, next to its reason token.
//! 4. A warm reset of the same `Host` (the real nvidia method, its `nvidia-smi` absent here):
//!    tried while the sync holds the host lock it is blocked (`lock_busy`, naming the holder),
//!    since both take the machine's one lock; tried after, it goes past the lock to its own
//!    preflight. A simulated reset runs on a simulated host of its own, never on the machine's
//!    lock. Each end is matched without a catch-all.
//! 5. The declared MIG layout restored at start, after the sync, on a thread of its own: on an
//!    H100 (the real helper over the fake NVML) a layout was applied before the host rebooted,
//!    which destroyed its instances and, on Hopper, its MIG mode; the sync at start says
//!    `entering (layout_drifted)` with every difference, and `mig_layout::restore` brings the
//!    card back by diff, recorded in the toolstack's own store.
//!
//! ```text
//! cargo run -p examples --example toolstack-startup                 # a built host, 2 GPUs
//! cargo run -p examples --example toolstack-startup -- /sys HELPER  # this host's sysfs
//! ```

use gpu_host_probe::Host;
use gpu_host_probe::SystemClock;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::test_util::{Act, FakeHelper};
use gpu_partition_types::{Bdf, PartitionMode};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{
    AfterBoot, Boot, Direction, GpuReason, GpuRecord, HostState, HostStatus, LayoutOutcome,
    LayoutRecord, StateStore, StoreError, StoredReason, SyncOptions, spawn_sync,
};
use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use warm_reset::sim::SimMetax;
use warm_reset::{MachineConfig, ResetOutcome, ResetRun, execute};

/// The GPU operator's `all-balanced` layout, as published (H100 80GB among others).
const ALL_BALANCED: &str =
    include_str!("../mig-layout/tests/data/mig-parted/gpu-operator-h100-excerpt.yaml");

/// The toolstack's database: a host row and a table of GPU rows, every column text.
#[derive(Debug, Default)]
struct Tables {
    host: Option<BTreeMap<&'static str, String>>,
    gpus: BTreeMap<String, BTreeMap<&'static str, String>>,
}

/// A store over the database; clones share it (as connections to one database do).
#[derive(Debug, Clone, Default)]
struct DbStore {
    db: Arc<Mutex<Tables>>,
}

/// An optional column: absent or empty is `None`.
fn optional(row: &BTreeMap<&'static str, String>, column: &str) -> Option<String> {
    row.get(column).filter(|value| !value.is_empty()).cloned()
}

/// A column parsed back, or a clear error naming what it stands for.
fn parsed<T>(
    row: &BTreeMap<&'static str, String>,
    column: &str,
    what: &str,
) -> Result<T, StoreError>
where
    T: FromStr,
    T::Err: Error + Send + Sync + 'static,
{
    let value = row.get(column).cloned().unwrap_or_default();
    value
        .parse()
        .map_err(|error| StoreError::unknown_value(what, value, error))
}

fn gpu_row(record: &GpuRecord) -> Result<BTreeMap<&'static str, String>, StoreError> {
    let text = |value: Option<String>| value.unwrap_or_default();
    Ok(BTreeMap::from([
        // Integer columns: the IDs are numbers, not text.
        ("vendor", record.vendor.to_string()),
        ("device", record.device.to_string()),
        ("driver", text(record.driver.clone())),
        ("partition_mode", record.partition_mode.to_string()),
        (
            "reason",
            text(record.reason.as_ref().map(ToString::to_string)),
        ),
        ("message", text(record.message.clone())),
        (
            "last_read",
            text(record.last_read.map(|mode| mode.to_string())),
        ),
        // An AMD GPU's partitions as last read and a memory request waiting for a reload
        // (schema 5): one JSON column.
        ("amd", json_text(record.amd.as_ref())?),
        // Its partitions as last read, with the layout's generation (schema 7): one JSON
        // column.
        ("division", json_text(record.division.as_ref())?),
        // An NVIDIA GPU's architecture as its last read gave it (schema 10): NVML's number.
        ("architecture", json_text(record.architecture.as_ref())?),
    ]))
}

fn gpu_record(bdf: &str, row: &BTreeMap<&'static str, String>) -> Result<GpuRecord, StoreError> {
    let mode: PartitionMode = parsed(row, "partition_mode", &format!("the mode of {bdf}"))?;
    let mut record = GpuRecord::new(
        parsed(row, "vendor", &format!("the vendor ID of {bdf}"))?,
        parsed(row, "device", &format!("the device ID of {bdf}"))?,
        optional(row, "driver"),
        mode,
    );
    record.reason = match optional(row, "reason") {
        None => None,
        Some(_) => Some(parsed::<GpuReason>(
            row,
            "reason",
            &format!("the reason of {bdf}"),
        )?),
    };
    record.message = optional(row, "message");
    record.last_read = match optional(row, "last_read") {
        None => None,
        Some(_) => Some(parsed(
            row,
            "last_read",
            &format!("the last mode read of {bdf}"),
        )?),
    };
    record.amd = json_column(row, "amd", &format!("the AMD partitions of {bdf}"))?;
    record.division = json_column(row, "division", &format!("the partitions of {bdf}"))?;
    record.architecture = json_column(row, "architecture", &format!("the architecture of {bdf}"))?;
    Ok(record)
}

/// The last layout apply from its columns: the outcome and its reason read back together.
fn layout_record(
    host: &BTreeMap<&'static str, String>,
    label: String,
) -> Result<LayoutRecord, StoreError> {
    let column = |name: &str| host.get(name).map_or("", String::as_str);
    let direction: Direction = parsed(host, "layout_direction", "the layout's direction")?;
    let outcome = LayoutOutcome::from_columns(column("layout_outcome"), column("layout_reason"))
        .map_err(|error| {
            StoreError::unknown_value("the layout's outcome", column("layout_outcome"), error)
        })?;
    let finished_at = match optional(host, "layout_finished_at") {
        None => None,
        Some(_) => Some(parsed(host, "layout_finished_at", "when the layout ended")?),
    };
    let unhealed = match optional(host, "layout_unhealed") {
        None => None,
        Some(text) => Some(serde_json::from_str(&text).map_err(|error| {
            StoreError::unknown_value("the layout's unhealed failure", text.clone(), error)
        })?),
    };
    Ok(LayoutRecord::stored(
        label,
        direction,
        outcome,
        optional(host, "layout_message"),
        parsed(host, "layout_started_at", "when the layout started")?,
        finished_at,
        unhealed,
    ))
}

/// A JSON column: empty for none.
fn json_column<T: serde::de::DeserializeOwned>(
    host: &BTreeMap<&'static str, String>,
    column: &str,
    what: &str,
) -> Result<Option<T>, StoreError> {
    match optional(host, column) {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|error| StoreError::unknown_value(what, text.clone(), error)),
    }
}

/// A value as its JSON column: empty for none.
fn json_text<T: serde::Serialize>(value: Option<&T>) -> Result<String, StoreError> {
    match value {
        None => Ok(String::new()),
        Some(value) => serde_json::to_string(value)
            .map_err(|error| StoreError::backend("the toolstack database", error)),
    }
}

impl StateStore for DbStore {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        let db = self
            .db
            .lock()
            .map_err(|_| StoreError::backend("the toolstack database", "a writer panicked"))?;
        let Some(host) = &db.host else {
            return Ok(None);
        };
        let status: HostStatus = parsed(host, "status", "the host status")?;
        let reason =
            StoredReason::new(host.get("reason").map_or("", String::as_str)).map_err(|error| {
                StoreError::unknown_value("the host reason", error.0.clone(), error)
            })?;
        let mut state = HostState::new(status, reason);
        state.message = optional(host, "message");
        let boot_time = match optional(host, "boot_time") {
            None => None,
            Some(_) => Some(parsed::<u64>(host, "boot_time", "the boot time")?),
        };
        state.boot = Boot::new(optional(host, "boot_id"), boot_time);
        state.synced_at = match optional(host, "synced_at") {
            None => None,
            Some(_) => Some(parsed(host, "synced_at", "the time of the last sync")?),
        };
        // The last layout apply, from its columns (the failure it left unhealed, if any, as
        // one JSON column).
        state.layout = match optional(host, "layout_label") {
            None => None,
            Some(label) => Some(layout_record(host, label)?),
        };
        // What the host is declared to be, with its last check; a state that was lost; the last
        // boot restore: one JSON column each (the schema 2 members: a store written before
        // them fails the conformance suite, which names the member).
        state.declared = json_column(host, "declared", "the declared layout")?;
        state.lost = json_column(host, "lost", "the lost state")?;
        state.restored_at_boot = json_column(host, "restored_at_boot", "the last boot restore")?;
        state.ownership = json_column(host, "ownership", "who owns each GPU")?.unwrap_or_default();
        for (bdf, row) in &db.gpus {
            let address: Bdf = bdf.parse().map_err(|error| {
                StoreError::unknown_value("a GPU's address", bdf.clone(), error)
            })?;
            state.gpus.insert(address, gpu_record(bdf, row)?);
        }
        Ok(Some(state))
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        let text = |value: Option<String>| value.unwrap_or_default();
        let host = BTreeMap::from([
            ("status", state.status.to_string()),
            ("reason", state.reason.to_string()),
            ("message", text(state.message.clone())),
            ("boot_id", text(state.boot.boot_id.clone())),
            (
                "boot_time",
                text(state.boot.boot_time.map(|t| t.to_string())),
            ),
            ("synced_at", text(state.synced_at.map(|t| t.to_string()))),
            (
                "layout_unhealed",
                match state.layout.as_ref().and_then(|l| l.unhealed.as_ref()) {
                    None => String::new(),
                    Some(failure) => serde_json::to_string(failure)
                        .map_err(|error| StoreError::backend("the toolstack database", error))?,
                },
            ),
            ("declared", json_text(state.declared.as_ref())?),
            ("lost", json_text(state.lost.as_ref())?),
            (
                "restored_at_boot",
                json_text(state.restored_at_boot.as_ref())?,
            ),
            // Who owns each GPU not ours (schema 9): one JSON column, empty when all are.
            (
                "ownership",
                json_text(Some(&state.ownership).filter(|owners| !owners.is_empty()))?,
            ),
        ]);
        let mut host = host;
        if let Some(layout) = &state.layout {
            host.extend([
                ("layout_label", layout.label.clone()),
                ("layout_direction", layout.direction.to_string()),
                ("layout_outcome", layout.outcome.as_str().to_owned()),
                (
                    "layout_reason",
                    text(layout.outcome.reason().map(ToString::to_string)),
                ),
                ("layout_message", text(layout.message.clone())),
                ("layout_started_at", layout.started_at.to_string()),
                (
                    "layout_finished_at",
                    text(layout.finished_at.map(|t| t.to_string())),
                ),
            ]);
        }
        let gpus = state
            .gpus
            .iter()
            .map(|(bdf, record)| Ok((bdf.to_string(), gpu_row(record)?)))
            .collect::<Result<_, StoreError>>()?;
        // One transaction: both tables are replaced together, or neither.
        let mut db = self
            .db
            .lock()
            .map_err(|_| StoreError::backend("the toolstack database", "a writer panicked"))?;
        *db = Tables {
            host: Some(host),
            gpus,
        };
        Ok(())
    }
}

/// The host to run on: this host's sysfs and a helper given on the command line, or a built one
/// with two NVIDIA GPUs, the second of which the helper cannot read.
fn host(work: &std::path::Path) -> Result<(Host, Helper), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let state = work.join("state");
    if let (Some(sysfs), Some(helper)) = (args.next(), args.next()) {
        let host = Host::new(state).with_sysfs_root(sysfs);
        return Ok((host, Helper::new(HelperConfig::new(PathBuf::from(helper)))));
    }
    let sysfs = FakeSysfs::new(work.join("sys"))?;
    sysfs.nvidia("0000:3b:00.0", Some("nvidia"))?;
    sysfs.nvidia("0000:3c:00.0", Some("nvidia"))?;
    let helper = FakeHelper::new(work)
        .on(
            "0000:3c:00.0",
            Act::Shell("echo 'NVML: Driver/library version mismatch' >&2; exit 9".to_owned()),
        )
        // Slow enough that the reset below meets the sync holding the lock.
        .every_read(Act::Sleep(Duration::from_millis(300)))
        .write()?;
    // A built host: its machine lock is kept beside its tree, never among the machine's.
    let host = Host::new(state).with_sysfs_root(sysfs.root());
    Ok((host, Helper::new(HelperConfig::new(helper))))
}

/// An operator's warm reset of GPU 0 by the nvidia method (here without `nvidia-smi`).
fn reset(host: &Host) -> Result<(), Box<dyn Error>> {
    let mut backend = warm_reset::NvidiaSmiBackend::of(warm_reset::nvidia::NvidiaSmiHost::new(
        Some(PathBuf::from("/nonexistent/nvidia-smi")),
        host.proc_root(),
        "/dev/null",
    ));
    let config =
        MachineConfig::new(warm_reset::ResetTarget::index(0)).method(warm_reset::Method::Nvidia);
    show(&execute(ResetRun::new(&config, host, &mut backend))?);
    Ok(())
}

/// A warm reset of a simulated MetaX host: it runs on the simulation's own lock and journal.
fn reset_simulated(host: &Host) -> Result<(), Box<dyn Error>> {
    let clock = Arc::new(SystemClock::new());
    let mut sim = SimMetax::new(clock.clone(), &[2, 2]);
    sim.host_mut().reset_duration = Duration::from_millis(50);
    let config = MachineConfig::new(warm_reset::ResetTarget::index(0));
    print!("simulated ");
    show(&execute(
        ResetRun::new(&config, host, &mut sim).clock(clock.as_ref()),
    )?);
    Ok(())
}

/// A reset's end, matched without a catch-all.
fn show(report: &warm_reset::ResetReport) {
    match report.outcome {
        ResetOutcome::Done => println!("reset: done; {} GPU(s) verified", report.verified.len()),
        ResetOutcome::DryRun => println!("reset: dry run, nothing was reset"),
        ResetOutcome::Blocked(reason) => {
            println!(
                "reset: blocked ({reason}), nothing changed: {}",
                report.detail
            )
        }
        ResetOutcome::ColdRebootRequired(reason) => {
            println!("reset: cold-reboot this host ({reason}): {}", report.detail)
        }
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let work = tempfile::tempdir()?;
    let (host, helper) = host(work.path())?;
    let store = DbStore::default();

    // 1. The toolstack's own database sync happens first (not shown).
    // 2. The host sync on its own thread. `AfterBoot::Auto`: the sync reads the boot from the
    //    host's procfs and compares it with the one in the store.
    let handle = spawn_sync(
        host.clone(),
        helper,
        store,
        SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Auto),
    )?;
    // 3. Meanwhile the toolstack starts its other services, and an operator asks for a reset:
    //    the sync holds the host lock, so the reset is blocked, not run inside the read.
    println!("toolstack: other services started while the host sync runs");
    std::thread::sleep(Duration::from_millis(100));
    reset(&host)?;
    // 4. The report, and the store back.
    let done = handle.join()?;
    let report = done.result?;
    println!(
        "host sync: {} ({}), after boot: {}",
        report.status, report.reason, report.after_boot
    );
    for (bdf, gpu) in &report.gpus {
        let reason = gpu
            .reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        println!("  {bdf}  {}{reason}", gpu.partition_mode);
        if let Some(why) = &gpu.message {
            println!("    why: {why}");
        }
    }
    let mut store = done.store;
    let stored = store.load()?;
    println!(
        "stored: {} GPU record(s), boot id {}",
        stored.as_ref().map_or(0, |state| state.gpus.len()),
        stored
            .as_ref()
            .and_then(|state| state.boot.boot_id.as_deref())
            .unwrap_or("(none)")
    );
    // 5. With the sync done, the reset goes past the lock (to its own preflight); a simulated
    //    reset runs on a machine of its own.
    reset(&host)?;
    reset_simulated(&host)?;
    // 6. The declared layout, restored at start on its own thread.
    restore_at_start(work.path())?;
    Ok(())
}

/// The declared layout restored at start, as a toolstack writes it: every name from one
/// import path, `mig_layout`.
fn restore(
    host: &mig_layout::Host,
    helper: &mig_layout::Helper,
    store: &mut dyn mig_layout::StateStore,
) -> Result<(), String> {
    use mig_layout::{ApplyOptions, ApplyRun, Method, NvidiaSmiBackend, Pool, ResetWith, Restore};
    let mut backend = NvidiaSmiBackend::of(warm_reset::nvidia::NvidiaSmiHost::new(
        None,
        host.proc_root(),
        "/dev/kmsg",
    ));
    let reset = ResetWith::new(Method::Nvidia, &mut backend);
    let run = ApplyRun::new(host, helper, store, reset);
    match mig_layout::restore(run, &ApplyOptions::new(Pool::Enabled)).map_err(|e| e.to_string())? {
        Restore::NothingDeclared => println!("restore: nothing declared"),
        Restore::StateLost(lost) => return Err(format!("restore: {lost}")),
        Restore::AlreadyRanThisBoot(earlier) => {
            println!("restore: already ran in this boot, at {}", earlier.at);
        }
        Restore::Ran(report) => println!(
            "restore of {}: {}, {} write(s); host {}",
            report.label,
            report.outcome,
            report.writes(),
            report
                .host
                .as_ref()
                .map(|host| format!("{} ({})", host.status, host.reason))
                .unwrap_or_default()
        ),
    }
    Ok(())
}

/// An H100 whose declared layout a reboot undid: the sync at start sees the drift, the
/// restore on the start-up thread brings it back.
fn restore_at_start(work: &std::path::Path) -> Result<(), Box<dyn Error>> {
    use mig_layout::{ApplyOptions, ApplyRun, Document, Method, NvidiaSmiBackend, ResetWith};
    let dir = work.join("h100");
    let sysfs = FakeSysfs::new(dir.join("sys"))?;
    sysfs.function(
        "0000:3b:00.0",
        "0x10de",
        "0x2330",
        "0x030200",
        Some("nvidia"),
    )?;
    let proc = fake_nvml::support::ProcRoot::booted(
        dir.join("proc"),
        "11111111-2222-3333-4444-555555555555",
    )?;
    let proc_root = proc.path();
    let nvml = dir.join("nvml");
    std::fs::create_dir_all(&nvml)?;
    let scenario =
        fake_nvml::support::scenario_of(&[("0000:3b:00.0", fake_nvml::scenarios::H100_MIG_OFF)])?;
    let (wrapper, state) = fake_nvml::support::stateful_helper_wrapper(&nvml, &scenario, None)?;
    let host = mig_layout::Host::new(dir.join("state"))
        .with_sysfs_root(sysfs.root())
        .with_proc_root(proc_root);
    let helper = mig_layout::Helper::new(mig_layout::HelperConfig::new(wrapper));
    let mut store = DbStore::default();
    // Before the restart: the toolstack applied `all-balanced` (a Hopper part changes its mode
    // at once, so no reset is needed; the backend is the real one, and not called).
    let mut backend = NvidiaSmiBackend::of(warm_reset::nvidia::NvidiaSmiHost::new(
        None,
        proc_root,
        dir.join("kmsg"),
    ));
    let specs = Document::from_text(ALL_BALANCED)?
        .label("all-balanced")
        .ok_or("no all-balanced")?
        .to_vec();
    let reset = ResetWith::new(Method::Nvidia, &mut backend);
    let applied = mig_layout::apply(
        ApplyRun::new(&host, &helper, &mut store, reset),
        "all-balanced",
        &specs,
        &ApplyOptions::new(mig_layout::Pool::Enabled),
    )?;
    println!("before the restart: all-balanced {}", applied.outcome);
    // The host reboots: a new boot id, and the card as a reboot leaves it.
    fake_nvml::support::reboot(
        &fake_nvml::StateFile::new(&state),
        &proc,
        "99999999-2222-3333-4444-555555555555",
    )?;
    // At start, after the database sync, on its own thread: the host sync, then the restore.
    let judge = host.clone();
    let start = std::thread::spawn(move || -> Result<DbStore, String> {
        let report = host_sync::sync(
            &host,
            &helper,
            &mut store,
            &SyncOptions::new(host_sync::Pool::Enabled, AfterBoot::Auto),
        )
        .map_err(|error| error.to_string())?;
        println!(
            "host sync after the reboot: {} ({}), {} difference(s) from the declared layout",
            report.status,
            report.reason,
            report.drift.len()
        );
        restore(&host, &helper, &mut store)?;
        Ok(store)
    });
    let mut store = start.join().map_err(|_| "the start-up thread panicked")??;
    let holds = store
        .load()?
        .and_then(|state| state.declared)
        .map(|declared| {
            // Judged now: this boot, and the machine's record of writes to its cards.
            declared.holding(&judge.now()).state().to_string()
        });
    println!("declared layout, in the toolstack's store: {holds:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn the_database_store_passes_the_conformance_suite() {
        let store = DbStore::default();
        if let Err(failure) = host_sync::conformance::check_store(|| store.clone()) {
            panic!("{failure}");
        }
    }

    #[test]
    fn a_mode_the_database_holds_that_this_version_does_not_read_is_an_error_naming_it() {
        let mut store = DbStore::default();
        let mut state = HostState::new(HostStatus::Active, StoredReason::default());
        state.gpus.insert(
            Bdf::parse_canonical("0000:3b:00.0").unwrap(),
            GpuRecord::new(0x10de, 0x2335, None, PartitionMode::Enabled),
        );
        store.save(&state).unwrap();
        if let Some(row) = store.db.lock().unwrap().gpus.get_mut("0000:3b:00.0") {
            row.insert("partition_mode", "half_enabled".to_owned());
        }
        let error = store.load().unwrap_err().to_string();
        assert_eq!(
            error,
            "the state store holds \"half_enabled\" as the mode of 0000:3b:00.0, which this \
             version does not read"
        );
    }
}
