//! One partition at a time, for an owner: a GPU instance created ([`create`]) or destroyed
//! ([`destroy`]) on one NVIDIA GPU, through the same executor as a layout (the host lock, the
//! record of writes, the hooks, the read-back, the closing sync), writing only that partition
//! and updating the GPU's declaration (the others' stay). Every refusal comes before any write:
//! the request's own ([`PartitionRefusal`], each with its facts and a token), then the
//! executor's ([`ApplyReason`](crate::ApplyReason): `gpu_busy`, `partition_owned`, …).

use super::job::{Job, take_lock};
use super::locked::run_locked_keeping;
use super::options::ApplyOptions;
use super::run::{ApplyError, ApplyRun};
use crate::report::{ApplyReport, Draft};
use crate::select::{HostGpu, Wanted, host_gpus};
use gpu_host_probe::helper::Helper;
use gpu_host_probe::{Host, HostLock};
use gpu_partition_types::{Bdf, Placement, Reply};
use layout_model::partition::Partition;
use layout_model::room::{Change, ChangeRefused, Geometry, RoomRefusal, remaining};
use layout_model::{
    Card, Declaration, DeclaredGpu, NvidiaDeclared, Owned, Owner, Placed, ProfileKey, Unnamed, Want,
};
use std::collections::BTreeMap;
use std::fmt;

/// The label a GPU's declaration gets from a partition created where nothing was declared.
pub const PARTITIONS_LABEL: &str = "partitions";

/// A GPU instance to create for an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreatePartition {
    /// The GPU.
    pub device: Bdf,
    /// The GPU instance profile, by name or ID.
    pub profile: ProfileKey,
    /// Where; `None`: the lowest placement of the profile that fits now.
    pub placement: Option<Placement>,
    /// Who it is for.
    pub owner: Owner,
}

impl CreatePartition {
    /// A GPU instance of `profile` on `device` for `owner`, where it fits first.
    pub fn new(device: Bdf, profile: ProfileKey, owner: Owner) -> Self {
        Self {
            device,
            profile,
            placement: None,
            owner,
        }
    }

    /// The same, at `placement`.
    pub fn at(mut self, placement: Placement) -> Self {
        self.placement = Some(placement);
        self
    }
}

/// Which partition to destroy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Which {
    /// The GPU instance of this ID.
    Slot(u32),
    /// The one partition of this owner on the GPU.
    OwnedBy(Owner),
}

/// A GPU instance to destroy, and who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DestroyPartition {
    /// The GPU.
    pub device: Bdf,
    /// Which.
    pub which: Which,
    /// Who asks: a partition created for an owner is destroyed only by that owner; `None`
    /// destroys only a partition nobody owns.
    pub by: Option<Owner>,
}

impl DestroyPartition {
    /// The partition `which` on `device`, asked by `by`.
    pub fn new(device: Bdf, which: Which, by: Option<Owner>) -> Self {
        Self { device, which, by }
    }
}

gpu_partition_types::token_enum! {
    /// Why a partition request was refused before anything was written, as a token.
    pub enum PartitionRefusalKind: "partition refusal" {
        /// [`PartitionRefusal::NotNvidia`].
        NotNvidia = "not_nvidia",
        /// [`PartitionRefusal::MigOff`].
        MigOff = "mig_off",
        /// [`PartitionRefusal::NotPlaced`].
        NotPlaced = "not_placed",
        /// [`PartitionRefusal::VgpusDeclared`].
        VgpusDeclared = "vgpus_declared",
        /// [`PartitionRefusal::Unreadable`].
        Unreadable = "gpu_unreadable",
        /// [`PartitionRefusal::NoProfile`].
        NoProfile = "no_profile",
        /// [`PartitionRefusal::Room`].
        DoesNotFit = "does_not_fit",
        /// [`PartitionRefusal::NoRoom`].
        NoRoom = "no_room",
        /// [`PartitionRefusal::NoInstance`].
        NoInstance = "no_instance",
        /// [`PartitionRefusal::NoneOwned`].
        NoneOwned = "none_owned",
        /// [`PartitionRefusal::SeveralOwned`].
        SeveralOwned = "several_owned",
        /// [`PartitionRefusal::InUse`].
        InUse = "partition_in_use",
        /// [`PartitionRefusal::Inferred`].
        Inferred = "inferred",
        /// [`PartitionRefusal::CardDiffers`].
        CardDiffers = "card_differs",
        /// [`PartitionRefusal::NotOurs`].
        NotOurs = "gpu_not_ours",
    }
}

/// Why a partition request was refused before anything was written: a closed set, each with
/// its facts (a toolstack maps each to one API error of its own). Not `non_exhaustive`: a
/// reason added is a change a toolstack's match must see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionRefusal {
    /// The GPU is not an NVIDIA GPU of this host (an AMD GPU, or no GPU at that address).
    NotNvidia {
        /// The address.
        device: Bdf,
    },
    /// The GPU is declared with MIG off, or its card has MIG off: a layout turns MIG on first.
    MigOff {
        /// The GPU.
        device: Bdf,
    },
    /// The GPU's declaration gives counts only (no placements were chosen yet): a restore or
    /// an apply places them first.
    NotPlaced {
        /// The GPU.
        device: Bdf,
    },
    /// The GPU has vGPUs declared on its virtual functions, which one partition at a time
    /// does not carry yet.
    VgpusDeclared {
        /// The GPU.
        device: Bdf,
    },
    /// The card did not read (or not whole).
    Unreadable {
        /// The GPU.
        device: Bdf,
        /// Why, for people.
        why: String,
    },
    /// The card's catalogue has no such profile.
    NoProfile {
        /// The GPU.
        device: Bdf,
        /// The profile asked for.
        profile: ProfileKey,
    },
    /// It does not fit, by NVIDIA's placement rules ([`layout_model::room`]): the placement
    /// taken, not one of the profile's, the profile's count reached, or the bounds unknown.
    Room {
        /// The GPU.
        device: Bdf,
        /// The rule's refusal, with its facts.
        refused: RoomRefusal,
    },
    /// No placement of the profile fits now.
    NoRoom {
        /// The GPU.
        device: Bdf,
        /// The profile.
        profile: layout_model::ProfileRef,
    },
    /// No GPU instance of this ID on the card.
    NoInstance {
        /// The GPU.
        device: Bdf,
        /// The ID asked for.
        gpu_instance_id: u32,
    },
    /// The owner has no partition on the GPU.
    NoneOwned {
        /// The GPU.
        device: Bdf,
        /// The owner.
        owner: Owner,
    },
    /// The owner has several partitions on the GPU: name the slot.
    SeveralOwned {
        /// The GPU.
        device: Bdf,
        /// The owner.
        owner: Owner,
        /// Their GPU instance IDs.
        gpu_instance_ids: Vec<u32>,
    },
    /// The partition was created for another owner (xen-api's `GPU_PARTITION_IN_USE`): only
    /// its owner destroys it.
    InUse {
        /// The GPU.
        device: Bdf,
        /// The GPU instance.
        gpu_instance_id: u32,
        /// Its owner.
        owner: Owner,
    },
    /// The GPU is not ours (its ownership `dynamic` or `external`): nothing is read or
    /// written on it.
    NotOurs {
        /// The GPU.
        device: Bdf,
        /// Who owns it.
        ownership: host_sync::Ownership,
    },
    /// The card differs from the GPU's declaration (an instance declared and missing, one
    /// whose compute instances do not fill it, or one the declaration would destroy), so the
    /// request would write more than its one partition: a restore brings the card back first.
    CardDiffers {
        /// The GPU.
        device: Bdf,
    },
    /// The partition was found, not created through us (inferred): it is never destroyed
    /// one at a time.
    Inferred {
        /// The GPU.
        device: Bdf,
        /// The GPU instance.
        gpu_instance_id: u32,
    },
}

impl PartitionRefusal {
    /// Its token.
    pub fn kind(&self) -> PartitionRefusalKind {
        use PartitionRefusalKind as K;
        match self {
            Self::NotNvidia { .. } => K::NotNvidia,
            Self::MigOff { .. } => K::MigOff,
            Self::NotPlaced { .. } => K::NotPlaced,
            Self::VgpusDeclared { .. } => K::VgpusDeclared,
            Self::Unreadable { .. } => K::Unreadable,
            Self::NoProfile { .. } => K::NoProfile,
            Self::Room { .. } => K::DoesNotFit,
            Self::NoRoom { .. } => K::NoRoom,
            Self::NoInstance { .. } => K::NoInstance,
            Self::NoneOwned { .. } => K::NoneOwned,
            Self::SeveralOwned { .. } => K::SeveralOwned,
            Self::InUse { .. } => K::InUse,
            Self::Inferred { .. } => K::Inferred,
            Self::CardDiffers { .. } => K::CardDiffers,
            Self::NotOurs { .. } => K::NotOurs,
        }
    }
}

impl fmt::Display for PartitionRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotNvidia { device } => write!(f, "{device} is not an NVIDIA GPU of this host"),
            Self::MigOff { device } => write!(
                f,
                "{device} has MIG off: apply a layout that turns it on first"
            ),
            Self::NotPlaced { device } => write!(
                f,
                "{device} is declared by counts only: restore or apply it first, so its \
                 instances have placements"
            ),
            Self::VgpusDeclared { device } => write!(
                f,
                "{device} has vGPUs declared on its virtual functions: change it with `vgpu \
                 apply`"
            ),
            Self::Unreadable { device, why } => write!(f, "{device} did not read: {why}"),
            Self::NoProfile { device, profile } => {
                write!(f, "{device} has no GPU instance profile {profile}")
            }
            Self::Room { device, refused } => write!(f, "{device}: {refused}"),
            Self::NoRoom { device, profile } => {
                write!(f, "no placement of {profile} fits on {device} now")
            }
            Self::NoInstance {
                device,
                gpu_instance_id,
            } => write!(f, "{device} has no GPU instance {gpu_instance_id}"),
            Self::NoneOwned { device, owner } => {
                write!(f, "{owner} has no partition on {device}")
            }
            Self::SeveralOwned {
                device,
                owner,
                gpu_instance_ids,
            } => write!(
                f,
                "{owner} has {} partitions on {device} (GPU instances {gpu_instance_ids:?}): \
                 name the one to destroy",
                gpu_instance_ids.len()
            ),
            Self::InUse {
                device,
                gpu_instance_id,
                owner,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} of {device} is in use by {owner}: only its owner \
                 destroys it"
            ),
            Self::NotOurs { device, ownership } => write!(
                f,
                "{device} is not ours (ownership {ownership}): nothing is written on it"
            ),
            Self::CardDiffers { device } => write!(
                f,
                "{device} differs from its declaration, so more than one partition would be \
                 written: restore it first (`mxctl partition restore`)"
            ),
            Self::Inferred {
                device,
                gpu_instance_id,
            } => write!(
                f,
                "GPU instance {gpu_instance_id} of {device} was found, not created through us: it \
                 is never destroyed one at a time"
            ),
        }
    }
}

/// How a partition request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartitionOutcome {
    /// Refused before anything was read or written.
    Refused(PartitionRefusal),
    /// It went through the executor: its report (done, or blocked or failed with the
    /// executor's reason), and the partition's row as the closing sync read it (`None` for a
    /// destroy, and when it did not read).
    Ran {
        /// The executor's report.
        report: Box<ApplyReport>,
        /// The created partition's row, as read back.
        row: Option<Partition>,
        /// The GPU's layout generation after it, as read back.
        generation: Option<u64>,
    },
}

/// The GPU's declaration, as one partition at a time changes it: its instances at their
/// placements, its owners, its board and its label.
struct Base {
    label: String,
    placed: Vec<Placed>,
    owners: Vec<Owned>,
    /// What becomes of the instances it does not name: the declared GPU's, `adopt` for a GPU
    /// not declared (its instances are not ours to destroy).
    unnamed: Unnamed,
}

/// What the request may build on: the GPU declared with MIG on and placed (or not declared).
fn base(declared: Option<&Declaration>, device: Bdf) -> Result<Base, PartitionRefusal> {
    let label = declared.map_or_else(|| PARTITIONS_LABEL.to_owned(), |d| d.label.clone());
    let Some(gpu) = declared.and_then(|declared| declared.gpus.get(&device)) else {
        return Ok(Base {
            label,
            placed: Vec::new(),
            owners: Vec::new(),
            unnamed: Unnamed::Adopt,
        });
    };
    let nvidia: &NvidiaDeclared = match gpu {
        DeclaredGpu::Nvidia(nvidia) => nvidia,
        DeclaredGpu::Amd(_) => return Err(PartitionRefusal::NotNvidia { device }),
    };
    if !nvidia.mig_enabled {
        return Err(PartitionRefusal::MigOff { device });
    }
    if nvidia.vgpu.is_some() {
        return Err(PartitionRefusal::VgpusDeclared { device });
    }
    let Some(placed) = nvidia.instances.clone() else {
        return Err(PartitionRefusal::NotPlaced { device });
    };
    Ok(Base {
        label,
        placed,
        owners: nvidia.owners.clone(),
        unnamed: nvidia.unnamed,
    })
}

/// The card of `device`, read under `lock`.
fn read_card(
    lock: &HostLock,
    helper: &Helper,
    device: Bdf,
) -> Result<(Reply, Card), PartitionRefusal> {
    let unreadable = |why: String| PartitionRefusal::Unreadable { device, why };
    let format = helper
        .negotiate()
        .map_err(|refused| unreadable(refused.failure.to_string()))?;
    let read = helper
        .read_all(lock, &[device], format)
        .into_iter()
        .next()
        .ok_or_else(|| unreadable("the helper gave no read".to_owned()))?;
    let reply = read
        .into_reply()
        .map_err(|failure| unreadable(failure.to_string()))?;
    let card = Card::of(&reply).map_err(|card| unreadable(card.to_string()))?;
    if !card.current {
        return Err(PartitionRefusal::MigOff { device });
    }
    Ok((reply, card))
}

/// The want of a GPU whose instances are `placed`: MIG on, each profile counted, at those
/// placements, the card's other instances as `unnamed` says.
fn want_of(placed: Vec<Placed>, unnamed: Unnamed) -> Want {
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for at in &placed {
        *counts.entry(at.profile_id).or_default() += 1;
    }
    Want::enabled(
        counts
            .into_iter()
            .map(|(id, count)| (ProfileKey::Id(id), count))
            .collect(),
    )
    .placed(placed)
    .unnamed(unnamed)
}

/// Whether planning `want` on the card of `reply` writes exactly one partition: a create of
/// `at` (one instance made, nothing else), or the destroy of GPU instance `destroyed` (its
/// compute instances and itself, nothing else). Anything more — an instance declared and
/// missing made again, compute instances refilled, another destroyed — is the card differing
/// from its declaration.
fn writes_one(
    reply: &Reply,
    want: &Want,
    at: Placed,
    destroyed: Option<u32>,
) -> Result<(), PartitionRefusal> {
    use gpu_partition_types::Step;
    let device = reply.device;
    let differs = PartitionRefusal::CardDiffers { device };
    let planned = crate::plan::plan(reply, want).map_err(|_| differs.clone())?;
    let still = planned.set_mode.is_none()
        && !planned.reset
        && !planned.deferred
        && planned.fill.is_empty();
    let one = match destroyed {
        None => {
            planned.destroy.is_empty()
                && matches!(planned.create.as_slice(),
                    [create] if create.profile_id == at.profile_id && create.placement == at.placement)
        }
        Some(id) => {
            planned.create.is_empty()
                && planned.destroy.iter().all(|step| match step {
                    Step::DestroyComputeInstance {
                        gpu_instance_id, ..
                    }
                    | Step::DestroyGpuInstance { gpu_instance_id } => *gpu_instance_id == id,
                    _ => false,
                })
        }
    };
    if still && one { Ok(()) } else { Err(differs) }
}

/// The job of one GPU, wanted `want`, its owners `owners`.
fn job(gpu: HostGpu, want: Want, owners: Vec<Owned>) -> Job {
    let device = gpu.bdf;
    let mut job = Job::nvidia(vec![Wanted {
        gpu,
        want,
        line: None,
        vgpu: None,
    }]);
    job.owners = BTreeMap::from([(device, owners)]);
    job
}

/// The outcome of a job that went through the executor: its report, and the row at `at` (a
/// create's) and the generation as the closing sync read them.
fn ran(
    store: &mut dyn host_sync::StateStore,
    (host, device): (&Host, Bdf),
    report: ApplyReport,
    at: Option<Placed>,
    started: u64,
) -> Result<PartitionOutcome, ApplyError> {
    // Only a division read by the closing sync (at or after the start) and still current says
    // what the GPU holds now: a dry run, a blocked run, a read that failed say nothing.
    let now = host.now();
    let division = store
        .load()?
        .and_then(|state| state.gpus.get(&device).cloned())
        .and_then(|record| record.division)
        .filter(|division| division.read_at >= started && division.stale(device, &now).is_none());
    let row = at.and_then(|at| {
        division.as_ref().and_then(|division| {
            division
                .partitions
                .iter()
                .find(|row| match &row.profile {
                    layout_model::partition::PartitionProfile::Mig { id, .. } => {
                        *id == at.profile_id && row.placement == Some(at.placement)
                    }
                    _ => false,
                })
                .cloned()
        })
    });
    Ok(PartitionOutcome::Ran {
        report: Box::new(report),
        row,
        generation: division.map(|division| division.generation),
    })
}

/// What one partition's request decided, once the card was read: the GPU's want and owners
/// after it, the partition it writes, and the owner whose partition it may destroy.
struct Decided {
    want: Want,
    owners: Vec<Owned>,
    /// The partition created (its row is read back), or destroyed.
    at: Placed,
    /// A destroy's GPU instance; `None` for a create.
    destroyed: Option<u32>,
    release: Option<Owner>,
}

/// One partition's request on `device`: the host lock taken (or why not), the declaration and
/// the card read under it, `decide` asked what to write (or why not), the plan held to exactly
/// that one partition, then the executor; the row (a create's) and the generation as the
/// closing sync read them.
fn one_partition(
    run: ApplyRun<'_>,
    device: Bdf,
    options: &ApplyOptions,
    decide: impl FnOnce(&Base, &Card) -> Result<Decided, PartitionRefusal>,
) -> Result<PartitionOutcome, ApplyError> {
    let host = run.host;
    let clock = run.reset.clock_or_real();
    let started = clock.now();
    let started_at = clock.unix_s();
    let lock = match take_lock(run.host, options)? {
        Ok(lock) => lock,
        Err(end) => {
            let report =
                Draft::new(PARTITIONS_LABEL).finish(end, clock.now().saturating_sub(started));
            return Ok(PartitionOutcome::Ran {
                report: Box::new(report),
                row: None,
                generation: None,
            });
        }
    };
    let state = run.store.load()?.unwrap_or_default();
    let ownership = state.ownership_of(device);
    // An NVIDIA GPU of the host (one the helper reads), and ours.
    let Some(gpu) = host_gpus(run.host.sysfs_root())?
        .into_iter()
        .find(|gpu| gpu.bdf == device)
    else {
        return Ok(PartitionOutcome::Refused(PartitionRefusal::NotNvidia {
            device,
        }));
    };
    let ours = if ownership.is_ours() {
        Ok(())
    } else {
        Err(PartitionRefusal::NotOurs { device, ownership })
    };
    let decided = ours
        .and_then(|()| base(state.declared.as_ref(), device))
        .and_then(|base| {
            let (reply, card) = read_card(&lock, run.helper, device)?;
            let decided = decide(&base, &card)?;
            writes_one(&reply, &decided.want, decided.at, decided.destroyed)?;
            Ok((base, decided))
        });
    let (base, decided) = match decided {
        Ok(decided) => decided,
        Err(refused) => return Ok(PartitionOutcome::Refused(refused)),
    };
    let job = job(gpu, decided.want, decided.owners);
    let mut options = options.clone().devices(vec![device]).unnamed(base.unnamed);
    if let Some(owner) = decided.release {
        options = options.release(owner);
    }
    let mut draft = Draft::new(&base.label);
    let (end, store) = run_locked_keeping(run, &lock, &base.label, job, &options, &mut draft)?;
    drop(lock);
    let report = draft.finish(end, clock.now().saturating_sub(started));
    let created = decided.destroyed.is_none().then_some(decided.at);
    ran(store, (host, device), report, created, started_at)
}

/// Creates one GPU instance (with the compute instance that fills it) for `request.owner`, at
/// the placement asked for or the lowest that fits, through the executor (`options`: its lock
/// wait, hooks, cancel, dry run; only this GPU, the card's other instances kept). The GPU's
/// declaration gains it with its owner; a GPU nothing declared is declared with it alone
/// (label [`PARTITIONS_LABEL`]), its other instances adopted.
pub fn create(
    run: ApplyRun<'_>,
    request: &CreatePartition,
    options: &ApplyOptions,
) -> Result<PartitionOutcome, ApplyError> {
    let device = request.device;
    one_partition(run, device, options, |base, card| {
        let profile =
            card.resolve(&request.profile)
                .ok_or_else(|| PartitionRefusal::NoProfile {
                    device,
                    profile: request.profile.clone(),
                })?;
        let at = Placed::new(profile.id, chosen(card, profile.id, request.placement)?);
        let mut placed = base.placed.clone();
        placed.push(at);
        let mut owners = base.owners.clone();
        owners.push(Owned::new(at, request.owner.clone()));
        Ok(Decided {
            want: want_of(placed, base.unnamed),
            owners,
            at,
            destroyed: None,
            release: None,
        })
    })
}

/// The placement a new instance of `profile_id` takes on `card`: `asked`, when the rules let
/// it; else the lowest that fits now.
fn chosen(
    card: &Card,
    profile_id: u32,
    asked: Option<Placement>,
) -> Result<Placement, PartitionRefusal> {
    let device = card.device;
    let room = |refused: RoomRefusal| PartitionRefusal::Room { device, refused };
    let geometry = Geometry::of(card);
    if let Some(placement) = asked {
        let change = Change::Create {
            profile_id,
            placement,
        };
        return match remaining(&geometry, &[change]) {
            Ok(_) => Ok(placement),
            Err(ChangeRefused { refusal, .. }) => Err(room(refusal)),
        };
    }
    let rooms = remaining(&geometry, &[]).map_err(|refused| room(refused.refusal))?;
    let fits = rooms
        .iter()
        .find(|room| room.profile.id == profile_id)
        .and_then(|room| room.fits.as_ref())
        .ok_or(room(RoomRefusal::BoundsUnknown { profile_id }))?;
    fits.placements
        .iter()
        .min_by_key(|placement| placement.start)
        .copied()
        .ok_or(PartitionRefusal::NoRoom {
            device,
            profile: card.named(profile_id),
        })
}

/// Destroys one GPU instance (its compute instances first) through the executor, as its owner
/// asks (`request.by`), writing only that partition; the card's other instances stay. The
/// GPU's declaration loses it and its owner.
pub fn destroy(
    run: ApplyRun<'_>,
    request: &DestroyPartition,
    options: &ApplyOptions,
) -> Result<PartitionOutcome, ApplyError> {
    let device = request.device;
    one_partition(run, device, options, |base, card| {
        let (at, id) = target(card, base, &request.which)?;
        let owner = base.owners.iter().find(|owned| owned.at == at);
        if let Some(owned) = owner.filter(|owned| request.by.as_ref() != Some(&owned.owner)) {
            return Err(PartitionRefusal::InUse {
                device,
                gpu_instance_id: id,
                owner: owned.owner.clone(),
            });
        }
        if !base.placed.contains(&at) {
            return Err(PartitionRefusal::Inferred {
                device,
                gpu_instance_id: id,
            });
        }
        let placed: Vec<Placed> = base.placed.iter().copied().filter(|p| *p != at).collect();
        Ok(Decided {
            want: want_of(placed, base.unnamed).removing(vec![at]),
            owners: base.owners.iter().filter(|o| o.at != at).cloned().collect(),
            at,
            destroyed: Some(id),
            release: owner.map(|owned| owned.owner.clone()),
        })
    })
}

/// The instance a destroy names on `card`: by its ID, or the one its owner has.
fn target(card: &Card, base: &Base, which: &Which) -> Result<(Placed, u32), PartitionRefusal> {
    let device = card.device;
    let placed_of = |id: u32| {
        card.instances_now()
            .iter()
            .find(|instance| instance.id == id)
            .map(|instance| Placed::new(instance.profile_id, instance.placement))
    };
    match which {
        Which::Slot(id) => placed_of(*id)
            .map(|at| (at, *id))
            .ok_or(PartitionRefusal::NoInstance {
                device,
                gpu_instance_id: *id,
            }),
        Which::OwnedBy(owner) => {
            let ids: Vec<(Placed, u32)> = card
                .instances_now()
                .iter()
                .map(|instance| {
                    (
                        Placed::new(instance.profile_id, instance.placement),
                        instance.id,
                    )
                })
                .filter(|(at, _)| {
                    base.owners
                        .iter()
                        .any(|owned| owned.at == *at && owned.owner == *owner)
                })
                .collect();
            match ids.as_slice() {
                [one] => Ok(*one),
                [] => Err(PartitionRefusal::NoneOwned {
                    device,
                    owner: owner.clone(),
                }),
                several => Err(PartitionRefusal::SeveralOwned {
                    device,
                    owner: owner.clone(),
                    gpu_instance_ids: several.iter().map(|(_, id)| *id).collect(),
                }),
            }
        }
    }
}
