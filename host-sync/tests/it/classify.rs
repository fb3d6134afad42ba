//! The classifier over every check, most specific first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use gpu_host_probe::PciIdentity;
use gpu_partition_types::{Bdf, PartitionMode};
use host_sync::{
    CHECKS, Direction, Facts, GpuRecord, HelperState, HostReason, HostStatus, LayoutOutcome,
    LayoutRecord, PciFunction, StoredReason, classify,
};
use layout_model::{Difference, Fact, ProfileRef};
use std::collections::BTreeMap;

fn nvidia(bus: u8, driver: Option<&str>) -> PciFunction {
    PciFunction::new(
        Bdf::on_bus(bus),
        PciIdentity::new(0x10de, 0x2335, 0x030200),
        driver,
    )
}

/// A GPU of a vendor whose partitions the host does not read (an Intel Arc, bound to i915).
fn other(bus: u8) -> PciFunction {
    PciFunction::new(
        Bdf::on_bus(bus),
        PciIdentity::new(0x8086, 0x56a0, 0x030000),
        Some("i915"),
    )
}

/// An AMD Instinct MI300X bound to amdgpu.
fn amd(bus: u8) -> PciFunction {
    PciFunction::new(
        Bdf::on_bus(bus),
        PciIdentity::new(0x1002, 0x74a1, 0x120000),
        Some("amdgpu"),
    )
}

fn modes(gpus: &[PciFunction], modes: &[PartitionMode]) -> BTreeMap<Bdf, GpuRecord> {
    gpus.iter()
        .zip(modes)
        .map(|(gpu, mode)| {
            let mut record = GpuRecord::first_seen(gpu);
            record.set(*mode, None);
            (gpu.bdf, record)
        })
        .collect()
}

/// What a host of nothing to say but the switch, the helper and `stored` modes classifies as.
fn run(
    gpus: &[PciFunction],
    pool: bool,
    stored: &[PartitionMode],
    helper: HelperState,
) -> (HostStatus, String) {
    let modes = modes(gpus, stored);
    said(&Facts {
        pool: switch(pool),
        helper,
        ..facts(gpus, &modes)
    })
}

/// [`run`] on a host of one NVIDIA GPU bound to `nvidia`, the host most checks are about.
fn one_nvidia(pool: bool, stored: PartitionMode, helper: HelperState) -> (HostStatus, String) {
    run(&[nvidia(1, Some("nvidia"))], pool, &[stored], helper)
}

/// The facts of a host with the pool on, the helper available, no layout ever applied, no drift
/// and its state read: each test changes only what it is about.
fn facts<'a>(gpus: &'a [PciFunction], modes: &'a BTreeMap<Bdf, GpuRecord>) -> Facts<'a> {
    Facts {
        gpus,
        pool: host_sync::Pool::Enabled,
        modes,
        helper: HelperState::Available,
        layout: None,
        drift: &[],
        lost: false,
    }
}

fn switch(on: bool) -> host_sync::Pool {
    if on {
        host_sync::Pool::Enabled
    } else {
        host_sync::Pool::Disabled
    }
}

/// The status and the reason's token, as the tests compare them.
fn said(facts: &Facts<'_>) -> (HostStatus, String) {
    let (status, reason) = classify(facts);
    (status, reason.to_string())
}

fn says(status: HostStatus, reason: &str) -> (HostStatus, String) {
    (status, reason.to_owned())
}

#[test]
fn the_table_has_eleven_checks_ending_with_one_that_always_applies() {
    assert_eq!(CHECKS.len(), 11);
    assert_eq!(CHECKS[10].reason, HostReason::Ready);
}

#[test]
fn a_host_with_no_gpu_has_no_partitionable_gpu() {
    assert_eq!(
        run(&[], true, &[], HelperState::Available),
        says(HostStatus::Inactive, "no_partitionable_gpu")
    );
}

#[test]
fn a_host_with_only_other_vendors_gpus_has_no_partitionable_gpu() {
    assert_eq!(
        run(
            &[other(1)],
            true,
            &[PartitionMode::NotChecked],
            HelperState::Available
        ),
        says(HostStatus::Inactive, "no_partitionable_gpu")
    );
}

#[test]
fn no_nvidia_gpu_wins_over_the_pool_switch_being_off() {
    assert_eq!(
        run(&[], false, &[], HelperState::NotChecked),
        says(HostStatus::Inactive, "no_partitionable_gpu")
    );
}

#[test]
fn an_nvidia_gpu_passed_through_still_counts_as_partitionable() {
    assert_eq!(
        run(
            &[nvidia(1, Some("vfio-pci"))],
            false,
            &[PartitionMode::NotInUse],
            HelperState::NotChecked
        ),
        says(HostStatus::Inactive, "pool_disabled")
    );
}

#[test]
fn pool_off_with_a_divided_gpu_is_leaving() {
    for mode in [
        PartitionMode::Enabled,
        PartitionMode::EnableOnReboot,
        PartitionMode::DisableOnReboot,
        PartitionMode::PossiblyEnabled,
    ] {
        assert_eq!(
            one_nvidia(false, mode, HelperState::NotChecked),
            says(HostStatus::Leaving, "gpus_still_divided"),
            "{mode}"
        );
    }
}

#[test]
fn a_divided_gpu_wins_over_the_pool_being_off() {
    let gpus = [nvidia(1, Some("nvidia")), nvidia(2, Some("nvidia"))];
    assert_eq!(
        run(
            &gpus,
            false,
            &[PartitionMode::NotInUse, PartitionMode::Enabled],
            HelperState::NotChecked
        ),
        says(HostStatus::Leaving, "gpus_still_divided")
    );
}

#[test]
fn pool_off_with_undivided_nvidia_gpus_is_pool_disabled() {
    assert_eq!(
        one_nvidia(false, PartitionMode::Disabled, HelperState::NotChecked),
        says(HostStatus::Inactive, "pool_disabled")
    );
}

#[test]
fn pool_on_with_the_helper_unavailable_is_helper_unavailable() {
    assert_eq!(
        one_nvidia(true, PartitionMode::Unknown, HelperState::Unavailable),
        says(HostStatus::Inactive, "helper_unavailable")
    );
}

#[test]
fn pool_on_with_an_unsettled_gpu_is_entering() {
    for mode in [
        PartitionMode::Unknown,
        PartitionMode::EnableOnReboot,
        PartitionMode::DisableOnReboot,
        PartitionMode::PossiblyEnabled,
        PartitionMode::NotInUse,
    ] {
        assert_eq!(
            one_nvidia(true, mode, HelperState::Available),
            says(HostStatus::Entering, "gpus_pending"),
            "{mode}"
        );
    }
}

#[test]
fn pool_on_with_a_gpu_never_read_is_entering() {
    let gpus = [nvidia(1, Some("nvidia"))];
    assert_eq!(
        said(&facts(&gpus, &BTreeMap::new())),
        says(HostStatus::Entering, "gpus_pending")
    );
}

#[test]
fn pool_on_with_every_gpu_settled_is_active_and_ready() {
    let gpus = [
        nvidia(1, Some("nvidia")),
        nvidia(2, Some("nvidia")),
        nvidia(3, Some("nvidia")),
        nvidia(4, Some("vfio-pci")),
    ];
    let modes = [
        PartitionMode::Enabled,
        PartitionMode::Disabled,
        PartitionMode::NotSupported,
        PartitionMode::NotChecked,
    ];
    assert_eq!(
        run(&gpus, true, &modes, HelperState::Available),
        says(HostStatus::Active, "ready")
    );
}

#[test]
fn a_gpu_not_read_by_design_does_not_hold_the_host_back() {
    let gpus = [nvidia(1, Some("nvidia")), nvidia(2, None)];
    let modes = [PartitionMode::Enabled, PartitionMode::Unknown];
    assert_eq!(
        run(&gpus, true, &modes, HelperState::Available),
        says(HostStatus::Active, "ready")
    );
}

#[test]
fn a_gpu_left_unknown_over_a_division_still_holds_the_host_leaving() {
    let gpus = [nvidia(1, Some("nvidia"))];
    let mut record = GpuRecord::first_seen(&gpus[0]);
    host_sync::modes::read_answered(&mut record, PartitionMode::Enabled);
    host_sync::modes::about_to_read(&mut record);
    let modes = BTreeMap::from([(Bdf::on_bus(1), record)]);
    let (status, reason) = classify(&Facts {
        pool: host_sync::Pool::Disabled,
        helper: HelperState::NotChecked,
        ..facts(&gpus, &modes)
    });
    assert_eq!(
        (status, reason),
        (HostStatus::Leaving, HostReason::GpusStillDivided)
    );
}

fn with_layout(pool: bool, record: &LayoutRecord, mode: PartitionMode) -> (HostStatus, String) {
    let gpus = [nvidia(1, Some("nvidia"))];
    let modes = modes(&gpus, &[mode]);
    said(&Facts {
        pool: switch(pool),
        layout: Some(record),
        ..facts(&gpus, &modes)
    })
}

fn why() -> StoredReason {
    StoredReason::new("step_refused").unwrap()
}

fn ended(direction: Direction, outcome: LayoutOutcome) -> LayoutRecord {
    LayoutRecord::applying("all-1g.5gb", direction, 1, None).finish(
        outcome,
        Some("GPU 0000:01:00.0: refused".to_owned()),
        2,
    )
}

#[test]
fn pool_on_after_a_failed_layout_stays_entering_with_layout_failed_though_every_gpu_is_settled() {
    for outcome in [
        LayoutOutcome::Failed(why()),
        LayoutOutcome::ColdRebootRequired(why()),
    ] {
        assert_eq!(
            with_layout(
                true,
                &ended(Direction::Entering, outcome.clone()),
                PartitionMode::Enabled
            ),
            says(HostStatus::Entering, "layout_failed"),
            "{outcome}"
        );
    }
}

#[test]
fn pool_on_after_an_interrupted_layout_stays_entering_with_layout_failed() {
    let record = LayoutRecord::applying("all-1g.5gb", Direction::Entering, 1, None);
    assert_eq!(
        with_layout(true, &record, PartitionMode::Enabled),
        says(HostStatus::Entering, "layout_failed")
    );
}

#[test]
fn a_layout_that_held_or_was_blocked_over_nothing_leaves_the_host_to_the_other_checks() {
    for outcome in [LayoutOutcome::Done, LayoutOutcome::Blocked(why())] {
        assert_eq!(
            with_layout(
                true,
                &ended(Direction::Entering, outcome.clone()),
                PartitionMode::Enabled
            ),
            says(HostStatus::Active, "ready"),
            "{outcome}"
        );
    }
}

#[test]
fn pool_off_after_a_failed_leave_stays_leaving_with_layout_failed_though_no_gpu_is_divided() {
    assert_eq!(
        with_layout(
            false,
            &ended(Direction::Leaving, LayoutOutcome::Failed(why())),
            PartitionMode::Disabled
        ),
        says(HostStatus::Leaving, "layout_failed")
    );
}

#[test]
fn a_failure_going_the_other_way_than_the_pool_is_moot() {
    assert_eq!(
        with_layout(
            false,
            &ended(Direction::Entering, LayoutOutcome::Failed(why())),
            PartitionMode::Disabled
        ),
        says(HostStatus::Inactive, "pool_disabled")
    );
    assert_eq!(
        with_layout(
            true,
            &ended(Direction::Leaving, LayoutOutcome::Failed(why())),
            PartitionMode::Disabled
        ),
        says(HostStatus::Active, "ready")
    );
}

#[test]
fn a_host_of_amd_instinct_gpus_alone_takes_part_and_is_ready_once_they_read() {
    assert_eq!(
        run(
            &[amd(1), amd(2)],
            true,
            &[PartitionMode::Enabled, PartitionMode::Disabled],
            HelperState::NotChecked
        ),
        says(HostStatus::Active, "ready")
    );
}

#[test]
fn an_amd_gpu_whose_partitions_did_not_read_keeps_the_host_pending() {
    assert_eq!(
        run(
            &[amd(1)],
            true,
            &[PartitionMode::Unknown],
            HelperState::NotChecked
        ),
        says(HostStatus::Entering, "gpus_pending")
    );
}

#[test]
fn with_the_pool_off_an_amd_gpu_last_known_divided_keeps_the_host_leaving() {
    assert_eq!(
        run(
            &[amd(1)],
            false,
            &[PartitionMode::Enabled],
            HelperState::NotChecked
        ),
        says(HostStatus::Leaving, "gpus_still_divided")
    );
}

#[test]
fn a_host_without_an_nvidia_or_amd_gpu_has_no_partitionable_gpu_whatever_its_last_layout() {
    let gpus = [other(1)];
    let modes = modes(&gpus, &[PartitionMode::NotChecked]);
    let record = ended(Direction::Leaving, LayoutOutcome::Failed(why()));
    let (status, reason) = classify(&Facts {
        pool: host_sync::Pool::Disabled,
        helper: HelperState::NotChecked,
        layout: Some(&record),
        ..facts(&gpus, &modes)
    });
    assert_eq!(
        (status, reason),
        (HostStatus::Inactive, HostReason::NoPartitionableGpu)
    );
}

fn drifted(pool: bool, layout: Option<&LayoutRecord>, mode: PartitionMode) -> (HostStatus, String) {
    let gpus = [nvidia(1, Some("nvidia"))];
    let modes = modes(&gpus, &[mode]);
    let drift = [Difference::new(
        Bdf::on_bus(1),
        Fact::InstanceMissing {
            profile: ProfileRef::new(19, Some("1g.5gb".to_owned())),
            placement: gpu_partition_types::Placement::new(0, 1),
        },
    )];
    said(&Facts {
        pool: switch(pool),
        layout,
        drift: &drift,
        ..facts(&gpus, &modes)
    })
}

#[test]
fn pool_on_with_a_declared_gpu_that_differs_is_entering_layout_drifted() {
    assert_eq!(
        drifted(true, None, PartitionMode::Enabled),
        says(HostStatus::Entering, "layout_drifted")
    );
}

#[test]
fn an_unhealed_failure_is_named_before_the_drift() {
    let failed = ended(Direction::Entering, LayoutOutcome::Failed(why()));
    assert_eq!(
        drifted(true, Some(&failed), PartitionMode::Enabled),
        says(HostStatus::Entering, "layout_failed")
    );
}

#[test]
fn with_the_pool_off_a_drift_changes_nothing() {
    assert_eq!(
        drifted(false, None, PartitionMode::Disabled),
        says(HostStatus::Inactive, "pool_disabled")
    );
}

fn lost(gpus: &[PciFunction], pool: bool) -> (HostStatus, String) {
    let modes = modes(gpus, &vec![PartitionMode::Enabled; gpus.len()]);
    said(&Facts {
        pool: switch(pool),
        lost: true,
        ..facts(gpus, &modes)
    })
}

#[test]
fn a_host_that_lost_its_state_is_never_ready_and_says_so_before_anything_else() {
    let gpus = [nvidia(1, Some("nvidia"))];
    assert_eq!(lost(&gpus, true), says(HostStatus::Entering, "state_lost"));
    assert_eq!(lost(&gpus, false), says(HostStatus::Inactive, "state_lost"));
    assert_eq!(lost(&[], true), says(HostStatus::Inactive, "state_lost"));
}
