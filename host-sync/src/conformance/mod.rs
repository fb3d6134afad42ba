//! The conformance suite of [`StateStore`] (feature `test-util`): what any store must do to
//! keep the contract written on the trait. A toolstack runs it in its own tests over its own
//! store:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! host_sync::conformance::check_store(|| host_sync::FileStore::new(dir.path()))?;
//! # Ok(())
//! # }
//! ```
//!
//! `open` is called once per check and must give a store over the same backing each time
//! (the same file, the same database), the first time over an empty one: what one store saved,
//! the next one opened must load, as after a restart.

use crate::gpu::GpuRecord;
use crate::record::{Direction, LayoutRecord};
use crate::state::{BootRestore, HostState, StateLost, first_difference};
use crate::status::{HostStatus, StoredReason};
use crate::store::StateStore;
use gpu_host_probe::Boot;
use gpu_host_probe::amdgpu::{ComputePartition, MemoryPartition};
use gpu_partition_types::{Bdf, PartitionMode, Token};
use layout_model::amd::AmdWant;
use std::fmt;

mod full;
use full::full_state;

/// A check of the suite that the store did not pass.
#[derive(Debug)]
#[non_exhaustive]
pub struct ConformanceFailure {
    /// The check, as a sentence.
    pub check: &'static str,
    /// What it found, for people.
    pub found: String,
}

impl fmt::Display for ConformanceFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the store fails the check \"{}\": {}",
            self.check, self.found
        )
    }
}

impl std::error::Error for ConformanceFailure {}

/// Runs every check in turn over stores from `open`; the first that fails is the error.
pub fn check_store<S: StateStore>(mut open: impl FnMut() -> S) -> Result<(), ConformanceFailure> {
    try_check_store(|| Ok::<S, std::convert::Infallible>(open()))
}

/// [`check_store`] over a store whose opening may fail (a database connection): a store that
/// does not open fails the check that opened it, with the error.
pub fn try_check_store<S: StateStore, E: fmt::Display>(
    mut open: impl FnMut() -> Result<S, E>,
) -> Result<(), ConformanceFailure> {
    let mut open = || open().map_err(|error| error.to_string());
    checks(&mut open)
}

/// The suite, over stores that `open` gives (or why it could not).
fn checks<S: StateStore>(
    mut open: &mut dyn FnMut() -> Result<S, String>,
) -> Result<(), ConformanceFailure> {
    expect("a store that never saved loads nothing", &mut open, None)?;
    for (check, state) in states() {
        save(check, &mut open, &state)?;
        expect(check, &mut open, Some(&state))?;
    }
    let check = "a save replaces the whole state: a GPU left out is gone";
    let mut fewer = full_state();
    let first = fewer.gpus.keys().next().copied();
    fewer.gpus.retain(|bdf, _| Some(*bdf) != first);
    fewer.status = HostStatus::Leaving;
    fewer.reason = reason("gpus_still_divided");
    fewer.message = None;
    save(check, &mut open, &full_state())?;
    save(check, &mut open, &fewer)?;
    expect(check, &mut open, Some(&fewer))?;
    let check = "every status and every partition mode reads back";
    for status in HostStatus::ALL {
        let mut state = HostState::new(*status, reason("ready"));
        for (n, mode) in PartitionMode::ALL.iter().enumerate() {
            state
                .gpus
                .insert(bdf(n), GpuRecord::new(0x10de, 0x2335, None, *mode));
        }
        save(check, &mut open, &state)?;
        expect(check, &mut open, Some(&state))?;
    }
    let check = "loading twice answers the same";
    let state = full_state();
    save(check, &mut open, &state)?;
    let mut store = opened(check, &mut open)?;
    let once = store.load();
    let twice = store.load();
    match (&once, &twice) {
        (Ok(Some(a)), Ok(Some(b))) if a == &state && b == &state => Ok(()),
        _ => Err(failure(check, format!("first {once:?}, then {twice:?}"))),
    }
}

fn failure(check: &'static str, found: String) -> ConformanceFailure {
    ConformanceFailure { check, found }
}

/// A store from `open`, or the failure of `check` saying why none opened.
fn opened<S: StateStore>(
    check: &'static str,
    open: &mut dyn FnMut() -> Result<S, String>,
) -> Result<S, ConformanceFailure> {
    open().map_err(|error| failure(check, format!("the store did not open: {error}")))
}

fn save<S: StateStore>(
    check: &'static str,
    open: &mut dyn FnMut() -> Result<S, String>,
    state: &HostState,
) -> Result<(), ConformanceFailure> {
    opened(check, open)?.save(state).map_err(|error| {
        failure(
            check,
            format!("save failed: {}", gpu_host_probe::chain::Chain(&error)),
        )
    })
}

fn expect<S: StateStore>(
    check: &'static str,
    open: &mut dyn FnMut() -> Result<S, String>,
    want: Option<&HostState>,
) -> Result<(), ConformanceFailure> {
    match opened(check, open)?.load() {
        Ok(found) if found.as_ref() == want => Ok(()),
        Ok(found) => Err(failure(
            check,
            match (want, &found) {
                (Some(want), Some(found)) => match first_difference(want, found) {
                    Some(difference) => format!("the first member that differs is {difference}"),
                    None => "a state that differs from the one saved only in memory".to_owned(),
                },
                (Some(_), None) => "loaded nothing, where a state was saved".to_owned(),
                (None, Some(_)) => "loaded a state, where nothing was saved".to_owned(),
                (None, None) => "loaded nothing".to_owned(),
            },
        )),
        Err(error) => Err(failure(
            check,
            format!("load failed: {}", gpu_host_probe::chain::Chain(&error)),
        )),
    }
}

fn reason(token: &str) -> StoredReason {
    StoredReason::of_token(token)
}

fn bdf(n: usize) -> Bdf {
    Bdf::on_bus(u8::try_from(n + 1).unwrap_or(u8::MAX))
}

/// The states the suite saves and reads back, each with the check it makes: between them every
/// member of [`HostState`], nested ones too (a full state, a declaration of every vendor with a
/// difference of every kind, a check that lapsed, a lost state): what the schema's own test
/// walks to find a member added without the schema moving.
pub fn states() -> Vec<(&'static str, HostState)> {
    vec![
        (
            "every field of a full state survives a save and a reopen",
            full_state(),
        ),
        (
            "a state without GPUs, boot or message survives",
            HostState::new(HostStatus::Inactive, reason("no_partitionable_gpu")),
        ),
        (
            "a reason token of a later version is kept as it is",
            later_version(),
        ),
        ("a layout apply still running survives", applying()),
        (
            "a declaration that holds (checked in this boot) survives",
            declared(true),
        ),
        (
            "a declaration whose check found differences of every kind, unread GPUs and adopted instances survives",
            declared(false),
        ),
        (
            "a declaration whose check lapsed (a sync with the pool off) survives",
            lapsed(),
        ),
        (
            "a state that was lost, kept aside, and the last boot restore survive",
            lost(),
        ),
    ]
}

/// A state with a declared layout on four GPUs (an NVIDIA one placed and adopting with vGPUs on
/// two VFs, one by counts only with vGPUs declared by count and heterogeneous mode, one with MIG
/// and its VFs off; boards with and without a serial; an AMD one with its client services) and
/// the check of a sync: holding, or drifted with a difference of every kind, an unread GPU and
/// an adopted instance.
fn declared(holds: bool) -> HostState {
    use gpu_host_probe::WriteMark;
    use gpu_partition_types::VgpuTypeId;
    use gpu_partition_types::{Placement, UnreadableReason};
    use layout_model::amd::AmdDeclared;
    use layout_model::{
        Adopted, Board, BoardChange, BoardId, ComputeFound, Declaration, DeclaredGpu, DeclaredVf,
        DeclaredVgpu, Difference, Fact, Filling, LayoutCheck, NvidiaDeclared, Placed, ProfileKey,
        ProfileRef, ReplyMember, Unnamed, Vendor, VgpuDeclared, Want,
    };
    let type_474 = VgpuTypeId::new(474).unwrap_or(VgpuTypeId(std::num::NonZeroU32::MIN));
    let mut state = full_state();
    let placed = Want::enabled(vec![
        (ProfileKey::Name("1g.5gb".to_owned()), 2),
        (ProfileKey::Id(9), 1),
    ])
    .placed(vec![
        Placed::new(19, Placement::new(0, 1)),
        Placed::new(19, Placement::new(1, 1)),
        Placed::new(9, Placement::new(4, 4)),
    ])
    .unnamed(Unnamed::Adopt);
    let mut gpus = std::collections::BTreeMap::new();
    let on_vfs = VgpuDeclared::on(
        vec![
            DeclaredVf::new(0, type_474, "A100-1-5C"),
            DeclaredVf::new(2, type_474, "A100-1-5C"),
        ],
        false,
    );
    gpus.insert(
        bdf(0),
        DeclaredGpu::Nvidia(
            NvidiaDeclared::new(
                &placed,
                Board::new(
                    Some("NVIDIA A100-SXM4-40GB".to_owned()),
                    Some("1564720004631".to_owned()),
                    Some("GPU-5a3c9f0e-8a1b-4c2d-9e7f-0a1b2c3d4e5f".to_owned()),
                ),
            )
            .with_vgpu(on_vfs)
            .with_owners(
                &layout_model::Owner::new("vm-5a3c9f0e")
                    .ok()
                    .map(|owner| {
                        layout_model::Owned::new(Placed::new(9, Placement::new(4, 4)), owner)
                    })
                    .into_iter()
                    .collect::<Vec<_>>(),
            ),
        ),
    );
    let counted = VgpuDeclared::Counted {
        types: vec![DeclaredVgpu::new(type_474, "A100-1-5C", 2)],
        heterogeneous: true,
    };
    gpus.insert(
        bdf(1),
        DeclaredGpu::Nvidia(
            NvidiaDeclared::new(
                &Want::enabled(vec![(ProfileKey::Name("7g.40gb".to_owned()), 1)]),
                Board::new(Some("NVIDIA A100-SXM4-40GB".to_owned()), None, None),
            )
            .with_vgpu(counted),
        ),
    );
    gpus.insert(
        bdf(2),
        DeclaredGpu::Nvidia(
            NvidiaDeclared::disabled(Board::default()).with_vgpu(VgpuDeclared::Off),
        ),
    );
    gpus.insert(
        bdf(3),
        DeclaredGpu::Amd(AmdDeclared::new(
            AmdWant::new(ComputePartition::Cpx, MemoryPartition::Nps4),
            vec!["amd-metrics-exporter".to_owned()],
        )),
    );
    let previous = Declaration::new("all-1g.5gb", 1_767_229_000, None, Default::default());
    let mut declaration = Declaration::new("all-balanced", 1_767_229_050, Some(&previous), gpus);
    let profile = ProfileRef::new(19, Some("1g.5gb".to_owned()));
    let at = Placement::new(2, 1);
    let facts = vec![
        Fact::Mode {
            capable: true,
            current: true,
            pending: Some(false),
            wanted: true,
        },
        Fact::Profile {
            profile: ProfileKey::Name("1g.6gb".to_owned()),
        },
        Fact::InstanceCount {
            profile: profile.clone(),
            found: 1,
            wanted: 2,
        },
        Fact::InstanceMissing {
            profile: profile.clone(),
            placement: at,
        },
        Fact::InstanceExtra {
            gpu_instance_id: 13,
            profile: ProfileRef::new(14, None),
            placement: Placement::new(4, 2),
        },
        Fact::InstanceMoved {
            gpu_instance_id: 7,
            profile: profile.clone(),
            found: Placement::new(3, 1),
            wanted: at,
        },
        Fact::InstanceMisplaced {
            gpu_instance_id: 8,
            profile: profile.clone(),
            placement: Placement::new(7, 1),
        },
        Fact::ComputeInstances {
            gpu_instance_id: 9,
            profile: profile.clone(),
            found: vec![ComputeFound::new(0, 1, Placement::new(0, 2))],
            wanted: Some(Filling::new(0, Placement::new(0, 1))),
        },
        Fact::Board(BoardChange::OtherBoard {
            model: Some("NVIDIA A100-SXM4-40GB".to_owned()),
            by: BoardId::Serial,
            declared: "1564720004631".to_owned(),
            found: "1564720004632".to_owned(),
        }),
        Fact::Board(BoardChange::OtherModel {
            declared: "NVIDIA A100-SXM4-40GB".to_owned(),
            found: "NVIDIA H100 80GB HBM3".to_owned(),
        }),
        Fact::GpuGone,
        Fact::Unread {
            reason: UnreadableReason::Timeout,
            detail: "the helper ran past its deadline".to_owned(),
        },
        Fact::Unreadable {
            what: ReplyMember::Placement { gpu_instance_id: 3 },
        },
        Fact::ComputePartition {
            found: ComputePartition::Spx,
            wanted: ComputePartition::Cpx,
        },
        Fact::MemoryPartition {
            found: Some(MemoryPartition::Nps1),
            requested: Some(MemoryPartition::Nps4),
            wanted: MemoryPartition::Nps4,
        },
        Fact::PartitionsUnread {
            why: "the GPU is in reset (EPERM)".to_owned(),
        },
        Fact::VfsGone { declared: 2 },
        Fact::VgpuCount {
            type_id: type_474,
            name: "A100-1-5C".to_owned(),
            found: 1,
            wanted: 2,
        },
        Fact::VgpuExtra {
            type_id: type_474,
            found: 1,
        },
        Fact::VfType {
            index: 2,
            found: None,
            wanted: Some(DeclaredVf::new(2, type_474, "A100-1-5C")),
        },
        Fact::VfsUnreadable {
            why: "sriov_numvfs did not read".to_owned(),
        },
        Fact::VgpuType {
            why: "A100-2-10C is not in the card's catalogue".to_owned(),
        },
        Fact::Vendor {
            found: Vendor::Amd,
            wanted: Vendor::Nvidia,
        },
    ];
    let differences = if holds {
        Vec::new()
    } else {
        facts
            .into_iter()
            .map(|fact| Difference::new(bdf(0), fact))
            .collect()
    };
    let check = LayoutCheck::new(
        1_767_229_200,
        state.boot.clone(),
        Some(WriteMark::new(Some("18c3a-4242".to_owned()), 17)),
        differences,
        if holds { Vec::new() } else { vec![bdf(1)] },
    );
    declaration.checked(if holds {
        check
    } else {
        check.adopted(vec![Adopted::new(
            bdf(0),
            11,
            ProfileRef::new(14, Some("2g.10gb".to_owned())),
            Placement::new(2, 2),
        )])
    });
    state.declared = Some(declaration);
    state
}

/// A declaration whose check lapsed: a sync since ran with the pool off.
fn lapsed() -> HostState {
    use layout_model::{Lapse, LapseReason};
    let mut state = declared(true);
    if let Some(declared) = state.declared.as_mut() {
        declared.lapse(Lapse::new(1_767_229_300, LapseReason::PoolDisabled));
    }
    state
}

/// A host whose state file did not read: kept aside, and the last boot restore recorded.
fn lost() -> HostState {
    let mut state = HostState::lost(StateLost::new(
        "/var/lib/mxctl/state.json.corrupt-1767229400-4242",
        1_767_229_400,
        "EOF while parsing an object at line 3 column 0",
    ));
    state.restored_at_boot = Some(BootRestore::new(
        Boot::new(Some("5a3c9f0e".to_owned()), Some(1_767_225_600)),
        1_767_229_410,
    ));
    state
}

/// A state saved while a layout is applied.
fn applying() -> HostState {
    let mut state = HostState::new(HostStatus::Leaving, reason("layout_applying"));
    state.layout = Some(LayoutRecord::applying(
        "all-disabled",
        Direction::Leaving,
        1_767_229_300,
        None,
    ));
    state
}

/// A state another version wrote: a host reason this one does not give.
fn later_version() -> HostState {
    let mut state = HostState::new(HostStatus::Entering, reason("layout_failed_elsewhere"));
    state.gpus.insert(
        bdf(0),
        GpuRecord::new(
            0x10de,
            0x20b0,
            Some("nvidia".to_owned()),
            PartitionMode::Enabled,
        ),
    );
    state
}
