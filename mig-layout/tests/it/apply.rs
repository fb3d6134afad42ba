//! The executor in its own crate: an apply over the real helper on the fake NVML (its state in
//! a file, so consecutive runs see each other's writes), the fake's test reset backend
//! (`fake_nvml::backend`, the nvidia method over that state) and a virtual clock. The runs that
//! hold, each reason an apply is blocked before it writes, leaving, and a restore after a
//! failure, each by what the card then holds and what the store records (the failures once it
//! has written are `apply_failures`'s).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{assert_detail_says, assert_outcome};
use fake_nvml::Client;
use gpu_host_probe::Cancel;
use gpu_host_probe::helper::{Helper, HelperConfig};
use gpu_host_probe::run::CommandLine;
use gpu_partition_types::StepOutcome;
use host_sync::{Pool, StateStore};
use mig_layout::{
    ApplyOptions, ApplyOutcome, ApplyReason, ApplyWarning, HookPoint, Hooks, ImpossibleKind,
    PlanLine, Restore,
};

use std::time::Duration;

use crate::common::bed::{Bed, FIRST, SECOND, bdf, device_mut, mig};

#[test]
fn two_a100s_enter_partitioning_reset_together_in_one_command_and_read_back_as_the_layout_wants() {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(&report, ApplyOutcome::Done);
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
    assert_outcome(&report, ApplyOutcome::DryRun);
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
    assert_outcome(&report, ApplyOutcome::Done);
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
fn a_layout_that_names_no_gpu_of_the_host_says_so_and_never_that_it_holds() {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("gpu-7"));
    assert_eq!(report.outcome, ApplyOutcome::NothingNamed);
    assert_detail_says(&report, "names no GPU of this host");
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
    assert_outcome(&first, ApplyOutcome::Done);
    let before = bed.store.load().unwrap().unwrap().declared.unwrap();
    // The card refuses the next layout's create, after its destroys were made.
    bed.change(|scenario| {
        device_mut(scenario, FIRST).fail.insert(
            "nvmlDeviceCreateGpuInstanceWithPlacement".to_owned(),
            "INSUFFICIENT_RESOURCES".to_owned(),
        );
    });
    let failed = bed.apply(&bed.options("first-3g"));
    assert_outcome(&failed, ApplyOutcome::Failed(ApplyReason::StepRefused));
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
    assert_outcome(&restored, ApplyOutcome::Done);
    assert_eq!(restored.conclusion(), mig_layout::Conclusion::Holds);
    assert_eq!(bed.card(FIRST).gpu_instances.len(), 7);
}
