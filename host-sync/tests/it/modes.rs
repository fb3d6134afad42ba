//! The partition-mode rules, one named case per rule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::PciIdentity;
use gpu_host_probe::helper::ReadFailure;
use gpu_partition_types::{Bdf, PartitionMode, UnreadableReason};
use host_sync::{GpuReason, GpuRecord, PciFunction, modes};
use std::collections::BTreeMap;

fn gpu(bus: u8, vendor: u16, driver: Option<&str>) -> PciFunction {
    PciFunction::new(
        Bdf::on_bus(bus),
        PciIdentity::new(vendor, 0x2335, 0x030200),
        driver,
    )
}

fn stored(entries: &[(u8, PartitionMode)]) -> BTreeMap<Bdf, GpuRecord> {
    entries
        .iter()
        .map(|(bus, mode)| {
            let mut record = GpuRecord::first_seen(&gpu(*bus, 0x10de, Some("nvidia")));
            record.set(*mode, None);
            (Bdf::on_bus(*bus), record)
        })
        .collect()
}

/// The record of an NVIDIA GPU on bus 1, bound to `nvidia`, as first seen.
fn first_seen() -> GpuRecord {
    GpuRecord::first_seen(&gpu(1, 0x10de, Some("nvidia")))
}

/// `record`'s read failed for `reason`.
fn fail(record: &mut GpuRecord, reason: UnreadableReason) {
    modes::read_failed(record, &ReadFailure::new(reason, "the read failed"));
}

fn mode_of(records: &BTreeMap<Bdf, GpuRecord>, bus: u8) -> (PartitionMode, String) {
    let record = &records[&Bdf::on_bus(bus)];
    (record.partition_mode, token(record))
}

#[test]
fn a_gpu_seen_for_the_first_time_is_not_in_use() {
    let records = modes::carry_over(&[gpu(1, 0x10de, Some("nvidia"))], &BTreeMap::new(), &[]);
    assert_eq!(mode_of(&records, 1).0, PartitionMode::NotInUse);
}

#[test]
fn a_gpu_no_longer_on_the_host_is_dropped() {
    let records = modes::carry_over(
        &[gpu(1, 0x10de, Some("nvidia"))],
        &stored(&[(1, PartitionMode::Enabled), (2, PartitionMode::Disabled)]),
        &[],
    );
    assert_eq!(
        records.keys().copied().collect::<Vec<_>>(),
        [Bdf::on_bus(1)]
    );
}

#[test]
fn a_stored_gpu_whose_sysfs_entry_could_not_be_read_keeps_its_record() {
    let records = modes::carry_over(
        &[gpu(1, 0x10de, Some("nvidia"))],
        &stored(&[(1, PartitionMode::Disabled), (2, PartitionMode::Enabled)]),
        &[Bdf::on_bus(2), Bdf::on_bus(3)],
    );
    assert_eq!(
        records.keys().copied().collect::<Vec<_>>(),
        [Bdf::on_bus(1), Bdf::on_bus(2)]
    );
    assert_eq!(mode_of(&records, 2).0, PartitionMode::Enabled);
}

#[test]
fn a_carried_record_takes_the_driver_of_the_current_scan() {
    let records = modes::carry_over(
        &[gpu(1, 0x10de, Some("vfio-pci"))],
        &stored(&[(1, PartitionMode::Enabled)]),
        &[],
    );
    assert_eq!(records[&Bdf::on_bus(1)].driver.as_deref(), Some("vfio-pci"));
    assert_eq!(mode_of(&records, 1).0, PartitionMode::Enabled);
}

#[test]
fn after_boot_an_inactive_host_sets_undivided_gpus_to_not_in_use() {
    let mut records = stored(&[
        (1, PartitionMode::Disabled),
        (2, PartitionMode::Unknown),
        (3, PartitionMode::NotChecked),
        (4, PartitionMode::NotSupported),
    ]);
    modes::not_taking_part(&mut records, true);
    for bus in 1..=4 {
        assert_eq!(
            mode_of(&records, bus),
            (PartitionMode::NotInUse, String::new()),
            "gpu {bus}"
        );
    }
}

#[test]
fn a_divided_gpu_survives_the_after_boot_reset() {
    let divided = [
        PartitionMode::Enabled,
        PartitionMode::EnableOnReboot,
        PartitionMode::DisableOnReboot,
        PartitionMode::PossiblyEnabled,
    ];
    let mut records = stored(&[
        (1, divided[0]),
        (2, divided[1]),
        (3, divided[2]),
        (4, divided[3]),
    ]);
    modes::not_taking_part(&mut records, true);
    for (bus, mode) in (1..=4).zip(divided) {
        assert_eq!(mode_of(&records, bus).0, mode);
    }
}

#[test]
fn a_gpu_left_unknown_by_an_interrupted_read_over_a_division_becomes_possibly_enabled_after_boot() {
    let mut record = first_seen();
    modes::read_answered(&mut record, PartitionMode::Enabled);
    modes::about_to_read(&mut record);
    let mut records = BTreeMap::from([(Bdf::on_bus(1), record)]);
    modes::not_taking_part(&mut records, true);
    assert_eq!(
        mode_of(&records, 1),
        (
            PartitionMode::PossiblyEnabled,
            "read_interrupted".to_owned()
        )
    );
}

#[test]
fn a_gpu_last_read_divided_keeps_its_mode_after_boot_whatever_it_now_holds() {
    let mut record = first_seen();
    modes::read_answered(&mut record, PartitionMode::Enabled);
    fail(&mut record, UnreadableReason::Timeout);
    let mut records = BTreeMap::from([(Bdf::on_bus(1), record)]);
    modes::not_taking_part(&mut records, true);
    assert_eq!(mode_of(&records, 1).0, PartitionMode::PossiblyEnabled);
}

#[test]
fn a_toolstack_restart_in_the_same_boot_changes_no_gpu() {
    let before = stored(&[
        (1, PartitionMode::Disabled),
        (2, PartitionMode::Unknown),
        (3, PartitionMode::Enabled),
    ]);
    let mut records = before.clone();
    modes::not_taking_part(&mut records, false);
    assert_eq!(records, before);
}

#[test]
fn gpus_not_read_by_design_get_not_checked_with_their_reason_and_each_vendor_its_reader() {
    let gpus = [
        gpu(1, 0x8086, Some("i915")),
        gpu(2, 0x10de, None),
        gpu(3, 0x10de, Some("vfio-pci")),
        gpu(4, 0x1002, Some("vfio-pci")),
        gpu(5, 0x10de, Some("nvidia")),
        gpu(6, 0x1002, Some("amdgpu")),
    ];
    let mut records = modes::carry_over(&gpus, &BTreeMap::new(), &[]);
    let to_read = modes::mark_not_checked(&gpus, &mut records, host_sync::ReadBy::Helper);
    assert_eq!(to_read, [Bdf::on_bus(5)]);
    let amd = modes::mark_not_checked(&gpus, &mut records, host_sync::ReadBy::Amdgpu);
    assert_eq!(amd, [Bdf::on_bus(6)]);
    let reasons: Vec<(PartitionMode, String)> = (1..=4).map(|bus| mode_of(&records, bus)).collect();
    let expected = [
        "not_nvidia",
        "no_driver",
        "driver_vfio_pci",
        "driver_vfio_pci",
    ]
    .map(|reason| (PartitionMode::NotChecked, reason.to_owned()));
    assert_eq!(reasons, expected);
}

#[test]
fn a_driver_name_becomes_a_token_with_every_other_character_an_underscore() {
    assert_eq!(
        gpu(1, 0x10de, Some("Xen-PCIBack.2"))
            .not_read_reason()
            .map(|reason| GpuReason::NotRead(reason).to_string())
            .as_deref(),
        Some("driver__en_____ack_2")
    );
}

#[test]
fn a_gpu_about_to_be_read_is_unknown() {
    let mut records = stored(&[(1, PartitionMode::Enabled)]);
    modes::about_to_read(records.get_mut(&Bdf::on_bus(1)).unwrap());
    assert_eq!(
        mode_of(&records, 1),
        (PartitionMode::Unknown, String::new())
    );
}

#[test]
fn an_answer_sets_the_mode_clears_the_reason_and_is_remembered() {
    let mut record = first_seen();
    record.set(
        PartitionMode::Unknown,
        Some(GpuReason::Read(UnreadableReason::Timeout)),
    );
    modes::read_answered(&mut record, PartitionMode::Enabled);
    assert_eq!(
        (record.partition_mode, token(&record), record.last_read),
        (
            PartitionMode::Enabled,
            String::new(),
            Some(PartitionMode::Enabled)
        )
    );
}

#[test]
fn a_failed_read_over_an_undivided_gpu_is_unknown_with_its_reason() {
    let mut record = first_seen();
    modes::read_answered(&mut record, PartitionMode::Disabled);
    modes::about_to_read(&mut record);
    fail(&mut record, UnreadableReason::Timeout);
    assert_eq!(
        (record.partition_mode, token(&record).as_str()),
        (PartitionMode::Unknown, "timeout")
    );
}

#[test]
fn a_failed_read_over_a_gpu_last_known_divided_is_possibly_enabled() {
    let mut record = first_seen();
    modes::read_answered(&mut record, PartitionMode::Enabled);
    modes::about_to_read(&mut record);
    fail(&mut record, UnreadableReason::Helper("busy".into()));
    assert_eq!(
        (record.partition_mode, token(&record).as_str()),
        (PartitionMode::PossiblyEnabled, "helper:busy")
    );
}

#[test]
fn a_failed_read_over_a_gpu_possibly_enabled_stays_possibly_enabled() {
    let mut records = stored(&[(1, PartitionMode::PossiblyEnabled)]);
    let record = records.get_mut(&Bdf::on_bus(1)).unwrap();
    fail(record, UnreadableReason::Crash);
    assert_eq!(record.partition_mode, PartitionMode::PossiblyEnabled);
}

#[test]
fn a_gpu_never_read_that_fails_is_unknown() {
    let mut record = first_seen();
    fail(&mut record, UnreadableReason::HelperAbsent);
    assert_eq!(
        (record.partition_mode, token(&record).as_str()),
        (PartitionMode::Unknown, "helper_absent")
    );
}

/// The GPU's reason token, `""` when it has none (as the state file writes it).
fn token(record: &host_sync::GpuRecord) -> String {
    record
        .reason
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default()
}

#[test]
fn a_gpu_stored_as_host_is_ours_and_only_the_others_are_not_ours() {
    let mut state = host_sync::HostState::default();
    let (ours, theirs): (gpu_partition_types::Bdf, gpu_partition_types::Bdf) = (
        "0000:3b:00.0".parse().unwrap(),
        "0000:3c:00.0".parse().unwrap(),
    );
    state
        .ownership
        .insert(ours, gpu_host_probe::Ownership::Host);
    state
        .ownership
        .insert(theirs, gpu_host_probe::Ownership::External);
    assert_eq!(
        state.not_ours().into_iter().collect::<Vec<_>>(),
        [(theirs, gpu_host_probe::Ownership::External)]
    );
    assert_eq!(state.ownership_of(ours), gpu_host_probe::Ownership::Host);
}
