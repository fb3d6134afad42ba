//! The declared layout tells the truth, for a toolstack that composes the crates itself: a warm
//! reset it runs through `warm-reset` ends the check; a cancel before the first write leaves the
//! declaration; a store that drops the declaration is named; adopt or match; once per boot; no
//! second warm reset of a card that needs a cold reboot; the end of a restore with a declared GPU
//! gone says the layout does not hold.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::bed::{Bed, FIRST, SECOND, bdf, change_state, device_mut};
use crate::common::{assert_detail_says, assert_outcome};
use fake_nvml::{GpuInstance, ResetFault};
use gpu_host_probe::Cancel;
use gpu_host_probe::Clock;
use gpu_host_probe::helper::{Helper, HelperConfig};
use host_sync::{HostState, MemoryStore, Pool, StateStore, StoreError};
use layout_model::{DifferenceKind, Holding, HoldingState, Unchecked, Unnamed};
use mig_layout::{
    ApplyError, ApplyOptions, ApplyOutcome, ApplyReason, Conclusion, Document, Method, ResetWith,
    Restore,
};
use std::time::Duration;
use warm_reset::{MachineConfig, ResetOutcome, ResetRun};

fn holding(bed: &mut Bed) -> Holding {
    let state = bed.store.load().unwrap().unwrap();
    state.declared.unwrap().holding(&bed.host.now())
}

fn label(bed: &mut Bed) -> String {
    bed.store.load().unwrap().unwrap().declared.unwrap().label
}

/// `all-1g.5gb` applied on both A100s (MIG on, a reset, seven instances each), holding.
fn applied() -> Bed {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(&report, ApplyOutcome::Done);
    assert_eq!(holding(&mut bed), Holding::Holds);
    bed
}

#[test]
fn a_warm_reset_an_embedder_runs_through_the_library_makes_the_holding_unknown_naming_it() {
    let mut bed = applied();
    let config = MachineConfig::new("0".parse().unwrap())
        .method(Method::Nvidia)
        .window(Duration::from_secs(90));
    let clock: &dyn Clock = &*bed.clock;
    let report =
        warm_reset::execute(ResetRun::new(&config, &bed.host, &mut bed.backend).clock(clock))
            .unwrap();
    assert_eq!(report.outcome, ResetOutcome::Done, "{}", report.detail);
    let after = holding(&mut bed);
    let Holding::Unknown(Unchecked::WrittenSince(writes)) = &after else {
        panic!("{after:?}");
    };
    assert_eq!(writes[0].device, Some(bdf(FIRST)));
    assert!(
        after.to_string().contains("a warm reset (nvidia)"),
        "{after}"
    );
    // The next sync reads the card again: the reset took its instances.
    let sync = crate::common::sync_enabled(
        &bed.host,
        &bed.helper,
        &mut bed.store,
        host_sync::AfterBoot::No,
    );
    assert_eq!(sync.reason, host_sync::HostReason::LayoutDrifted);
    assert_eq!(
        sync.drift
            .iter()
            .filter(|d| d.kind() == DifferenceKind::InstanceMissing && d.device == bdf(FIRST))
            .count(),
        7
    );
    assert_eq!(holding(&mut bed).state(), HoldingState::Drifted);
}

#[test]
fn the_pool_switched_off_after_a_check_makes_the_holding_unknown() {
    let mut bed = applied();
    host_sync::sync(
        &bed.host,
        &bed.helper,
        &mut bed.store,
        &host_sync::SyncOptions::new(Pool::Disabled, host_sync::AfterBoot::No),
    )
    .unwrap();
    assert!(
        matches!(holding(&mut bed), Holding::Unknown(Unchecked::Lapsed(_))),
        "{:?}",
        holding(&mut bed)
    );
}

/// A helper that answers every read as the fake does, and hangs in `apply` once it has said it
/// started (it touches `started`).
fn hanging_in_apply(bed: &Bed) -> (Helper, std::path::PathBuf) {
    let started = bed.dir.path().join("apply-started");
    let wrapper = bed.dir.path().join("hanging-helper");
    let real = bed.helper.config().program.path().to_path_buf();
    gpu_host_probe::test_util::write_executable(
        &wrapper,
        &format!(
            "#!/bin/sh\ncase \"$1\" in apply) : > '{}'; exec sleep 3600 ;; esac\nexec '{}' \"$@\"\n",
            started.display(),
            real.display()
        ),
    )
    .unwrap();
    (Helper::new(HelperConfig::new(wrapper)), started)
}

#[test]
fn a_cancel_while_the_first_batch_is_in_flight_writes_nothing_and_the_declaration_stands() {
    let mut bed = applied();
    let (hanging, started) = hanging_in_apply(&bed);
    let real = std::mem::replace(&mut bed.helper, hanging);
    let cancel = Cancel::new();
    let returned = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let canceller = {
        let (cancel, returned) = (cancel.clone(), returned.clone());
        std::thread::spawn(move || {
            // Waits for the batch to be in flight (no bound on time: the apply waits for it),
            // or for an apply that returned without it (the assertions below then fail).
            while !started.exists() && !returned.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            cancel.cancel();
        })
    };
    let report = bed.apply(&bed.options("all-disabled").cancel(cancel));
    returned.store(true, std::sync::atomic::Ordering::SeqCst);
    canceller.join().unwrap();
    assert_outcome(&report, ApplyOutcome::Blocked(ApplyReason::Cancelled));
    assert_detail_says(&report, "nothing was written");
    assert_eq!(label(&mut bed), "all-1g.5gb");
    // A restore applies the declaration that stands: the cards hold it, zero steps.
    bed.helper = real;
    let Restore::Ran(restored) = bed.restore(&ApplyOptions::new(Pool::Enabled)) else {
        panic!("nothing restored");
    };
    assert_eq!(restored.label, "all-1g.5gb");
    assert_outcome(&restored, ApplyOutcome::Done);
    assert_eq!(restored.writes(), 0);
}

/// A store written before the declaration existed: it keeps every member but `declared`.
#[derive(Debug, Default)]
struct OldStore(MemoryStore);

impl StateStore for OldStore {
    fn load(&mut self) -> Result<Option<HostState>, StoreError> {
        self.0.load()
    }

    fn save(&mut self, state: &HostState) -> Result<(), StoreError> {
        let mut kept = state.clone();
        kept.declared = None;
        self.0.save(&kept)
    }
}

#[test]
fn an_apply_into_a_store_that_does_not_keep_the_declaration_fails_naming_it() {
    let bed = Bed::two_a100s();
    let document = Document::from_text(crate::common::bed::LAYOUTS).unwrap();
    let specs = document.label("all-1g.5gb").unwrap().to_vec();
    let mut store = OldStore::default();
    let mut backend = fake_nvml::backend(&bed.state, bed.clock.clone());
    let clock: &dyn Clock = &*bed.clock;
    let reset = ResetWith::new(Method::Nvidia, &mut backend)
        .window(Duration::from_secs(90))
        .clock(clock);
    let error = mig_layout::apply(
        mig_layout::ApplyRun::new(&bed.host, &bed.helper, &mut store, reset),
        "all-1g.5gb",
        &specs,
        &ApplyOptions::new(Pool::Enabled),
    )
    .unwrap_err();
    let ApplyError::NotKept { difference, report } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(difference.path, "declared");
    assert_eq!(
        difference.to_string(),
        "declared: saved Some(..), loaded None"
    );
    // What the apply did is in the report all the same.
    assert_eq!(report.outcome, ApplyOutcome::Done);
}

/// Creates GPU instance `id` of 1g.5gb at slice `start` on `bus_id` by hand, with its compute
/// instance, as an administrator's `nvidia-smi mig -cgi` does.
fn by_hand(bed: &Bed, bus_id: &str, id: u32, start: u32) {
    let instance: GpuInstance = serde_json::from_value(serde_json::json!({
        "id": id, "profile_id": 19, "placement": {"start": start, "size": 1},
        "compute_instances": [{"id": 0, "profile_id": 0, "placement": {"start": 0, "size": 1}}],
    }))
    .unwrap();
    change_state(&bed.state, |scenario| {
        device_mut(scenario, bus_id).gpu_instances.push(instance);
    });
}

/// `first-3g` (one 3g.20gb on the first card) applied: slices 4 to 7 are free.
fn first_3g() -> Bed {
    let mut bed = Bed::two_a100s();
    let report = bed.apply(&bed.options("first-3g"));
    assert_outcome(&report, ApplyOutcome::Done);
    bed
}

#[test]
fn an_instance_created_by_hand_is_destroyed_by_a_restore_by_default() {
    let mut bed = first_3g();
    by_hand(&bed, FIRST, 9, 6);
    let Restore::Ran(report) = bed.restore(&ApplyOptions::new(Pool::Enabled)) else {
        panic!("nothing restored");
    };
    assert_outcome(&report, ApplyOutcome::Done);
    assert!(bed.card(FIRST).gpu_instances.iter().all(|gi| gi.id != 9));
}

#[test]
fn adopting_an_instance_created_by_hand_a_restore_keeps_it_and_reports_it() {
    let mut bed = first_3g();
    by_hand(&bed, FIRST, 9, 6);
    let options = ApplyOptions::new(Pool::Enabled).unnamed(Unnamed::Adopt);
    let Restore::Ran(report) = bed.restore(&options) else {
        panic!("nothing restored");
    };
    assert_outcome(&report, ApplyOutcome::Done);
    assert_eq!(report.writes(), 0);
    let adopted = &report.gpus[0].nvidia_work().unwrap().adopted;
    assert_eq!(adopted.len(), 1, "{report:?}");
    assert_eq!(adopted[0].gpu_instance_id, 9);
    assert!(bed.card(FIRST).gpu_instances.iter().any(|gi| gi.id == 9));
    // Declared so: the sync after it found no drift, and lists it as adopted.
    let state = bed.store.load().unwrap().unwrap();
    let declared = state.declared.unwrap();
    assert_eq!(
        declared.gpus[&bdf(FIRST)].nvidia().map(|gpu| gpu.unnamed),
        Some(Unnamed::Adopt)
    );
    assert_eq!(declared.check.as_ref().unwrap().adopted.len(), 1);
    assert_eq!(declared.holding(&bed.host.now()), Holding::Holds);
}

#[test]
fn an_adopted_instance_where_the_declaration_places_one_makes_the_restore_impossible() {
    let mut bed = first_3g();
    // The 3g.20gb destroyed by hand, and a 1g.5gb made where it was.
    change_state(&bed.state, |scenario| {
        device_mut(scenario, FIRST).gpu_instances.clear();
    });
    by_hand(&bed, FIRST, 9, 0);
    let options = ApplyOptions::new(Pool::Enabled).unnamed(Unnamed::Adopt);
    let Restore::Ran(report) = bed.restore(&options) else {
        panic!("nothing restored");
    };
    assert_eq!(
        report.outcome,
        ApplyOutcome::Blocked(ApplyReason::LayoutImpossible)
    );
    let impossible = report.impossible.unwrap();
    assert_eq!(impossible.kind, mig_layout::ImpossibleKind::AdoptedInTheWay);
    assert!(
        impossible.message.contains("GPU instance 9"),
        "{impossible}"
    );
}

#[test]
fn a_boot_restore_runs_once_per_boot_by_itself() {
    let mut bed = applied();
    let options = ApplyOptions::new(Pool::Enabled).once_per_boot(true);
    assert!(matches!(bed.restore(&options), Restore::Ran(_)));
    assert!(matches!(
        bed.restore(&options),
        Restore::AlreadyRanThisBoot(_)
    ));
    // A plain restore is not a boot's: it runs.
    assert!(matches!(
        bed.restore(&ApplyOptions::new(Pool::Enabled)),
        Restore::Ran(_)
    ));
}

#[test]
fn after_a_reset_that_needs_a_cold_reboot_no_restore_warm_resets_that_card_again_in_the_boot() {
    let mut bed = Bed::two_a100s();
    bed.backend.host_mut().fault = Some(ResetFault::Hang);
    let report = bed.apply(&bed.options("first-3g"));
    assert!(
        matches!(report.outcome, ApplyOutcome::ColdRebootRequired(_)),
        "{:?}",
        report.outcome
    );
    let resets = bed.backend.host().resets.len();
    bed.backend.host_mut().fault = None;
    let Restore::Ran(again) = bed.restore(&ApplyOptions::new(Pool::Enabled)) else {
        panic!("nothing restored");
    };
    assert_eq!(bed.backend.host().resets.len(), resets, "a second reset");
    assert!(
        matches!(again.outcome, ApplyOutcome::ColdRebootRequired(_)),
        "{:?}: {:?}",
        again.outcome,
        again.detail
    );
    assert_detail_says(&again, "cold reboot");
    let journal = warm_reset::read_journal(&bed.host).unwrap();
    assert_eq!(journal.cold_reboot.len(), 1);
    assert_eq!(journal.cold_reboot[0].devices, vec![bdf(FIRST)]);
}

#[test]
fn a_restore_with_a_declared_gpu_gone_ends_saying_the_layout_does_not_hold() {
    let mut bed = applied();
    // The second card leaves the host (unbound from nvidia, as for pass-through).
    std::fs::remove_file(
        bed.host
            .sysfs_root()
            .join("bus/pci/devices")
            .join(SECOND)
            .join("driver"),
    )
    .unwrap();
    let Restore::Ran(report) = bed.restore(&ApplyOptions::new(Pool::Enabled)) else {
        panic!("nothing restored");
    };
    assert_outcome(&report, ApplyOutcome::Done);
    assert_eq!(report.conclusion(), Conclusion::DeclaredDiffers);
    assert_ne!(
        report.conclusion().to_string(),
        "the layout holds, read back"
    );
}

#[test]
fn an_assert_judges_instances_the_layout_does_not_name_as_an_apply_would_treat_them() {
    let bed = first_3g();
    by_hand(&bed, FIRST, 9, 6);
    let document = mig_layout::Document::from_text(crate::common::bed::LAYOUTS).unwrap();
    let specs = document.label("first-3g").unwrap().to_vec();
    let assert = |unnamed| {
        let options = ApplyOptions::new(Pool::Enabled).unnamed(unnamed);
        let mut store = MemoryStore::default();
        let run = mig_layout::AssertRun::new(&bed.host, &bed.helper, &mut store);
        mig_layout::assert_applied(run, "first-3g", &specs, &options)
            .unwrap()
            .outcome
    };
    assert_eq!(
        (assert(Unnamed::Adopt), assert(Unnamed::Match)),
        (
            mig_layout::AssertOutcome::Applied,
            mig_layout::AssertOutcome::Differs
        )
    );
}

#[test]
fn an_apply_stamps_its_records_with_its_runs_clock_not_the_machines() {
    let mut bed = Bed::two_a100s();
    // The run's clock in 2039, far from the machine's.
    bed.clock.sleep(Duration::from_secs(400_000_000));
    let epoch = 1_800_000_000 + 400_000_000;
    let report = bed.apply(&bed.options("all-1g.5gb"));
    assert_outcome(&report, ApplyOutcome::Done);
    let state = bed.store.load().unwrap().unwrap();
    let layout = state.layout.unwrap();
    let finished = layout.finished_at.unwrap();
    assert!(
        (epoch..epoch + 3600).contains(&layout.started_at) && layout.started_at <= finished,
        "{layout:?}"
    );
    assert!(finished < epoch + 3600, "{layout:?}");
}
