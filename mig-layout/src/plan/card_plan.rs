//! What a plan is: the steps a card needs ([`CardPlan`], with its [`Create`]s and [`Fill`]s),
//! the batches the executor sends, and the plan as lines for people ([`PlanLine`]).

use gpu_partition_types::{Bdf, Placement, Step};
use layout_model::{Card, Placed};
use std::fmt;

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
    /// ([`Unnamed::Adopt`](layout_model::Unnamed::Adopt)): never destroyed, not part of the layout.
    pub adopted: Vec<u32>,
    /// The GPU instances as the layout leaves the card (the read-back must find exactly these,
    /// each with its filling compute instance).
    pub target: Vec<Placed>,
    /// MIG is off and the card lists no profile: the instances are planned once the mode is on.
    pub deferred: bool,
}

impl CardPlan {
    pub(super) fn empty(device: Bdf) -> Self {
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
