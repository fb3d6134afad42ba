//! The sync over AMD Instinct GPUs: each GPU's partitions read from amdgpu's files (no helper
//! runs for them), its partition mode by the rules of `modes::amd_mode`, a memory request of
//! ours shown as pending until the reload lands it, and a declaration of partitions compared.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::amdgpu::AmdPartitions;
use gpu_host_probe::amdgpu::{ComputePartition as C, MemoryPartition as M};
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_partition_types::{Bdf, PartitionMode};
use host_sync::fake_amdgpu::{FakeAmdgpu, MI300X};
use host_sync::fake_sysfs::FakeSysfs;
use host_sync::{
    AfterBoot, AmdUnread, Boot, GpuReason, Host, HostReason, HostStatus, MemoryStore, Pool,
    StateStore, SyncOptions, modes, sync,
};
use layout_model::amd::AmdWant;
use layout_model::{Declaration, DeclaredGpu, DifferenceKind, Fact};

fn bdf(index: usize) -> String {
    format!("0000:{:02x}:00.0", 0x05 + index * 0x10)
}

fn at(index: usize) -> Bdf {
    bdf(index).parse().unwrap()
}

struct AmdHost {
    _dir: tempfile::TempDir,
    host: Host,
    fake: FakeAmdgpu,
    /// A helper that does not exist: any run of it would make the host `helper_unavailable`.
    helper: Helper,
}

/// A host of eight MI300X in one hive, in SPX/NPS1 as a driver load in NPS1 leaves them.
fn hive() -> AmdHost {
    let dir = tempfile::tempdir().unwrap();
    let sysfs = FakeSysfs::new(dir.path().join("sys")).unwrap();
    let mut fake = FakeAmdgpu::new(sysfs.clone());
    for index in 0..8 {
        fake.gpu(&bdf(index), MI300X, M::Nps1, Some(7)).unwrap();
    }
    let proc = dir.path().join("proc/sys/kernel/random");
    std::fs::create_dir_all(&proc).unwrap();
    std::fs::write(proc.join("boot_id"), "boot-1\n").unwrap();
    let host = Host::new(dir.path().join("state"))
        .with_sysfs_root(sysfs.root())
        .with_proc_root(dir.path().join("proc"))
        .with_lock_dir(dir.path().join("locks"));
    let helper = Helper::new(HelperConfig::new(dir.path().join("no-helper")));
    AmdHost {
        _dir: dir,
        host,
        fake,
        helper,
    }
}

impl AmdHost {
    /// GPU `index`'s driver set no compute mode: its file says `UNKNOWN`.
    fn no_mode(&self, index: usize) {
        std::fs::write(
            self.fake
                .sysfs()
                .device_dir(&bdf(index))
                .join("current_compute_partition"),
            "UNKNOWN\n",
        )
        .unwrap();
    }

    fn sync(&self, store: &mut MemoryStore) -> host_sync::SyncReport {
        sync(
            &self.host,
            &self.helper,
            store,
            &SyncOptions::new(Pool::Enabled, AfterBoot::No),
        )
        .unwrap()
    }
}

fn held(compute: C, memory: M) -> AmdPartitions {
    AmdPartitions::new((compute, Vec::new()), Some(memory), Vec::new(), None)
}

#[test]
fn an_amd_gpu_is_divided_by_more_than_one_compute_or_memory_partition() {
    let modes: Vec<PartitionMode> = [
        (C::Spx, M::Nps1),
        (C::Cpx, M::Nps1),
        (C::Dpx, M::Nps2),
        (C::Cpx, M::Nps4),
    ]
    .into_iter()
    .map(|(compute, memory)| modes::amd_mode(&held(compute, memory), None))
    .collect();
    assert_eq!(
        modes,
        [
            PartitionMode::Disabled,
            PartitionMode::Enabled,
            PartitionMode::Enabled,
            PartitionMode::Enabled
        ]
    );
}

#[test]
fn a_memory_request_that_changes_whether_the_gpu_is_divided_is_pending_as_a_mig_change_is() {
    assert_eq!(
        modes::amd_mode(&held(C::Spx, M::Nps1), Some(M::Nps4)),
        PartitionMode::EnableOnReboot
    );
    assert_eq!(
        modes::amd_mode(&held(C::Cpx, M::Nps4), Some(M::Nps1)),
        PartitionMode::DisableOnReboot
    );
    assert_eq!(
        modes::amd_mode(&held(C::Dpx, M::Nps2), Some(M::Nps4)),
        PartitionMode::Enabled
    );
}

#[test]
fn a_sync_reads_every_amd_gpu_from_sysfs_and_runs_no_helper() {
    let amd = hive();
    let mut store = MemoryStore::default();
    let report = amd.sync(&mut store);
    assert_eq!(
        (report.status, report.reason),
        (HostStatus::Active, HostReason::Ready)
    );
    for index in 0..8 {
        let gpu = &report.gpus[&at(index)];
        assert_eq!(gpu.partition_mode, PartitionMode::Disabled, "GPU {index}");
        let partitions = gpu.amd.as_ref().unwrap();
        assert_eq!(
            (
                partitions.compute,
                partitions.memory,
                partitions.requested.is_some()
            ),
            (Some(C::Spx), Some(M::Nps1), false)
        );
        assert!(partitions.read_at.is_some());
    }
}

#[test]
fn a_memory_request_of_ours_is_pending_until_the_reload_lands_it() {
    let mut amd = hive();
    let mut store = MemoryStore::default();
    amd.sync(&mut store);
    amd.fake.write_memory(&bdf(0), "NPS4\n").unwrap();
    let lock = amd.host.lock(std::time::Duration::ZERO).unwrap();
    let hive: Vec<Bdf> = (0..8).map(at).collect();
    // The run's clock stamps the request: 2027-01-15 08:00:00 UTC.
    let clock = gpu_host_probe::VirtualClock::new(1_800_000_000_000);
    host_sync::request_memory(&lock, &mut store, &clock, &hive, M::Nps4).unwrap();
    drop(lock);
    let pending = amd.sync(&mut store);
    let gpu = &pending.gpus[&at(3)];
    let request = gpu.amd.as_ref().and_then(|amd| amd.requested.as_ref());
    assert_eq!(request.map(|request| request.at), Some(1_800_000_000));
    assert_eq!(gpu.partition_mode, PartitionMode::EnableOnReboot);
    assert_eq!(gpu.requested_memory(), Some(M::Nps4));
    assert_eq!(
        (pending.status, pending.reason),
        (HostStatus::Entering, HostReason::GpusPending)
    );
    amd.fake.reload_driver().unwrap();
    let landed = amd.sync(&mut store);
    let gpu = &landed.gpus[&at(3)];
    assert_eq!(gpu.partition_mode, PartitionMode::Enabled);
    assert_eq!(gpu.requested_memory(), None);
    assert_eq!(gpu.amd.as_ref().unwrap().compute, Some(C::Cpx));
}

#[test]
fn a_memory_request_of_another_boot_ends_since_the_driver_that_held_it_is_gone() {
    let amd = hive();
    let mut store = MemoryStore::default();
    amd.sync(&mut store);
    let lock = amd.host.lock(std::time::Duration::ZERO).unwrap();
    let clock = gpu_host_probe::SystemClock::new();
    host_sync::request_memory(&lock, &mut store, &clock, &[at(0)], M::Nps4).unwrap();
    drop(lock);
    let mut state = store.load().unwrap().unwrap();
    let request = state
        .gpus
        .get_mut(&at(0))
        .and_then(|gpu| gpu.amd.as_mut())
        .and_then(|amd| amd.requested.as_mut())
        .unwrap();
    request.boot = Boot::new(Some("boot-0".to_owned()), None);
    store.save(&state).unwrap();
    let report = amd.sync(&mut store);
    assert_eq!(report.gpus[&at(0)].requested_memory(), None);
    assert_eq!(report.gpus[&at(0)].partition_mode, PartitionMode::Disabled);
}

#[test]
fn a_gpu_whose_driver_set_no_mode_is_unknown_with_the_files_words() {
    let amd = hive();
    amd.no_mode(2);
    let mut store = MemoryStore::default();
    let report = amd.sync(&mut store);
    let gpu = &report.gpus[&at(2)];
    assert_eq!(gpu.partition_mode, PartitionMode::Unknown);
    assert_eq!(gpu.reason, Some(GpuReason::Amdgpu(AmdUnread::NoMode)));
    assert!(
        gpu.message.as_deref().unwrap().contains("UNKNOWN"),
        "{:?}",
        gpu.message
    );
    assert_eq!(gpu.amd.as_ref().unwrap().compute, None);
    assert_eq!(
        (report.status, report.reason),
        (HostStatus::Entering, HostReason::GpusPending)
    );
}

#[test]
fn a_sync_compares_the_declared_partitions_and_names_each_axis_that_differs() {
    let amd = hive();
    let mut store = MemoryStore::default();
    amd.sync(&mut store);
    let mut state = store.load().unwrap().unwrap();
    let want = AmdWant::new(C::Cpx, M::Nps4);
    state.declared = Some(Declaration::new(
        "cpx-nps4",
        1,
        None,
        [(
            at(0),
            DeclaredGpu::Amd(layout_model::amd::AmdDeclared::new(want, Vec::new())),
        )]
        .into_iter()
        .collect(),
    ));
    store.save(&state).unwrap();
    let report = amd.sync(&mut store);
    assert_eq!(
        (report.status, report.reason),
        (HostStatus::Entering, HostReason::LayoutDrifted)
    );
    let kinds: Vec<DifferenceKind> = report.drift.iter().map(|d| d.kind()).collect();
    assert_eq!(
        kinds,
        [
            DifferenceKind::ComputePartition,
            DifferenceKind::MemoryPartition
        ]
    );
    assert_eq!(
        report.drift[1].fact,
        Fact::MemoryPartition {
            found: Some(M::Nps1),
            requested: None,
            wanted: M::Nps4
        }
    );
}

/// The host's record of writes now, as a list judges staleness by.
fn now_of(amd: &AmdHost) -> gpu_host_probe::Now {
    amd.host.now()
}

#[test]
fn a_sync_keeps_each_gpus_partitions_with_generation_1_and_lists_them_current() {
    let amd = hive();
    let mut store = MemoryStore::default();
    amd.sync(&mut store);
    let state = store.load().unwrap().unwrap();
    let listed = host_sync::partitions(&state, &now_of(&amd));
    assert_eq!(listed.len(), 8);
    for gpu in &listed {
        let division = gpu.division.as_ref().unwrap();
        assert_eq!(
            (division.generation, division.partitions.len(), &gpu.stale),
            (1, 0, &None),
            "{}: SPX is the whole GPU",
            gpu.gpu
        );
        assert_eq!(gpu.requires_reset, Some(false));
    }
}

#[test]
fn a_compute_partition_written_outside_us_is_found_as_the_next_generation_of_inferred_rows() {
    let mut amd = hive();
    let mut store = MemoryStore::default();
    amd.sync(&mut store);
    amd.fake.write_compute(&bdf(3), "CPX").unwrap();
    amd.sync(&mut store);
    amd.sync(&mut store);
    let state = store.load().unwrap().unwrap();
    let listed = host_sync::partitions(&state, &now_of(&amd));
    let gpu = listed.iter().find(|gpu| gpu.gpu == at(3)).unwrap();
    let division = gpu.division.as_ref().unwrap();
    assert_eq!(division.generation, 2, "one change, read twice");
    let slots: Vec<(String, u32, layout_model::partition::Origin)> = division
        .partitions
        .iter()
        .map(|row| (row.slot.to_string(), row.ordinal, row.origin))
        .collect();
    assert_eq!(
        slots.len(),
        8,
        "one partition per XCC of an MI300X: {slots:?}"
    );
    assert_eq!(
        slots[7],
        (
            "partition 7".to_owned(),
            7,
            layout_model::partition::Origin::Inferred
        )
    );
    let others = listed.iter().filter(|gpu| gpu.gpu != at(3));
    assert!(
        others
            .clone()
            .all(|gpu| gpu.division.as_ref().unwrap().generation == 1)
    );
}

#[test]
fn a_gpu_that_does_not_read_keeps_its_last_rows_marked_stale_with_why() {
    let mut amd = hive();
    let mut store = MemoryStore::default();
    amd.fake.write_compute(&bdf(2), "DPX").unwrap();
    amd.sync(&mut store);
    amd.no_mode(2);
    amd.sync(&mut store);
    let state = store.load().unwrap().unwrap();
    let listed = host_sync::partitions(&state, &now_of(&amd));
    let gpu = listed.iter().find(|gpu| gpu.gpu == at(2)).unwrap();
    let division = gpu.division.as_ref().unwrap();
    assert_eq!((division.generation, division.partitions.len()), (1, 2));
    let Some(layout_model::partition::Stale::NotRead(unread)) = &gpu.stale else {
        panic!("{:?}", gpu.stale);
    };
    assert!(unread.why.contains("UNKNOWN"), "{}", unread.why);
    assert_eq!(gpu.requires_reset, None, "its mode did not read");
    assert_eq!(gpu.age(division.read_at + 90), Some(90));
}

#[test]
fn a_sync_with_the_pool_off_marks_every_kept_division_not_read() {
    let amd = hive();
    let mut store = MemoryStore::default();
    amd.sync(&mut store);
    sync(
        &amd.host,
        &amd.helper,
        &mut store,
        &SyncOptions::new(Pool::Disabled, AfterBoot::No),
    )
    .unwrap();
    let state = store.load().unwrap().unwrap();
    let listed = host_sync::partitions(&state, &now_of(&amd));
    assert_eq!(listed.len(), 8, "never an empty list");
    assert!(listed.iter().all(|gpu| matches!(
        &gpu.stale,
        Some(layout_model::partition::Stale::NotRead(unread)) if unread.why.contains("pool is off")
    )));
}

#[test]
fn a_write_of_ours_makes_the_rows_stale_and_the_next_read_the_next_generation() {
    let amd = hive();
    let mut store = MemoryStore::default();
    amd.sync(&mut store);
    {
        let lock = amd.host.lock(std::time::Duration::from_secs(5)).unwrap();
        lock.record_write(&[at(4)], gpu_host_probe::Writer::AmdComputePartition)
            .unwrap();
    }
    let state = store.load().unwrap().unwrap();
    let listed = host_sync::partitions(&state, &now_of(&amd));
    let written = listed.iter().find(|gpu| gpu.gpu == at(4)).unwrap();
    assert!(
        matches!(
            &written.stale,
            Some(layout_model::partition::Stale::Ended(
                layout_model::Ended::WrittenSince(_)
            ))
        ),
        "{:?}",
        written.stale
    );
    amd.sync(&mut store);
    let state = store.load().unwrap().unwrap();
    let listed = host_sync::partitions(&state, &now_of(&amd));
    let generations: Vec<u64> = listed
        .iter()
        .map(|gpu| gpu.division.as_ref().unwrap().generation)
        .collect();
    assert_eq!(
        generations,
        [1, 1, 1, 1, 2, 1, 1, 1],
        "the same rows, written by us"
    );
    assert!(listed.iter().all(|gpu| gpu.stale.is_none()));
}

#[test]
fn a_memory_request_waiting_on_a_gpu_divided_before_and_after_requires_a_reset() {
    let mut record = host_sync::GpuRecord::new(0x1002, 0x74a1, None, PartitionMode::Enabled);
    assert_eq!(record.requires_reset(), Some(false));
    let mut amd = host_sync::AmdRecord::read(Some(C::Dpx), Some(M::Nps2), 10);
    amd.requested = Some(host_sync::MemoryRequest::new(M::Nps4, 11, Boot::default()));
    record.amd = Some(amd);
    assert_eq!(
        record.requires_reset(),
        Some(true),
        "NPS2 to NPS4 waits for a reload"
    );
}
