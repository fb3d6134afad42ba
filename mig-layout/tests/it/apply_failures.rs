//! The executor failing once it has written: a cancel after the first write, a step the driver
//! refuses, the resets (blocked, refused for an NVLink peer, pending, a card gone or hung) and
//! what other clients do meanwhile, each by what the card then holds and what the store records.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::assert_outcome;
use fake_nvml::scenarios;
use fake_nvml::{Client, GpuInstance, ResetFault};
use gpu_host_probe::Cancel;
use gpu_host_probe::helper::Helper;
use gpu_partition_types::StepOutcome;
use mig_layout::{ApplyOutcome, ApplyReason, Progress};

use gpu_host_probe::Clock;
use std::time::Duration;
use warm_reset::ColdRebootReason;

use crate::common::bed::{Bed, FIRST, SECOND, bdf, change_state, device_mut, mig};

#[test]
fn an_apply_cancelled_after_its_first_write_fails_cancelled_and_issues_no_reset() {
    let mut bed = Bed::two_a100s();
    // One card at a time, so the cancel lands between the two cards' first batches.
    bed.helper = Helper::new(bed.helper.config().clone().concurrency(1));
    let cancel = Cancel::new();
    let options = bed.options("all-1g.5gb").cancel(cancel.clone());
    let report = bed.apply_observed(&options, &mut |progress| {
        if matches!(progress, Progress::Step { .. }) {
            cancel.cancel();
        }
    });
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::Cancelled));
    assert!(bed.backend.host().resets.is_empty());
    // The first card's mode was set (pending its reset); the second was never written.
    assert_eq!(mig(&bed.card(FIRST)), (0, 1));
    assert_eq!(mig(&bed.card(SECOND)), (0, 0));
    assert_eq!(
        bed.recorded(),
        ("failed".to_owned(), Some("cancelled".to_owned()))
    );
    // The host is not held: the next apply goes on, and converges.
    let again = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(&again, ApplyOutcome::Done);
}

#[test]
fn a_step_the_driver_refuses_fails_the_apply_with_step_refused_and_its_kind() {
    let mut bed = Bed::two_a100s();
    bed.change(|scenario| {
        device_mut(scenario, FIRST).fail.insert(
            "nvmlDeviceCreateGpuInstanceWithPlacement".to_owned(),
            "INSUFFICIENT_RESOURCES".to_owned(),
        );
    });
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::StepRefused));
    let refused = report.gpus[0]
        .nvidia_work()
        .unwrap()
        .steps
        .iter()
        .find(|step| matches!(step.outcome, StepOutcome::Refused { .. }))
        .unwrap();
    let StepOutcome::Refused { kind, .. } = &refused.outcome else {
        unreachable!()
    };
    assert_eq!(kind.to_string(), "insufficient_resources");
    assert_eq!(
        bed.recorded(),
        ("failed".to_owned(), Some("step_refused".to_owned()))
    );
}

#[test]
fn a_process_holding_the_card_at_its_reset_fails_the_apply_with_reset_blocked() {
    let mut bed = Bed::two_a100s();
    let state = bed.state.clone();
    let report = bed.apply_observed(&bed.options("all-1g.5gb"), &mut |progress| {
        // The mode is set; a process opens the card before its reset.
        if let Progress::Resetting { device } = progress {
            if *device == bdf(FIRST) {
                change_state(&state, |scenario| {
                    let client: Client = serde_json::from_value(
                        serde_json::json!({"pid": 2718, "name": "nvidia-persiste"}),
                    )
                    .unwrap();
                    device_mut(scenario, FIRST).clients.push(client);
                });
            }
        }
    });
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::ResetBlocked));
    assert!(report.detail.unwrap().contains("2718"));
    assert!(bed.backend.host().resets.is_empty());
}

/// Two A100s in one NVLink group: the first with MIG off, the second as `second` gives it.
fn nvlinked(second: &str) -> Bed {
    Bed::new(
        &[(FIRST, scenarios::A100_MIG_OFF), (SECOND, second)],
        &[&[FIRST, SECOND]],
    )
}

#[test]
fn a_reset_that_would_take_an_nvlink_peer_with_instances_outside_the_layout_is_refused() {
    let mut bed = nvlinked(scenarios::A100_MIG_ON_CARVED);
    // The peer carries instances (the carved scenario's vGPUs and clients removed: idle).
    bed.change(|scenario| {
        let peer = device_mut(scenario, SECOND);
        peer.vgpus.clear();
        peer.clients.clear();
    });
    let report = bed.apply(&bed.options("first-3g"));
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::ResetBlocked));
    let detail = report.detail.unwrap();
    assert!(
        detail.contains("NVLink peer") && detail.contains(SECOND),
        "{detail}"
    );
    assert!(bed.backend.host().resets.is_empty());
    assert!(
        !bed.card(SECOND).gpu_instances.is_empty(),
        "the peer's instances are kept"
    );
}

#[test]
fn a_reset_that_would_take_an_nvlink_peer_not_ours_is_blocked_before_any_write() {
    let mut bed = nvlinked(scenarios::A100_MIG_OFF);
    // The peer is an allocator's: its reset is not ours to take.
    bed.owned_by(SECOND, gpu_host_probe::Ownership::Dynamic);
    // MIG on for the first card waits for a reset, which takes its NVLink peer with it.
    let report = bed.apply(&bed.options("first-3g"));
    assert_outcome(&report, ApplyOutcome::Blocked(ApplyReason::GpuNotOurs));
    let detail = report.detail.unwrap();
    assert!(
        detail.contains(&format!("takes {SECOND}, which is not ours")),
        "{detail}"
    );
    assert_eq!(mig(&bed.card(FIRST)), (0, 0), "no write to the first card");
    assert!(bed.backend.host().resets.is_empty());
}

#[test]
fn a_reset_whose_group_cannot_be_told_beside_a_gpu_not_ours_is_blocked_before_any_write() {
    let mut bed = nvlinked(scenarios::A100_MIG_OFF);
    bed.owned_by(SECOND, gpu_host_probe::Ownership::Dynamic);
    // Another GPU's reset in flight, its window open: a dry run ends before it resolves any
    // group, so what the first card's reset would take with it cannot be told.
    let started_unix_ms = bed.clock.unix_s() * 1000;
    let journal = serde_json::json!({"in_flight": {
        "target": {"id": "0000:99:00.0", "facts": {"pci": {
            "device": "0000:99:00.0", "method": "flr", "members": []}}},
        "started_unix_ms": started_unix_ms,
        "window_ms": 90_000,
        "boot_id": "11111111-2222-3333-4444-555555555555",
    }});
    std::fs::create_dir_all(bed.host.state_dir()).unwrap();
    std::fs::write(
        bed.host.state_dir().join(warm_reset::JOURNAL_FILE),
        journal.to_string(),
    )
    .unwrap();
    let report = bed.apply(&bed.options("first-3g"));
    assert_outcome(&report, ApplyOutcome::Blocked(ApplyReason::ResetBlocked));
    assert_eq!(mig(&bed.card(FIRST)), (0, 0), "no write to the first card");
    assert!(bed.backend.host().resets.is_empty());
}

#[test]
fn a_hopper_mode_change_beside_an_nvlink_peer_not_ours_needs_no_reset_and_goes_through() {
    let mut bed = Bed::new(
        &[
            (FIRST, scenarios::PART_H100_80GB),
            (SECOND, scenarios::PART_H100_80GB),
        ],
        &[&[FIRST, SECOND]],
    );
    bed.owned_by(SECOND, gpu_host_probe::Ownership::Dynamic);
    // From Hopper on MIG turns on at once: no reset, so the peer is never at stake.
    let report = bed.apply(&bed.options("first-on"));
    assert_outcome(&report, ApplyOutcome::Done);
    assert!(bed.backend.host().resets.is_empty());
}

#[test]
fn an_nvlink_pair_named_by_the_layout_is_reset_in_one_command() {
    let mut bed = nvlinked(scenarios::A100_MIG_OFF);
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(&report, ApplyOutcome::Done);
    assert_eq!(
        bed.backend.host().resets,
        vec!["00000000:3B:00.0,00000000:3C:00.0".to_owned()]
    );
}

#[test]
fn a_reset_that_leaves_the_mode_pending_fails_the_apply_with_mode_pending() {
    let mut bed = Bed::two_a100s();
    bed.backend.host_mut().fault = Some(ResetFault::NoEffect);
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::ModePending));
    assert_eq!(mig(&bed.card(FIRST)), (0, 1));
}

/// Another NVML client makes on the first card the GPU instance `instance` (its id, profile
/// and placement; no compute instance), behind the apply's back.
fn another_client_makes(state: &std::path::Path, mut instance: serde_json::Value) {
    instance["compute_instances"] = serde_json::json!([]);
    change_state(state, |scenario| {
        let made: GpuInstance = serde_json::from_value(instance).unwrap();
        device_mut(scenario, FIRST).gpu_instances.push(made);
    });
}

#[test]
fn an_instance_another_client_makes_after_the_reset_fails_the_apply_did_not_converge() {
    let mut bed = Bed::two_a100s();
    let state = bed.state.clone();
    let report = bed.apply_observed(&bed.options("all-1g.5gb"), &mut |progress| {
        if let Progress::Reset { device, .. } = progress {
            if *device == bdf(FIRST) {
                // MIG is on now; another NVML client takes the whole card before the apply
                // creates its instances: only a destroy would make room.
                another_client_makes(
                    &state,
                    serde_json::json!({"id": 1, "profile_id": 0, "placement": {"start": 0, "size": 8}}),
                );
            }
        }
    });
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::DidNotConverge));
    assert!(report.detail.unwrap().contains(FIRST));
    assert_eq!(
        bed.card(FIRST).gpu_instances.len(),
        1,
        "the other client's instance is kept"
    );
}

#[test]
fn an_instance_another_client_creates_during_the_apply_fails_the_read_back() {
    let mut bed = Bed::new(&[(FIRST, scenarios::A100_MIG_ON_NONE_CARVED)], &[]);
    let state = bed.state.clone();
    let mut once = false;
    let report = bed.apply_observed(&bed.options("first-3g"), &mut |progress| {
        // After the GPU instance is made, before its compute instance: a foreign 1g.5gb in a
        // slot the layout leaves free.
        if let Progress::Step { step, .. } = progress {
            if !once
                && matches!(
                    step.outcome,
                    StepOutcome::Done {
                        gpu_instance_id: Some(_),
                        ..
                    }
                )
            {
                once = true;
                another_client_makes(
                    &state,
                    serde_json::json!({"id": 9, "profile_id": 19, "placement": {"start": 6, "size": 1}}),
                );
            }
        }
    });
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::ReadBackDiffers));
    assert!(!report.gpus[0].differences.is_empty());
}

#[test]
fn a_card_unreadable_after_its_reset_fails_the_apply_with_gpu_unreadable() {
    let mut bed = Bed::two_a100s();
    let state = bed.state.clone();
    let report = bed.apply_observed(&bed.options("all-1g.5gb"), &mut |progress| {
        if let Progress::Resetting { device } = progress {
            if *device == bdf(FIRST) {
                change_state(&state, |scenario| {
                    device_mut(scenario, FIRST)
                        .fail
                        .insert("nvmlDeviceGetMigMode".to_owned(), "GPU_IS_LOST".to_owned());
                });
            }
        }
    });
    assert_outcome(&report, ApplyOutcome::Failed(ApplyReason::GpuUnreadable));
}

#[test]
fn a_card_gone_after_its_reset_requires_a_cold_reboot() {
    let mut bed = Bed::two_a100s();
    bed.backend.host_mut().fault = Some(ResetFault::Gone("00000000:3B:00.0".to_owned()));
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(
        &report,
        ApplyOutcome::ColdRebootRequired(ColdRebootReason::GpuMissing),
    );
    assert_eq!(
        bed.recorded(),
        (
            "cold_reboot_required".to_owned(),
            Some("gpu_missing".to_owned())
        )
    );
}

#[test]
fn a_hung_reset_requires_a_cold_reboot_after_the_window_on_the_apply_s_clock() {
    let mut bed = Bed::two_a100s();
    bed.backend.host_mut().fault = Some(ResetFault::Hang);
    let before = bed.clock.now();
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::ColdRebootRequired(ColdRebootReason::ResetHung)
    );
    // The window passed on the virtual clock, not the real one.
    assert!(bed.clock.now() - before >= Duration::from_secs(90));
}

#[test]
fn one_of_four_gpus_not_back_after_the_reset_needs_a_cold_reboot_and_the_other_three_hold_their_layouts()
 {
    let cards = [
        ("0000:3b:00.0", scenarios::A100_MIG_OFF),
        ("0000:3c:00.0", scenarios::A100_MIG_OFF),
        ("0000:3d:00.0", scenarios::A100_MIG_OFF),
        ("0000:3e:00.0", scenarios::A100_MIG_OFF),
    ];
    let mut bed = Bed::new(&cards, &[]);
    bed.backend.host_mut().fault = Some(ResetFault::Gone("00000000:3D:00.0".to_owned()));
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(
        &report,
        ApplyOutcome::ColdRebootRequired(ColdRebootReason::GpuMissing),
    );
    let detail = report.detail.clone().unwrap();
    assert!(
        detail.contains("0000:3d:00.0") && detail.contains("the other 3"),
        "{detail}"
    );
    // One reset command for the four, one window.
    assert_eq!(
        bed.backend.host().resets.len(),
        1,
        "{:?}",
        bed.backend.host().resets
    );
    for gpu in &report.gpus {
        let lost = gpu.device == bdf("0000:3d:00.0");
        assert_eq!(
            gpu.outcome,
            Some(if lost {
                ApplyOutcome::ColdRebootRequired(ColdRebootReason::GpuMissing)
            } else {
                ApplyOutcome::Done
            }),
            "{}",
            gpu.device
        );
        if !lost {
            assert_eq!(
                bed.card(&gpu.device.to_string()).gpu_instances.len(),
                7,
                "{}",
                gpu.device
            );
        }
    }
}
