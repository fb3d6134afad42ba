//! The planner, pure (sans-IO): from a card's read reply and what the card should be, either
//! the steps of the helper's `apply`, or a refusal before anything is touched.
//!
//! It diffs. GPU instances that already match (profile wanted, placement free of the others)
//! stay, with their compute instance; only what differs is destroyed — compute instances
//! before their GPU instances, both before the mode changes, the mode before anything is
//! created. A card already as wanted gets no step at all. Placements are chosen explicitly
//! from the reply's possible placements by an exhaustive search ([`fit`]): a fit is found
//! whenever one exists, keeping as many of the card's instances as any fit can, and the same
//! card and layout always give the same placements.
//!
//! ```
//! use gpu_partition_types::Reply;
//! use layout_model::{ProfileKey, Want};
//! use mig_layout::plan;
//!
//! // An A100 with MIG on and nothing carved; its 1g.5gb profile has seven placements.
//! let slots: Vec<String> = (0..7).map(|s| format!(r#"{{"start": {s}, "size": 1}}"#)).collect();
//! let text = format!(r#"{{"format": "1.1", "device": "0000:3b:00.0",
//!     "mode": {{"capable": true, "current": "enabled", "pending": null}},
//!     "case": "none_carved", "gpu_instances": [], "vgpus": [], "processes": [],
//!     "profiles": [{{"id": 19, "name": "1g.5gb", "placements": [{}],
//!       "signature": {{"slice_count": 1, "instance_count": 7, "multiprocessor_count": 14,
//!         "copy_engine_count": 1, "decoder_count": 0, "encoder_count": 0, "jpeg_count": 0,
//!         "ofa_count": 0, "memory_size_mb": 4864, "capabilities": []}}}}]}}"#,
//!     slots.join(", "));
//! let reply = Reply::from_json(text.as_bytes(), None)?;
//! let want = Want::enabled(vec![(ProfileKey::Name("1g.5gb".into()), 7)]);
//! let steps = plan(&reply, &want)?;
//! assert_eq!(steps.create.len(), 7);
//! assert!(steps.destroy.is_empty() && steps.set_mode.is_none());
//! assert_eq!(steps.create[6].placement.start, 6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod fit;

use fit::{Candidate, Demand};
use gpu_partition_types::{Bdf, Placement, Reply, Step};
use layout_model::{Card, CardInstance, CardProfile, Placed, Unnamed, Want};
use std::fmt;

gpu_partition_types::token_enum! {
    /// Why a layout cannot be planned on a card.
    pub enum ImpossibleKind: "impossible layout" {
        /// The layout names a profile the card's catalogue does not have.
        UnknownProfile = "unknown_profile",
        /// More instances of a profile than the card holds.
        TooMany = "too_many",
        /// The instances fit no placement of the card together.
        NoFit = "no_fit",
        /// The card cannot be partitioned (no MIG), and the layout turns MIG on.
        NotPartitionable = "not_partitionable",
        /// A profile is named twice (by name and by ID).
        NamedTwice = "named_twice",
        /// A profile whose placements or compute slices the card did not give.
        ProfileIncomplete = "profile_incomplete",
        /// A member of the reply the plan depends on did not read.
        Unreadable = "unreadable",
        /// An instance the caller adopts is where the layout needs room (or MIG off would
        /// destroy it).
        AdoptedInTheWay = "adopted_in_the_way",
        /// A vGPU type the card's catalogue does not list.
        VgpuNotSupported = "vgpu_not_supported",
        /// A MIG-backed vGPU type whose vGPUs per GPU instance the catalogue does not give.
        VgpuUnsized = "vgpu_unsized",
        /// More vGPUs of a type than the card holds, or more vGPUs than it can have VFs.
        VgpuTooMany = "vgpu_too_many",
        /// Time-sliced vGPU types the card runs one at a time (heterogeneous mode off).
        VgpuTypesTogether = "vgpu_types_together",
        /// What a per-VF vGPU host needs the card lacks (SR-IOV, the VFs' `nvidia/` files, a
        /// known heterogeneous mode, or that mode asked with MIG-backed types).
        NotAVgpuHost = "not_a_vgpu_host",
        /// An AMD compute and memory partition the kernel does not run together.
        AmdIncompatible = "amd_incompatible",
        /// An AMD partition the GPU does not offer (its part, its VBIOS, its memory partition).
        AmdNotOffered = "amd_not_offered",
        /// An AMD memory partition that would split an XGMI hive (it is the whole hive's).
        AmdHive = "amd_hive",
        /// An AMD GPU that shows no partition files: amdgpu cannot partition it.
        AmdNotPartitionable = "amd_not_partitionable",
    }
}

/// A layout that cannot be planned on a card: refused before anything is written, naming the
/// card and the profile. It serializes to `{"device", "profile", "kind", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Impossible {
    /// The card.
    pub device: Bdf,
    /// The profile at fault, when one is.
    pub profile: Option<String>,
    /// Why.
    pub kind: ImpossibleKind,
    /// What is wrong, for people (the card, the profile, the numbers).
    pub message: String,
}

impl Impossible {
    pub(crate) fn new(
        device: Bdf,
        profile: Option<String>,
        kind: ImpossibleKind,
        message: String,
    ) -> Self {
        Self {
            device,
            profile,
            kind,
            message,
        }
    }
}

impl fmt::Display for Impossible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Impossible {}

/// A GPU instance to create, with the compute instance that fills it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Create {
    /// The GPU instance profile's ID.
    pub profile_id: u32,
    /// Its name, for people.
    pub profile: String,
    /// Where, in memory slices.
    pub placement: Placement,
    /// The compute instance profile that fills it.
    pub compute_profile_id: u32,
}

/// A GPU instance the plan keeps that needs its compute instance (created anew).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fill {
    /// The GPU instance.
    pub gpu_instance_id: u32,
    /// The compute instance profile that fills it.
    pub compute_profile_id: u32,
}

/// What a card needs to become as wanted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CardPlan {
    /// The card.
    pub device: Bdf,
    /// Destroys: every compute instance to go, then every GPU instance to go.
    pub destroy: Vec<Step>,
    /// The mode to set, when it must change.
    pub set_mode: Option<bool>,
    /// The card already holds the wanted mode pending: a reset completes it before anything is
    /// created.
    pub reset: bool,
    /// GPU instances to create, each then with its compute instance.
    pub create: Vec<Create>,
    /// GPU instances kept that need their compute instance.
    pub fill: Vec<Fill>,
    /// GPU instances kept as they are.
    pub kept: Vec<u32>,
    /// GPU instances the layout does not name, kept because the caller adopts them
    /// ([`Unnamed::Adopt`]): never destroyed, not part of the layout.
    pub adopted: Vec<u32>,
    /// The GPU instances as the layout leaves the card (the read-back must find exactly these,
    /// each with its filling compute instance).
    pub target: Vec<Placed>,
    /// MIG is off and the card lists no profile: the instances are planned once the mode is on.
    pub deferred: bool,
}

impl CardPlan {
    fn empty(device: Bdf) -> Self {
        Self {
            device,
            destroy: Vec::new(),
            set_mode: None,
            reset: false,
            create: Vec::new(),
            fill: Vec::new(),
            kept: Vec::new(),
            adopted: Vec::new(),
            target: Vec::new(),
            deferred: false,
        }
    }

    /// Whether the card is already as wanted: no step, no reset.
    pub fn is_empty(&self) -> bool {
        self.destroy.is_empty()
            && self.set_mode.is_none()
            && !self.reset
            && self.create.is_empty()
            && self.fill.is_empty()
            && !self.deferred
    }

    /// The first batch: the destroys, then the mode.
    pub fn first_batch(&self) -> Vec<Step> {
        let mut steps = self.destroy.clone();
        steps.extend(self.set_mode.map(|enabled| Step::SetMigMode { enabled }));
        steps
    }

    /// The GPU instances to create, at their placements.
    pub fn create_batch(&self) -> Vec<Step> {
        self.create
            .iter()
            .map(|create| Step::CreateGpuInstance {
                profile_id: create.profile_id,
                placement: create.placement,
            })
            .collect()
    }

    /// The compute instances: one in each GPU instance `created` made (in the order of
    /// [`CardPlan::create`]), and one in each kept instance that lacks it.
    pub fn compute_batch(&self, created: &[u32]) -> Vec<Step> {
        let new = self
            .create
            .iter()
            .zip(created)
            .map(|(create, id)| (*id, create.compute_profile_id));
        let kept = self
            .fill
            .iter()
            .map(|fill| (fill.gpu_instance_id, fill.compute_profile_id));
        new.chain(kept)
            .map(
                |(gpu_instance_id, profile_id)| Step::CreateComputeInstance {
                    gpu_instance_id,
                    profile_id,
                    placement: None,
                },
            )
            .collect()
    }

    /// The plan as data, a line per thing it does, in the order it runs (each displays for
    /// people).
    pub fn describe(&self, card: &Card) -> Vec<PlanLine> {
        let of = |id: u32| {
            card.instances
                .iter()
                .find(|instance| instance.id == id)
                .map(|instance| (card.label(instance.profile_id), instance.placement))
        };
        let mut lines = Vec::new();
        for step in &self.destroy {
            match step {
                Step::DestroyComputeInstance {
                    gpu_instance_id,
                    compute_instance_id,
                } => lines.push(PlanLine::DestroyComputeInstance {
                    gpu_instance_id: *gpu_instance_id,
                    compute_instance_id: *compute_instance_id,
                    of: of(*gpu_instance_id),
                }),
                Step::DestroyGpuInstance { gpu_instance_id } => {
                    lines.push(PlanLine::DestroyGpuInstance {
                        gpu_instance_id: *gpu_instance_id,
                        of: of(*gpu_instance_id),
                    });
                }
                // The destroys are destroys: the planner puts nothing else there.
                Step::SetMigMode { .. }
                | Step::CreateGpuInstance { .. }
                | Step::CreateComputeInstance { .. }
                | Step::SetVgpuHeterogeneousMode { .. } => {}
            }
        }
        if let Some(enabled) = self.set_mode {
            lines.push(PlanLine::SetMode { enabled });
        }
        if self.reset {
            lines.push(PlanLine::Reset);
        }
        for create in &self.create {
            lines.push(PlanLine::Create {
                profile_id: create.profile_id,
                profile: create.profile.clone(),
                placement: create.placement,
                compute_profile_id: create.compute_profile_id,
            });
        }
        for fill in &self.fill {
            lines.push(PlanLine::Fill {
                gpu_instance_id: fill.gpu_instance_id,
                compute_profile_id: fill.compute_profile_id,
                of: of(fill.gpu_instance_id),
            });
        }
        if self.deferred {
            lines.push(PlanLine::Deferred);
        }
        for id in &self.adopted {
            lines.push(PlanLine::Adopted {
                gpu_instance_id: *id,
                of: of(*id),
            });
        }
        lines
    }
}

/// One thing a plan does, as data; it displays as a line for people (and is written so in
/// `--json`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanLine {
    /// A compute instance destroyed.
    DestroyComputeInstance {
        /// Its GPU instance.
        gpu_instance_id: u32,
        /// It.
        compute_instance_id: u32,
        /// The GPU instance's profile (its name for people) and placement, when the card lists it.
        of: Option<(String, Placement)>,
    },
    /// A GPU instance destroyed.
    DestroyGpuInstance {
        /// It.
        gpu_instance_id: u32,
        /// Its profile (its name for people) and placement, when the card lists it.
        of: Option<(String, Placement)>,
    },
    /// The MIG mode set (a reset follows where the card holds the change pending).
    SetMode {
        /// On or off.
        enabled: bool,
    },
    /// A warm reset of the GPU (with its NVLink peers) to complete the pending mode change.
    Reset,
    /// A GPU instance created at a placement, with the compute instance that fills it.
    Create {
        /// Its profile's ID.
        profile_id: u32,
        /// Its profile, for people.
        profile: String,
        /// Where.
        placement: Placement,
        /// The filling compute instance's profile.
        compute_profile_id: u32,
    },
    /// The compute instance of a GPU instance kept created.
    Fill {
        /// The GPU instance.
        gpu_instance_id: u32,
        /// The compute instance's profile.
        compute_profile_id: u32,
        /// The GPU instance's profile and placement, when the card lists it.
        of: Option<(String, Placement)>,
    },
    /// The instances are created once MIG is on (the card lists its profiles only then).
    Deferred,
    /// A GPU instance the layout does not name, kept: the caller adopts such instances.
    Adopted {
        /// It.
        gpu_instance_id: u32,
        /// Its profile and placement, when the card lists it.
        of: Option<(String, Placement)>,
    },
}

fn at(of: &Option<(String, Placement)>) -> String {
    of.as_ref()
        .map(|(profile, placement)| {
            format!(" ({profile} at {}+{})", placement.start, placement.size)
        })
        .unwrap_or_default()
}

impl fmt::Display for PlanLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DestroyComputeInstance {
                gpu_instance_id,
                compute_instance_id,
                of,
            } => write!(
                f,
                "destroy compute instance {compute_instance_id} of GPU instance \
                 {gpu_instance_id}{}",
                at(of)
            ),
            Self::DestroyGpuInstance {
                gpu_instance_id,
                of,
            } => write!(f, "destroy GPU instance {gpu_instance_id}{}", at(of)),
            Self::SetMode { enabled } => write!(
                f,
                "set MIG {} (a reset follows if the card holds the change pending)",
                if *enabled { "on" } else { "off" }
            ),
            Self::Reset => f.write_str(
                "warm-reset the GPU (with its NVLink peers) to complete the pending mode change",
            ),
            Self::Create {
                profile,
                placement,
                compute_profile_id,
                ..
            } => write!(
                f,
                "create GPU instance {profile} at {}+{}, with its compute instance (profile \
                 {compute_profile_id})",
                placement.start, placement.size
            ),
            Self::Fill {
                gpu_instance_id,
                compute_profile_id,
                of,
            } => write!(
                f,
                "create the compute instance (profile {compute_profile_id}) of GPU instance \
                 {gpu_instance_id}{}",
                at(of)
            ),
            Self::Deferred => {
                f.write_str("then create the instances: the card lists its profiles once MIG is on")
            }
            Self::Adopted {
                gpu_instance_id,
                of,
            } => write!(
                f,
                "keep GPU instance {gpu_instance_id}{}: the layout does not name it, and it is \
                 adopted",
                at(of)
            ),
        }
    }
}

impl serde::Serialize for PlanLine {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Plans `want` on the card of `reply`.
pub fn plan(reply: &Reply, want: &Want) -> Result<CardPlan, Impossible> {
    let card = Card::of(reply).map_err(|unreadable| {
        Impossible::new(
            unreadable.device,
            None,
            ImpossibleKind::Unreadable,
            unreadable.to_string(),
        )
    })?;
    plan_card(&card, want)
}

/// Plans `want` on `card` (what [`plan`] does once the reply is read).
pub fn plan_card(card: &Card, want: &Want) -> Result<CardPlan, Impossible> {
    let device = card.device;
    let mut plan = CardPlan::empty(device);
    if !card.capable {
        return if want.enabled {
            Err(Impossible::new(
                device,
                None,
                ImpossibleKind::NotPartitionable,
                format!(
                    "{device} cannot be partitioned (it has no MIG mode), and the layout turns MIG on"
                ),
            ))
        } else {
            Ok(plan)
        };
    }
    // The mode: set it unless it is already so and nothing else is pending; a change the card
    // holds pending completes with a reset.
    match (card.current == want.enabled, card.pending) {
        (true, None) => {}
        (true, Some(_)) => plan.set_mode = Some(want.enabled),
        (false, Some(pending)) if pending == want.enabled => plan.reset = true,
        (false, _) => plan.set_mode = Some(want.enabled),
    }
    if !want.enabled {
        if want.unnamed == Unnamed::Adopt {
            if let Some(instance) = card.instances_now().first() {
                return Err(adopted_in_the_way(
                    card,
                    instance,
                    "turning MIG off would destroy it",
                ));
            }
        }
        destroy_all(card, &mut plan, |_| true);
        return Ok(plan);
    }
    let any = want.instances.iter().any(|(_, count)| *count > 0);
    if any && card.profiles.is_empty() && !card.current {
        plan.deferred = true;
        return Ok(plan);
    }
    let wanted = resolve(card, want)?;
    let existing: &[CardInstance] = if card.current { &card.instances } else { &[] };
    if want.unnamed == Unnamed::Adopt && !existing.is_empty() {
        return plan_adopting(card, want, &wanted, plan);
    }
    if wanted.is_empty() {
        destroy_all(card, &mut plan, |_| true);
        return Ok(plan);
    }
    let mut demands = Vec::with_capacity(wanted.len());
    for (profile, count) in &wanted {
        let decided = want.placements.as_ref().map(|placed| {
            placed
                .iter()
                .filter(|placed| placed.profile_id == profile.id)
                .map(|placed| placed.placement)
                .collect::<Vec<_>>()
        });
        demands.push(demand(card, profile, *count, existing, decided)?);
    }
    let Some((chosen, _)) = fit::fit(&demands) else {
        let asked: Vec<String> = wanted
            .iter()
            .map(|(profile, count)| format!("{count} × {}", profile.label()))
            .collect();
        return Err(Impossible::new(
            device,
            wanted
                .iter()
                .max_by_key(|(profile, count)| {
                    profile
                        .placements
                        .as_ref()
                        .and_then(|p| p.first())
                        .map_or(0, |p| p.size)
                        .saturating_mul(*count)
                })
                .map(|(profile, _)| profile.label()),
            ImpossibleKind::NoFit,
            format!(
                "{device}: {} do not fit together on the card's memory slices",
                asked.join(", ")
            ),
        ));
    };
    let mut kept = Vec::new();
    for ((profile, _), (demand, picks)) in wanted.iter().zip(demands.iter().zip(&chosen)) {
        let (compute_profile_id, _) = profile
            .filling()
            .ok_or_else(|| slices_unknown(card, profile))?;
        for pick in picks {
            let Some(candidate) = demand.candidates.get(*pick) else {
                continue;
            };
            plan.target
                .push(Placed::new(profile.id, candidate.placement));
            match candidate.existing {
                Some((id, _)) => kept.push(id),
                None => plan.create.push(Create {
                    profile_id: profile.id,
                    profile: profile.label(),
                    placement: candidate.placement,
                    compute_profile_id,
                }),
            }
        }
    }
    plan.target.sort();
    // Instances not kept go; kept ones keep a compute instance that fills them, and lose any
    // other.
    destroy_all(card, &mut plan, |instance| !kept.contains(&instance.id));
    let mut compute_destroys = Vec::new();
    for instance in existing.iter().filter(|i| kept.contains(&i.id)) {
        if card.complete(instance) {
            plan.kept.push(instance.id);
            continue;
        }
        for compute in &instance.compute {
            compute_destroys.push(Step::DestroyComputeInstance {
                gpu_instance_id: instance.id,
                compute_instance_id: compute.id,
            });
        }
        let profile = card.profile(instance.profile_id);
        if let Some((compute_profile_id, _)) = profile.and_then(CardProfile::filling) {
            plan.fill.push(Fill {
                gpu_instance_id: instance.id,
                compute_profile_id,
            });
        }
    }
    // Compute instances first: they go before any GPU instance.
    compute_destroys.append(&mut plan.destroy);
    plan.destroy = compute_destroys;
    plan.destroy.sort_by_key(|step| match step {
        Step::DestroyComputeInstance { .. } => 0,
        _ => 1,
    });
    Ok(plan)
}

/// The plan when the card's instances the layout does not name are adopted: for each profile,
/// the card's instances of it where the layout places them (or, with the placements not
/// decided, the first ones by placement, up to the count) are the layout's; every other
/// instance is adopted — kept, never destroyed —, and the layout's missing instances are placed
/// in the slices no instance holds. A decided placement an adopted instance covers is impossible
/// (`adopted_in_the_way`, naming it).
fn plan_adopting(
    card: &Card,
    want: &Want,
    wanted: &[(&CardProfile, u32)],
    mut plan: CardPlan,
) -> Result<CardPlan, Impossible> {
    let device = card.device;
    let existing = card.instances_now();
    let mut named: Vec<&CardInstance> = Vec::new();
    let mut demands = Vec::new();
    let mut profiles = Vec::new();
    for (profile, count) in wanted {
        let mut own: Vec<&CardInstance> = existing
            .iter()
            .filter(|instance| instance.profile_id == profile.id)
            .collect();
        own.sort_by_key(|instance| (instance.placement.start, instance.placement.size));
        let decided = want.placements.as_ref().map(|placed| {
            placed
                .iter()
                .filter(|placed| placed.profile_id == profile.id)
                .map(|placed| placed.placement)
                .collect::<Vec<_>>()
        });
        let (mine, places): (Vec<&CardInstance>, Vec<Placement>) = match decided {
            Some(decided) => {
                let mine: Vec<&CardInstance> = own
                    .iter()
                    .copied()
                    .filter(|instance| decided.contains(&instance.placement))
                    .collect();
                let places = decided
                    .into_iter()
                    .filter(|placement| !mine.iter().any(|i| i.placement == *placement))
                    .collect();
                (mine, places)
            }
            None => {
                let keep = usize::try_from(*count).unwrap_or(usize::MAX).min(own.len());
                let mine: Vec<&CardInstance> = own.iter().copied().take(keep).collect();
                let places = profile.placements.clone().unwrap_or_default();
                (mine, places)
            }
        };
        let left = count.saturating_sub(u32::try_from(mine.len()).unwrap_or(u32::MAX));
        named.extend(mine);
        if left == 0 {
            continue;
        }
        let free: Vec<Placement> = places
            .iter()
            .copied()
            .filter(|placement| {
                fit::representable(*placement)
                    && !existing
                        .iter()
                        .any(|instance| fit::overlaps(instance.placement, *placement))
            })
            .collect();
        if want.placements.is_some() && free.len() < places.len() {
            let blocked = places.iter().find_map(|placement| {
                existing
                    .iter()
                    .find(|instance| fit::overlaps(instance.placement, *placement))
            });
            if let Some(instance) = blocked {
                return Err(adopted_in_the_way(
                    card,
                    instance,
                    &format!("the layout places {} where it sits", profile.label()),
                ));
            }
        }
        demands.push(Demand {
            count: left,
            candidates: free
                .into_iter()
                .map(|placement| Candidate {
                    placement,
                    existing: None,
                })
                .collect(),
        });
        profiles.push(*profile);
    }
    let Some((chosen, _)) = fit::fit(&demands) else {
        let asked: Vec<String> = profiles
            .iter()
            .zip(&demands)
            .map(|(profile, demand)| format!("{} × {}", demand.count, profile.label()))
            .collect();
        return Err(Impossible::new(
            device,
            profiles.first().map(|profile| profile.label()),
            ImpossibleKind::AdoptedInTheWay,
            format!(
                "{device}: {} do not fit in the slices the adopted instances leave free",
                asked.join(", ")
            ),
        ));
    };
    for ((profile, demand), picks) in profiles.iter().zip(&demands).zip(&chosen) {
        let (compute_profile_id, _) = profile
            .filling()
            .ok_or_else(|| slices_unknown(card, profile))?;
        for pick in picks {
            let Some(candidate) = demand.candidates.get(*pick) else {
                continue;
            };
            plan.target
                .push(Placed::new(profile.id, candidate.placement));
            plan.create.push(Create {
                profile_id: profile.id,
                profile: profile.label(),
                placement: candidate.placement,
                compute_profile_id,
            });
        }
    }
    for instance in existing {
        if !named.iter().any(|mine| mine.id == instance.id) {
            plan.adopted.push(instance.id);
            continue;
        }
        plan.target
            .push(Placed::new(instance.profile_id, instance.placement));
        if card.complete(instance) {
            plan.kept.push(instance.id);
            continue;
        }
        for compute in &instance.compute {
            plan.destroy.push(Step::DestroyComputeInstance {
                gpu_instance_id: instance.id,
                compute_instance_id: compute.id,
            });
        }
        if let Some((compute_profile_id, _)) = card
            .profile(instance.profile_id)
            .and_then(CardProfile::filling)
        {
            plan.fill.push(Fill {
                gpu_instance_id: instance.id,
                compute_profile_id,
            });
        }
    }
    plan.target.sort();
    Ok(plan)
}

fn adopted_in_the_way(card: &Card, instance: &CardInstance, why: &str) -> Impossible {
    Impossible::new(
        card.device,
        Some(card.label(instance.profile_id)),
        ImpossibleKind::AdoptedInTheWay,
        format!(
            "{}: GPU instance {} ({}) at {}+{} is adopted, never destroyed, and {why}",
            card.device,
            instance.id,
            card.label(instance.profile_id),
            instance.placement.start,
            instance.placement.size
        ),
    )
}

/// Destroys every instance `which` picks: their compute instances first, then the instances.
fn destroy_all(card: &Card, plan: &mut CardPlan, which: impl Fn(&CardInstance) -> bool) {
    if !card.current {
        return;
    }
    let going: Vec<&CardInstance> = card.instances.iter().filter(|i| which(i)).collect();
    for instance in &going {
        for compute in &instance.compute {
            plan.destroy.push(Step::DestroyComputeInstance {
                gpu_instance_id: instance.id,
                compute_instance_id: compute.id,
            });
        }
    }
    for instance in going {
        plan.destroy.push(Step::DestroyGpuInstance {
            gpu_instance_id: instance.id,
        });
    }
}

fn slices_unknown(card: &Card, profile: &CardProfile) -> Impossible {
    Impossible::new(
        card.device,
        Some(profile.label()),
        ImpossibleKind::ProfileIncomplete,
        format!(
            "{}: the card did not say how many compute slices {} has, so its compute \
             instance cannot be chosen",
            card.device,
            profile.label()
        ),
    )
}

/// The wanted profiles with their counts (counts of 0 left out), each resolved in the card's
/// catalogue.
fn resolve<'c>(card: &'c Card, want: &Want) -> Result<Vec<(&'c CardProfile, u32)>, Impossible> {
    let device = card.device;
    let mut wanted: Vec<(&CardProfile, u32)> = Vec::new();
    for (key, count) in &want.instances {
        if *count == 0 {
            continue;
        }
        let Some(profile) = card.resolve(key) else {
            let known: Vec<String> = card.profiles.iter().map(CardProfile::label).collect();
            return Err(Impossible::new(
                device,
                Some(key.to_string()),
                ImpossibleKind::UnknownProfile,
                format!(
                    "{device} has no profile {key}; its catalogue has: {}",
                    if known.is_empty() {
                        "nothing".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        };
        if wanted.iter().any(|(known, _)| known.id == profile.id) {
            return Err(Impossible::new(
                device,
                Some(profile.label()),
                ImpossibleKind::NamedTwice,
                format!(
                    "{device}: {} (profile {}) is named twice in the layout",
                    profile.label(),
                    profile.id
                ),
            ));
        }
        if let Some(most) = profile.instance_count {
            if *count > most {
                return Err(Impossible::new(
                    device,
                    Some(profile.label()),
                    ImpossibleKind::TooMany,
                    format!(
                        "{device}: {count} × {} asked, and the card holds at most {most}",
                        profile.label()
                    ),
                ));
            }
        }
        wanted.push((profile, *count));
    }
    Ok(wanted)
}

/// The instances of `profile` to place: its possible placements and the card's own instances
/// of it, each placement once, by start; or, where the placements are decided (`decided`, a
/// declaration's), exactly those, each of which must be one of the card's.
fn demand(
    card: &Card,
    profile: &CardProfile,
    count: u32,
    existing: &[CardInstance],
    decided: Option<Vec<Placement>>,
) -> Result<Demand, Impossible> {
    let device = card.device;
    profile
        .filling()
        .ok_or_else(|| slices_unknown(card, profile))?;
    let own: Vec<&CardInstance> = existing
        .iter()
        .filter(|instance| instance.profile_id == profile.id)
        .collect();
    if let Some(decided) = decided {
        let offered = |placement: &Placement| {
            profile
                .placements
                .as_ref()
                .is_none_or(|possible| possible.contains(placement))
                || own.iter().any(|instance| instance.placement == *placement)
        };
        if let Some(off) = decided.iter().find(|placement| !offered(placement)) {
            return Err(Impossible::new(
                device,
                Some(profile.label()),
                ImpossibleKind::NoFit,
                format!(
                    "{device}: the layout places {} at {}+{}, which is none of the card's \
                     placements for it",
                    profile.label(),
                    off.start,
                    off.size
                ),
            ));
        }
        let count = u32::try_from(decided.len()).unwrap_or(u32::MAX);
        return finish_demand(card, profile, count, decided, &own);
    }
    let Some(possible) = profile.placements.as_ref() else {
        if own.is_empty() {
            return Err(Impossible::new(
                device,
                Some(profile.label()),
                ImpossibleKind::ProfileIncomplete,
                format!(
                    "{device}: the card did not give the placements of {}, so none can be \
                     chosen",
                    profile.label()
                ),
            ));
        }
        return finish_demand(
            card,
            profile,
            count,
            own.iter().map(|i| i.placement).collect(),
            &own,
        );
    };
    let mut placements: Vec<Placement> = possible.clone();
    placements.extend(own.iter().map(|instance| instance.placement));
    finish_demand(card, profile, count, placements, &own)
}

fn finish_demand(
    card: &Card,
    profile: &CardProfile,
    count: u32,
    mut placements: Vec<Placement>,
    own: &[&CardInstance],
) -> Result<Demand, Impossible> {
    let device = card.device;
    placements.retain(|placement| fit::representable(*placement));
    placements.sort_by_key(|placement| (placement.start, placement.size));
    placements.dedup();
    if usize::try_from(count).unwrap_or(usize::MAX) > placements.len() {
        return Err(Impossible::new(
            device,
            Some(profile.label()),
            ImpossibleKind::TooMany,
            format!(
                "{device}: {count} × {} asked, and the card has {} placements for it",
                profile.label(),
                placements.len()
            ),
        ));
    }
    let candidates = placements
        .into_iter()
        .map(|placement| Candidate {
            placement,
            existing: own
                .iter()
                .find(|instance| instance.placement == placement)
                .map(|instance| (instance.id, card.complete(instance))),
        })
        .collect();
    Ok(Demand { count, candidates })
}
