//! The executor in its own crate: an apply over the real helper on the fake NVML (its state in
//! a file, so consecutive runs see each other's writes), the fake's test reset backend
//! (`fake_nvml::backend`, the nvidia method over that state) and a virtual clock. Each outcome,
//! each blocked and failed reason, the NVLink peer's refusal, a read-back difference and a
//! cancel, each by what the card then holds and what the store records.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use fake_nvml::scenarios;
use fake_nvml::{Client, GpuInstance, ResetFault};
use gpu_host_probe::Cancel;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::run::CommandLine;
use gpu_partition_types::StepOutcome;
use host_sync::{Pool, StateStore};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyReason, ApplyWarning, HookPoint, Hooks, ImpossibleKind,
    PlanLine, Progress, Restore,
};

use gpu_host_probe::Clock;
use std::time::Duration;
use warm_reset::ColdRebootReason;

use crate::common::bed::{Bed, FIRST, SECOND, bdf, change_state, device_mut, mig};

#[test]
fn two_a100s_enter_partitioning_reset_together_in_one_command_and_read_back_as_the_layout_wants() {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    for bus_id in [FIRST, SECOND] {
        let card = bed.card(bus_id);
        assert_eq!(mig(&card), (1, 1), "{bus_id}");
        assert_eq!(card.gpu_instances.len(), 7, "{bus_id}");
    }
    // The plan as data: the mode change, then the seven instances (the reset it needs is
    // the card's answer: its change stays pending).
    let first = report.gpus[0].nvidia_work().unwrap();
    assert!(
        matches!(
            first.plan.first(),
            Some(PlanLine::SetMode { enabled: true })
        ),
        "{:?}",
        first.plan
    );
    let creates = first
        .plan
        .iter()
        .filter(|line| matches!(line, PlanLine::Create { .. }))
        .count();
    assert_eq!(creates, 7, "{:?}", first.plan);
    assert!(
        first
            .steps
            .iter()
            .all(|step| matches!(step.outcome, StepOutcome::Done { .. }))
    );
    // Both pending mode changes completed by one reset command, in one window.
    assert_eq!(
        bed.backend.host().resets,
        ["00000000:3B:00.0,00000000:3C:00.0"]
    );
    assert_eq!(report.resets.len(), 1);
    assert!(
        report
            .gpus
            .iter()
            .all(|gpu| gpu.outcome == Some(ApplyOutcome::Done))
    );
    assert_eq!(bed.recorded(), ("done".to_owned(), None));
    let declared = bed.store.load().unwrap().unwrap().declared.unwrap();
    assert_eq!(declared.label, "all-1g.5gb");
    assert_eq!(declared.gpus.len(), 2);
}

#[test]
fn an_apply_run_again_on_cards_that_hold_the_layout_writes_nothing() {
    let mut bed = Bed::two_a100s();
    bed.apply(&bed.options("all-1g.5gb"));
    let again = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(again.outcome, ApplyOutcome::Done);
    assert_eq!(again.writes(), 0);
    assert!(again.gpus.iter().all(|gpu| gpu.work.is_empty()));
    assert_eq!(bed.backend.host().resets.len(), 1, "no second reset");
}

#[test]
fn a_dry_run_shows_the_plan_and_changes_nothing() {
    let mut bed = Bed::two_a100s();
    let before = std::fs::read(&bed.state).unwrap();
    let report = bed.apply(&bed.options("all-1g.5gb").dry_run(true));
    assert_eq!(report.outcome, ApplyOutcome::DryRun);
    assert!(!report.gpus[0].nvidia_work().unwrap().plan.is_empty());
    assert_eq!(std::fs::read(&bed.state).unwrap(), before);
    assert!(bed.backend.host().resets.is_empty());
    assert!(
        bed.store
            .load()
            .unwrap()
            .is_none_or(|state| state.layout.is_none())
    );
}

#[test]
fn a_held_lock_blocks_the_apply_with_lock_busy_before_any_read() {
    let mut bed = Bed::two_a100s();
    let held = bed.host.try_lock().unwrap();
    let report = bed.apply(&bed.options("all-1g.5gb"));
    drop(held);
    assert_eq!(report.outcome, ApplyOutcome::Blocked(ApplyReason::LockBusy));
    assert!(report.gpus.is_empty());
    assert_eq!(mig(&bed.card(FIRST)), (0, 0));
}

#[test]
fn with_the_pool_off_a_layout_that_turns_mig_on_is_blocked_pool_disabled() {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("all-1g.5gb").pool(Pool::Disabled));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::PoolDisabled)
    );
    assert_eq!(mig(&bed.card(FIRST)), (0, 0));
    assert_eq!(
        bed.recorded(),
        ("blocked".to_owned(), Some("pool_disabled".to_owned()))
    );
}

#[test]
fn an_absent_helper_blocks_the_apply_with_helper_unavailable() {
    let mut bed = Bed::two_a100s();
    bed.helper = Helper::new(HelperConfig::new(bed.dir.path().join("no-helper")));
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::HelperUnavailable)
    );
    assert!(report.detail.unwrap().contains("no-helper"));
}

#[test]
fn a_card_that_does_not_read_blocks_every_card_with_gpu_unreadable() {
    let mut bed = Bed::two_a100s();
    bed.change(|scenario| {
        device_mut(scenario, SECOND)
            .fail
            .insert("nvmlDeviceGetMigMode".to_owned(), "UNKNOWN".to_owned());
    });
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::GpuUnreadable)
    );
    assert!(report.detail.unwrap().contains(SECOND));
    // Not even the card that read was touched.
    assert_eq!(mig(&bed.card(FIRST)), (0, 0));
}

#[test]
fn a_card_with_a_process_on_it_blocks_with_gpu_busy_naming_it() {
    let mut bed = Bed::two_a100s();
    bed.apply(&bed.options("all-1g.5gb"));
    bed.change(|scenario| {
        let mut client: Client =
            serde_json::from_value(serde_json::json!({"pid": 4242, "name": "python3"})).unwrap();
        client.pid = 4242;
        device_mut(scenario, FIRST).clients.push(client);
    });
    let report = bed.apply(&bed.options("first-3g"));
    assert_eq!(report.outcome, ApplyOutcome::Blocked(ApplyReason::GpuBusy));
    assert!(
        report.detail.as_deref().unwrap().contains("4242"),
        "{:?}",
        report.detail
    );
    assert_eq!(bed.card(FIRST).gpu_instances.len(), 7);
}

#[test]
fn a_layout_the_card_cannot_hold_is_blocked_as_impossible_with_its_kind() {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("too-many"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible)
    );
    let impossible = report.impossible.unwrap();
    assert_eq!(impossible.device, bdf(FIRST));
    assert_eq!(impossible.kind, ImpossibleKind::TooMany);
    assert_eq!(mig(&bed.card(FIRST)), (0, 0));
}

#[test]
fn a_start_hook_that_fails_blocks_the_apply_with_hook_failed() {
    let mut bed = Bed::two_a100s();
    let hooks = Hooks::none().with(
        HookPoint::ApplyStart,
        CommandLine::new("/bin/false", [""; 0]),
    );
    let report = bed.apply(&bed.options("all-1g.5gb").hooks(hooks));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::HookFailed)
    );
    assert_eq!(report.hooks.len(), 1);
    assert_eq!(mig(&bed.card(FIRST)), (0, 0));
}

#[test]
fn a_restore_onto_a_card_of_another_model_is_blocked_card_changed() {
    let mut bed = Bed::two_a100s();
    bed.apply(&bed.options("all-1g.5gb"));
    bed.change(|scenario| device_mut(scenario, SECOND).name = "NVIDIA A30".to_owned());
    let Restore::Ran(report) = bed.restore(&ApplyOptions::new(Pool::Enabled)) else {
        panic!("nothing declared");
    };
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::CardChanged)
    );
    assert!(report.detail.unwrap().contains("NVIDIA A30"));
}

#[test]
fn an_apply_cancelled_before_it_holds_the_lock_is_blocked_cancelled_and_writes_nothing() {
    let mut bed = Bed::two_a100s();
    let cancel = Cancel::new();
    cancel.cancel();
    let report = bed.apply(
        &bed.options("all-1g.5gb")
            .lock_wait(Duration::from_secs(3600))
            .cancel(cancel),
    );
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::Cancelled)
    );
    assert!(bed.store.load().unwrap().is_none());
    assert_eq!(mig(&bed.card(FIRST)), (0, 0));
}

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
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::Cancelled),
        "{:?}",
        report.detail
    );
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
    assert_eq!(again.outcome, ApplyOutcome::Done, "{:?}", again.detail);
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
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::StepRefused),
        "{:?}",
        report.detail
    );
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
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::ResetBlocked),
        "{:?}",
        report.detail
    );
    assert!(report.detail.unwrap().contains("2718"));
    assert!(bed.backend.host().resets.is_empty());
}

#[test]
fn a_reset_that_would_take_an_nvlink_peer_with_instances_outside_the_layout_is_refused() {
    let mut bed = Bed::new(
        &[
            (FIRST, scenarios::A100_MIG_OFF),
            (SECOND, scenarios::A100_MIG_ON_CARVED),
        ],
        &[&[FIRST, SECOND]],
    );
    // The peer carries instances (the carved scenario's vGPUs and clients removed: idle).
    bed.change(|scenario| {
        let peer = device_mut(scenario, SECOND);
        peer.vgpus.clear();
        peer.clients.clear();
    });
    let report = bed.apply(&bed.options("first-3g"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::ResetBlocked),
        "{:?}",
        report.detail
    );
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
fn an_nvlink_pair_named_by_the_layout_is_reset_in_one_command() {
    let mut bed = Bed::new(
        &[
            (FIRST, scenarios::A100_MIG_OFF),
            (SECOND, scenarios::A100_MIG_OFF),
        ],
        &[&[FIRST, SECOND]],
    );
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
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
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::ModePending),
        "{:?}",
        report.detail
    );
    assert_eq!(mig(&bed.card(FIRST)), (0, 1));
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
                change_state(&state, |scenario| {
                    let whole: GpuInstance = serde_json::from_value(serde_json::json!({
                        "id": 1, "profile_id": 0, "placement": {"start": 0, "size": 8},
                        "compute_instances": []
                    }))
                    .unwrap();
                    device_mut(scenario, FIRST).gpu_instances.push(whole);
                });
            }
        }
    });
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::DidNotConverge),
        "{:?}",
        report.detail
    );
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
                change_state(&state, |scenario| {
                    let foreign: GpuInstance = serde_json::from_value(serde_json::json!({
                        "id": 9, "profile_id": 19, "placement": {"start": 6, "size": 1},
                        "compute_instances": []
                    }))
                    .unwrap();
                    device_mut(scenario, FIRST).gpu_instances.push(foreign);
                });
            }
        }
    });
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::ReadBackDiffers),
        "{:?}",
        report.detail
    );
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
    assert_eq!(
        report.outcome,
        ApplyOutcome::Failed(ApplyReason::GpuUnreadable),
        "{:?}",
        report.detail
    );
}

#[test]
fn a_card_gone_after_its_reset_requires_a_cold_reboot() {
    let mut bed = Bed::two_a100s();
    bed.backend.host_mut().fault = Some(ResetFault::Gone("00000000:3B:00.0".to_owned()));
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(
        report.outcome,
        ApplyOutcome::ColdRebootRequired(ColdRebootReason::GpuMissing),
        "{:?}",
        report.detail
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
fn a_profile_entry_that_did_not_read_is_reported_not_dropped() {
    let mut bed = Bed::two_a100s();
    // A helper whose reply's 7g.40gb entry does not decode (its ID a string): the entry is
    // lost, the rest of the reply reads.
    let real = bed.helper.config().program.path().to_path_buf();
    let wrapper = bed.dir.path().join("lossy-helper");
    gpu_host_probe::test_util::write_executable(
        &wrapper,
        &format!(
            "#!/bin/sh
if [ \"$1\" = read ]; then '{}' \"$@\" | sed 's/{{\"id\":0,\"name\":\"7g.40gb\"/{{\"id\":\"zero\",\"name\":\"7g.40gb\"/'; else exec '{}' \"$@\"; fi\n",
            real.display(),
            real.display()
        ),
    )
    .unwrap();
    bed.helper = Helper::new(HelperConfig::new(wrapper));
    let report = bed.apply(&bed.options("all-1g.5gb").dry_run(true));
    assert_eq!(report.outcome, ApplyOutcome::DryRun, "{:?}", report.detail);
    assert!(
        report
            .warnings
            .iter()
            .any(|warning| matches!(warning, ApplyWarning::ProfilesUnread { device, .. } if *device == bdf(FIRST))),
        "{:?} {:?}",
        report.outcome,
        report.warnings
    );
}

#[test]
fn leaving_partitioning_turns_mig_off_with_one_reset_command_for_both() {
    let mut bed = Bed::two_a100s();
    bed.apply(&bed.options("all-1g.5gb"));
    let report = bed.apply(&bed.options("all-disabled"));
    assert_eq!(report.outcome, ApplyOutcome::Done, "{:?}", report.detail);
    for bus_id in [FIRST, SECOND] {
        let card = bed.card(bus_id);
        assert_eq!(mig(&card), (0, 0), "{bus_id}");
        assert!(card.gpu_instances.is_empty());
    }
    assert_eq!(
        bed.backend.host().resets.len(),
        2,
        "{:?}",
        bed.backend.host().resets
    );
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
    assert_eq!(
        report.outcome,
        ApplyOutcome::ColdRebootRequired(ColdRebootReason::GpuMissing),
        "{:?}",
        report.detail
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

#[test]
fn a_layout_that_names_no_gpu_of_the_host_says_so_and_never_that_it_holds() {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("gpu-7"));
    assert_eq!(report.outcome, ApplyOutcome::NothingNamed);
    assert!(
        report
            .detail
            .as_deref()
            .is_some_and(|detail| detail.contains("names no GPU of this host")),
        "{:?}",
        report.detail
    );
    assert_eq!(report.conclusion(), mig_layout::Conclusion::NothingNamed);
    assert_ne!(
        report.conclusion().to_string(),
        "the layout holds, read back"
    );
    assert!(bed.store.load().unwrap().is_none(), "nothing recorded");
}

#[test]
fn an_assert_whose_lock_is_held_is_blocked_lock_busy_naming_the_holder_as_an_apply_is() {
    let bed = Bed::two_a100s();
    let _held = bed.host.try_lock().unwrap();
    let document = mig_layout::Document::from_text(crate::common::bed::LAYOUTS).unwrap();
    let specs = document.label("all-1g.5gb").unwrap();
    let mut store = host_sync::MemoryStore::default();
    let report = mig_layout::assert_applied(
        mig_layout::AssertRun::new(&bed.host, &bed.helper, &mut store),
        "all-1g.5gb",
        specs,
        &ApplyOptions::new(Pool::Enabled),
    )
    .unwrap();
    assert_eq!(
        report.outcome,
        mig_layout::AssertOutcome::Blocked(ApplyReason::LockBusy)
    );
    assert!(
        report
            .detail
            .as_deref()
            .is_some_and(|detail| detail.contains("held by pid")),
        "{:?}",
        report.detail
    );
}

#[test]
fn a_failed_apply_leaves_the_declaration_before_it_standing_and_a_restore_brings_the_host_back() {
    let mut bed = Bed::two_a100s();
    let first = bed.apply(&bed.options("all-1g.5gb"));
    assert_eq!(first.outcome, ApplyOutcome::Done, "{:?}", first.detail);
    let before = bed.store.load().unwrap().unwrap().declared.unwrap();
    // The card refuses the next layout's create, after its destroys were made.
    bed.change(|scenario| {
        device_mut(scenario, FIRST).fail.insert(
            "nvmlDeviceCreateGpuInstanceWithPlacement".to_owned(),
            "INSUFFICIENT_RESOURCES".to_owned(),
        );
    });
    let failed = bed.apply(&bed.options("first-3g"));
    assert_eq!(
        failed.outcome,
        ApplyOutcome::Failed(ApplyReason::StepRefused),
        "{:?}",
        failed.detail
    );
    let after = bed.store.load().unwrap().unwrap().declared.unwrap();
    assert_eq!(
        (&after.label, after.generation, &after.gpus),
        (&before.label, before.generation, &before.gpus),
        "the declaration before stands"
    );
    // The report says how the host now differs from it.
    let host = failed.host.as_ref().unwrap();
    assert_eq!(host.declared, Some(layout_model::HoldingState::Drifted));
    assert!(
        host.differences.iter().any(|d| d.device == bdf(FIRST)),
        "{:?}",
        host.differences
    );
    // The card takes creates again: a restore brings the host back to the declaration.
    bed.change(|scenario| {
        device_mut(scenario, FIRST).fail.clear();
    });
    let Restore::Ran(restored) = bed.restore(&ApplyOptions::new(Pool::Enabled)) else {
        panic!("the restore did not run");
    };
    assert_eq!(
        restored.outcome,
        ApplyOutcome::Done,
        "{:?}",
        restored.detail
    );
    assert_eq!(restored.conclusion(), mig_layout::Conclusion::Holds);
    assert_eq!(bed.card(FIRST).gpu_instances.len(), 7);
}
