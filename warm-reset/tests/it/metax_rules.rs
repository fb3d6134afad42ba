//! The MetaX backend's rules, one case each: what blocks a reset before it (driver, versions,
//! processes, the ID), what the group is (the topology), and when the GPUs are back (in their
//! places, every MetaXLink back). A scripted host answers with published layouts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;
use warm_reset::MetaxBackend;
use warm_reset::ResetWarning;
use warm_reset::io::{KernelLogSource, KmsgRecord, ToolEnd};
use warm_reset::metax::mx_smi::{GpuRow, GpuState, Topology};
use warm_reset::metax::{DriverUse, MetaxHost};
use warm_reset::{
    Back, Backend, BackendError, BlockedReason, ColdRebootReason, NotBack, Refusal, ResetEnd,
    Target,
};

const PLAIN_IDLE: &str = include_str!("../data/mx-smi/plain-2.3.1-c500-idle.txt");
const BUSY_SECTION: &str = include_str!("../data/mx-smi/process-table-busy.txt");

/// A MetaX host that prints what it is given.
struct Scripted {
    driver: DriverUse,
    plain: Result<String, BackendError>,
    listings: VecDeque<Result<String, BackendError>>,
    topologies: VecDeque<Result<String, BackendError>>,
    records: Vec<KmsgRecord>,
    /// What `mx-smi -r` prints.
    said: String,
    /// How `mx-smi -r` exits.
    code: i32,
}

fn why(text: &str) -> BackendError {
    warm_reset::metax::MxSmiError::SaidFailed {
        command: "mx-smi".to_owned(),
        line: text.to_owned(),
    }
    .into()
}

fn row(node: u32, bdf: &str, state: GpuState, uuid: &str) -> GpuRow {
    GpuRow::new(node, "MXC500", bdf.parse().unwrap(), state, Some(uuid))
}

fn rows() -> Vec<GpuRow> {
    vec![
        row(0, "0000:06:00.0", GpuState::Available, "GPU-a0"),
        row(1, "0000:07:00.0", GpuState::Available, "GPU-a1"),
    ]
}

fn listing(rows: &[GpuRow]) -> String {
    let lines: Vec<String> = rows.iter().map(GpuRow::to_line).collect();
    format!("mx-smi  version: 2.3.1\n{}\n", lines.join("\n"))
}

fn linked() -> String {
    Topology::new(vec![0, 1], [(0, 1)]).to_text()
}

fn unlinked() -> String {
    Topology::new(vec![0, 1], []).to_text()
}

impl Scripted {
    fn new() -> Self {
        Self {
            driver: DriverUse::Loaded(0),
            plain: Ok(PLAIN_IDLE.to_owned()),
            listings: VecDeque::from([Ok(listing(&rows()))]),
            topologies: VecDeque::from([Ok(linked())]),
            records: Vec::new(),
            said: String::new(),
            code: 0,
        }
    }

    fn backend(self) -> MetaxBackend<Scripted> {
        MetaxBackend::of(self)
    }
}

impl KernelLogSource for Scripted {
    fn mark_kernel_log(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    fn records_since_mark(&mut self) -> Result<Vec<KmsgRecord>, BackendError> {
        Ok(self.records.clone())
    }
}

impl MetaxHost for Scripted {
    fn is_root(&mut self) -> bool {
        true
    }
    fn kernel_log(&mut self) -> &mut dyn KernelLogSource {
        self
    }
    fn find_mx_smi(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
    fn mx_smi_path(&self) -> PathBuf {
        PathBuf::from("/opt/mxdriver/bin/mx-smi")
    }
    fn driver_use(&mut self) -> DriverUse {
        self.driver.clone()
    }
    fn plain(&mut self) -> Result<String, BackendError> {
        self.plain.clone()
    }
    fn listing(&mut self) -> Result<String, BackendError> {
        self.listings
            .pop_front()
            .unwrap_or_else(|| Err(why("no more listings")))
    }
    fn topology(&mut self) -> Result<String, BackendError> {
        self.topologies
            .pop_front()
            .unwrap_or_else(|| Err(why("no more topologies")))
    }
    fn reset(&mut self, _: &str, _: Duration) -> ToolEnd {
        ToolEnd::Exited {
            command: "mx-smi -r -i 0".into(),
            code: self.code,
            said: self.said.clone(),
        }
    }
}

fn refused(result: Result<Vec<ResetWarning>, Refusal>) -> (BlockedReason, String) {
    let refusal = result.expect_err("refused");
    (refusal.reason, refusal.detail)
}

/// The refusal of the preflight of the scripted host, changed by `change`.
fn prepare_refused(change: impl FnOnce(&mut Scripted)) -> (BlockedReason, String) {
    let mut host = Scripted::new();
    change(&mut host);
    refused(host.backend().prepare())
}

#[test]
fn an_unused_driver_and_recent_versions_pass_the_hosts_checks() {
    assert_eq!(Scripted::new().backend().prepare(), Ok(vec![]));
}

#[test]
fn no_metax_line_blocks_with_driver_not_loaded() {
    let (reason, _) = prepare_refused(|host| host.driver = DriverUse::NotLoaded);
    assert_eq!(reason, BlockedReason::DriverNotLoaded);
}

#[test]
fn a_used_driver_blocks_with_driver_in_use_and_its_count() {
    let (reason, detail) = prepare_refused(|host| host.driver = DriverUse::Loaded(3));
    assert_eq!(reason, BlockedReason::DriverInUse);
    assert!(detail.contains("use count is 3"), "{detail}");
}

#[test]
fn an_unreadable_use_count_blocks_with_driver_in_use() {
    let (reason, _) =
        prepare_refused(|host| host.driver = DriverUse::Unreadable("metax 1 many".into()));
    assert_eq!(reason, BlockedReason::DriverInUse);
}

#[test]
fn an_unreadable_version_is_a_warning_and_the_preflight_goes_on() {
    let mut host = Scripted::new();
    host.plain = Ok(PLAIN_IDLE.replace("BIOS Version: 1.33.5.0", "BIOS Version: N/A     "));
    let warnings = host.backend().prepare().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].to_string().contains("BIOS"), "{warnings:?}");
}

#[test]
fn an_old_kernel_driver_blocks_with_driver_too_old() {
    let mut host = Scripted::new();
    host.plain = Ok(PLAIN_IDLE.replace(
        "Kernel Mode Driver Version: 3.8.30",
        "Kernel Mode Driver Version: 2.3.0 ",
    ));
    let (reason, detail) = refused(host.backend().prepare());
    assert_eq!(reason, BlockedReason::DriverTooOld);
    assert!(detail.contains("2.3.0"), "{detail}");
}

#[test]
fn a_plain_mx_smi_that_fails_blocks_with_mx_smi_unavailable() {
    let (reason, _) = prepare_refused(|host| host.plain = Err(why("exit 1")));
    assert_eq!(reason, BlockedReason::MxSmiUnavailable);
}

#[test]
fn another_vendors_mx_smi_blocks_with_mx_smi_unavailable_naming_it() {
    let (reason, detail) = prepare_refused(|host| host.plain = Ok("MOFFETT-SMI 2.3.0\n".into()));
    assert_eq!(reason, BlockedReason::MxSmiUnavailable);
    assert!(detail.contains("is not MetaX's"), "{detail}");
}

fn resolved(backend: &mut MetaxBackend<Scripted>) -> (Target, Vec<ResetWarning>) {
    backend.resolve(&"0".parse().unwrap()).unwrap()
}

#[test]
fn a_resolved_target_keeps_the_topology_and_names_the_group() {
    let mut backend = Scripted::new().backend();
    let (target, warnings) = resolved(&mut backend);
    assert_eq!(warnings, Vec::<ResetWarning>::new());
    assert_eq!(target.group(), Some(vec![0, 1]));
    assert_eq!(target.verified().len(), 2);
}

#[test]
fn a_topology_that_does_not_read_is_a_warning_and_the_group_stays_unknown() {
    let mut host = Scripted::new();
    host.topologies = VecDeque::from([Err(why("line 3: …"))]);
    let (target, warnings) = resolved(&mut host.backend());
    assert_eq!(target.group(), None);
    assert!(
        warnings[0].to_string().contains("topology does not read"),
        "{warnings:?}"
    );
}

#[test]
fn an_id_that_names_no_gpu_blocks_with_unknown_device() {
    let refusal = Scripted::new()
        .backend()
        .resolve(&"9".parse().unwrap())
        .unwrap_err();
    assert_eq!(refusal.reason, BlockedReason::UnknownDevice);
}

#[test]
fn a_listing_that_fails_before_the_reset_blocks_with_mx_smi_unavailable() {
    let mut host = Scripted::new();
    host.listings = VecDeque::from([Err(why("exit 1"))]);
    let refusal = host.backend().resolve(&"0".parse().unwrap()).unwrap_err();
    assert_eq!(refusal.reason, BlockedReason::MxSmiUnavailable);
}

#[test]
fn no_process_passes_and_the_use_check_adds_nothing_host_wide() {
    let mut backend = Scripted::new().backend();
    assert_eq!(backend.prepare(), Ok(vec![]));
    let (target, _) = resolved(&mut backend);
    assert_eq!(backend.check_use(&target), Ok(vec![]));
}

#[test]
fn a_process_blocks_the_hosts_checks_with_gpu_busy_before_the_id_is_looked_at() {
    let mut host = Scripted::new();
    let process_box = PLAIN_IDLE[..PLAIN_IDLE.find("| Process:").unwrap()]
        .rfind("+-")
        .unwrap();
    host.plain = Ok(format!("{}{BUSY_SECTION}", &PLAIN_IDLE[..process_box]));
    host.listings.clear();
    let (reason, detail) = refused(host.backend().prepare());
    assert_eq!(reason, BlockedReason::GpuBusy);
    assert!(detail.contains("processes use the GPUs"), "{detail}");
}

fn back_after(listing_after: Result<String, BackendError>, topology_after: Option<String>) -> Back {
    let mut host = Scripted::new();
    host.listings.push_back(listing_after);
    if let Some(topology) = topology_after {
        host.topologies.push_back(Ok(topology));
    }
    let mut backend = host.backend();
    let (target, _) = resolved(&mut backend);
    backend.check_back(&target)
}

fn not_back(back: Back) -> (bool, ColdRebootReason, String) {
    match back {
        Back::NotYet(NotBack { reason, detail, .. }) => (false, reason, detail),
        Back::Wrong(NotBack { reason, detail, .. }) => (true, reason, detail),
        other => panic!("back: {other:?}"),
    }
}

#[test]
fn every_gpu_back_in_its_place_with_every_link_is_back() {
    assert_eq!(
        back_after(Ok(listing(&rows())), Some(linked())),
        Back::Yes { warnings: vec![] }
    );
}

#[test]
fn a_gpu_not_available_yet_is_not_yet_back_as_gpu_unavailable() {
    let mut after = rows();
    after[1].state = GpuState::NotAvailable("resetting".into());
    let (wrong, reason, detail) = not_back(back_after(Ok(listing(&after)), None));
    assert_eq!((wrong, reason), (false, ColdRebootReason::GpuUnavailable));
    assert!(
        detail.contains("GPU#1 is Not Available(resetting)"),
        "{detail}"
    );
}

#[test]
fn a_gpu_absent_is_not_yet_back_as_gpu_missing() {
    let (wrong, reason, detail) = not_back(back_after(Ok(listing(&rows()[..1])), None));
    assert_eq!((wrong, reason), (false, ColdRebootReason::GpuMissing));
    assert!(detail.contains("GPU#1 (0000:07:00.0)"), "{detail}");
}

#[test]
fn a_failed_listing_is_not_yet_back_as_gpu_missing() {
    let (wrong, reason, detail) = not_back(back_after(Err(why("exit 1")), None));
    assert_eq!((wrong, reason), (false, ColdRebootReason::GpuMissing));
    assert!(detail.starts_with("mx-smi -L failed"), "{detail}");
}

#[test]
fn a_gpu_back_at_another_pci_address_is_wrong_at_once() {
    let mut after = rows();
    after[1].bdf = "0000:09:00.0".parse().unwrap();
    let (wrong, reason, _) = not_back(back_after(Ok(listing(&after)), None));
    assert_eq!((wrong, reason), (true, ColdRebootReason::TopologyWrong));
}

#[test]
fn a_gpu_back_with_another_uuid_is_wrong_at_once() {
    let mut after = rows();
    after[0].uuid = Some("GPU-other".into());
    let (wrong, reason, _) = not_back(back_after(Ok(listing(&after)), None));
    assert_eq!((wrong, reason), (true, ColdRebootReason::TopologyWrong));
}

#[test]
fn a_metaxlink_that_was_there_before_and_is_not_after_is_wrong() {
    let (wrong, reason, detail) = not_back(back_after(Ok(listing(&rows())), Some(unlinked())));
    assert_eq!((wrong, reason), (true, ColdRebootReason::TopologyWrong));
    assert!(detail.contains("GPU#0-GPU#1"), "{detail}");
}

#[test]
fn a_topology_that_does_not_read_after_the_reset_is_back_with_a_warning() {
    match back_after(Ok(listing(&rows())), None) {
        Back::Yes { warnings } => {
            assert!(
                warnings[0].to_string().contains("after the reset"),
                "{warnings:?}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reset_that_exits_0_and_says_nothing_of_a_failure_finished() {
    let mut backend = Scripted::new().backend();
    let (target, _) = resolved(&mut backend);
    assert_eq!(
        backend.reset(&target, Duration::from_secs(1)),
        ResetEnd::Finished
    );
}

#[test]
fn a_reset_that_exits_0_but_says_it_failed_is_a_failed_reset_naming_the_line() {
    let mut host = Scripted::new();
    host.said = "GPU#0: Reset Failed\n".into();
    let mut backend = host.backend();
    let (target, _) = resolved(&mut backend);
    match backend.reset(&target, Duration::from_secs(1)) {
        ResetEnd::Failed(error) => {
            assert!(error.to_string().contains("GPU#0: Reset Failed"), "{error}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reset_that_exits_non_zero_is_a_failed_reset_with_what_it_said() {
    let mut host = Scripted::new();
    host.code = 1;
    host.said = "device 0 timed out\n".into();
    let mut backend = host.backend();
    let (target, _) = resolved(&mut backend);
    match backend.reset(&target, Duration::from_secs(1)) {
        ResetEnd::Failed(error) => {
            let text = error.to_string();
            assert!(
                text.contains("code 1") && text.contains("device 0 timed out"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn kernel_errors_are_the_error_records_since_the_mark() {
    let mut host = Scripted::new();
    host.records = vec![
        KmsgRecord {
            level: 6,
            sequence: 2,
            message: "metax: reset".into(),
        },
        KmsgRecord {
            level: 3,
            sequence: 3,
            message: "metax 0000:06:00.0: link down".into(),
        },
    ];
    let mut backend = host.backend();
    let (target, _) = resolved(&mut backend);
    assert_eq!(
        backend.kernel_errors(&target).unwrap(),
        ["metax 0000:06:00.0: link down"]
    );
}
