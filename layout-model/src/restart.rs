//! What a host restart keeps of an NVIDIA GPU's division, from the GPU's architecture alone
//! ([`AfterRestart::of`]), and so whether a division recorded before it comes back by itself
//! and what the boot restore must redo ([`AfterRestart::division`]). Pure: no I/O.
//!
//! The facts, with their sources:
//!
//! - **MIG mode on Ampere survives.** NVIDIA Multi-Instance GPU User Guide, "Deployment
//!   Considerations", "System Considerations": "On NVIDIA Ampere architecture GPUs, similar to
//!   ECC mode, MIG mode setting is persistent across reboots until the user toggles the
//!   setting explicitly". An NVIDIA maintainer says the same for the A100 (NVIDIA
//!   k8s-device-plugin issue 225: "MIG mode (i.e. enabled or disabled) persists across node
//!   reboots, but the actual MIG configuration does not").
//! - **MIG mode from Hopper on does not.** The user guide states persistence for Ampere only,
//!   and says nothing of later generations; the statement is an NVIDIA engineer's (NVIDIA
//!   gpu-admin-tools issue 2: "On H100 the MIG enablement is controlled by driver and it's all
//!   gone by the time the VM is gone and GPU resets"), and NVIDIA gpu-operator issue 2600
//!   ("on Ampere the mode survives a reboot through the InfoROM status bit but enabling it
//!   needs a GPU reset, and from Hopper the bit is gone"). Blackwell is taken to be as Hopper:
//!   it enables MIG without a reset as Hopper does, the mark of a mode the driver holds, and no
//!   source says it keeps the mode.
//! - **Turning MIG on needs a GPU reset on Ampere only.** User guide, "Deployment
//!   Considerations": "Setting MIG mode on the A100/A30 requires a GPU reset"; "Getting Started
//!   with MIG", "Enable MIG Mode": "depending on the GPU product, the driver will attempt to
//!   reset the GPU so that MIG mode can take effect" (the subsection "GPU Reset on NVIDIA Ampere
//!   Architecture GPUs"). From Hopper on the mode changes at once (what `nvmlDeviceSetMigMode`
//!   answers on an H100, and what the fake NVML models).
//! - **GPU instances and compute instances survive on no generation.** User guide, "Getting
//!   Started with MIG", "Creating GPU Instances": "the created MIG devices are not persistent
//!   across system reboots. Thus, the user or system administrator needs to recreate the
//!   desired MIG configurations if the GPU or system is reset".
//! - **SR-IOV virtual functions and the vGPU types on them survive on no generation.** NVIDIA's
//!   vGPU user guide, as quoted in cozystack/ansible-cozystack PR 70: VFs do not survive a
//!   reboot or a driver reload, and each VF's `current_vgpu_type` is 0 again after
//!   `sriov-manage -e` (`host-sync/tests/samples/vgpu/README.md`, sections 2 and 3).
//! - **MIG exists from Ampere on.** User guide, "Supported GPUs": "MIG is supported on GPUs
//!   starting with the NVIDIA Ampere generation"; it lists no Ada part. An architecture before
//!   Ampere, and Ada, has no MIG mode to keep. (Not every Ampere or Hopper part has MIG either:
//!   the reply's `mode.capable` says which do; the rule speaks of the MIG mode where there is
//!   one.)

use gpu_partition_types::{Architecture, CardArchitecture};

gpu_partition_types::token_enum! {
    /// What a restart leaves of the GPU's MIG mode.
    #[non_exhaustive]
    pub enum MigModeAfterRestart: "MIG mode after a restart" {
        /// The mode survives, on or off as it was (Ampere).
        Kept = "kept",
        /// MIG is off after the restart, whatever it was (Hopper and later).
        Cleared = "cleared",
        /// The architecture has no MIG mode (before Ampere, and Ada).
        NoMig = "no_mig",
        /// Not known: the architecture is not known (a reply that did not say it, or one a
        /// later NVML added).
        Unknown = "unknown",
    }
}

gpu_partition_types::token_enum! {
    /// Whether turning MIG on needs a GPU reset before the mode takes effect.
    #[non_exhaustive]
    pub enum MigEnableReset: "whether turning MIG on needs a reset" {
        /// It stays pending until the GPU is reset (Ampere).
        Needed = "needed",
        /// It takes effect at once (Hopper and later).
        NotNeeded = "not_needed",
        /// The architecture has no MIG mode.
        NoMig = "no_mig",
        /// Not known: the architecture is not known.
        Unknown = "unknown",
    }
}

gpu_partition_types::token_enum! {
    /// What the boot restore must redo after a restart for a recorded division to be held again.
    #[non_exhaustive]
    pub enum Restore: "what a boot restore redoes" {
        /// Nothing: no partition was recorded, and the MIG mode comes back as it was.
        Nothing = "nothing",
        /// The partitions (GPU instances with their compute instances, the VFs and the vGPU
        /// types on them): the MIG mode comes back by itself, or there is none to bring back.
        Partitions = "partitions",
        /// The MIG mode too: turn MIG on again, then the partitions.
        ModeAndPartitions = "mode_and_partitions",
        /// At least the partitions, where there are any; whether the MIG mode comes back is not
        /// known.
        Unknown = "unknown",
    }
}

/// What a host restart keeps of an NVIDIA GPU, from its architecture: the facts
/// ([`AfterRestart::of`]); the module's docs give their sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AfterRestart {
    /// The architecture the facts are of; `None`: not known (the reply did not say it).
    pub architecture: Option<CardArchitecture>,
    /// What a restart leaves of the MIG mode.
    pub mig_mode: MigModeAfterRestart,
    /// Whether turning MIG on needs a GPU reset.
    pub enabling_mig_needs_reset: MigEnableReset,
    /// Whether GPU instances and their compute instances survive: on no generation.
    pub instances_kept: bool,
    /// Whether SR-IOV virtual functions and the vGPU types set on them survive: on no
    /// generation.
    pub vfs_kept: bool,
}

/// What a restart does to one recorded division ([`AfterRestart::division`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DivisionAfterRestart {
    /// Whether the division comes back by itself, with no restore and no reset; `None`: not
    /// known.
    pub comes_back: Option<bool>,
    /// What the boot restore must redo.
    pub restore: Restore,
    /// Whether redoing it needs a GPU reset; `None`: not known.
    pub needs_reset: Option<bool>,
}

impl AfterRestart {
    /// The facts of a GPU of `architecture` (`None`: not known).
    pub fn of(architecture: Option<CardArchitecture>) -> Self {
        let (mig_mode, enabling_mig_needs_reset) =
            match architecture.and_then(CardArchitecture::known) {
                Some(Architecture::Ampere) => (MigModeAfterRestart::Kept, MigEnableReset::Needed),
                Some(Architecture::Hopper | Architecture::Blackwell) => {
                    (MigModeAfterRestart::Cleared, MigEnableReset::NotNeeded)
                }
                Some(
                    Architecture::Kepler
                    | Architecture::Maxwell
                    | Architecture::Pascal
                    | Architecture::Volta
                    | Architecture::Turing
                    | Architecture::Ada,
                ) => (MigModeAfterRestart::NoMig, MigEnableReset::NoMig),
                // An architecture a later NVML adds is not guessed from its number.
                None => (MigModeAfterRestart::Unknown, MigEnableReset::Unknown),
            };
        Self {
            architecture,
            mig_mode,
            enabling_mig_needs_reset,
            instances_kept: false,
            vfs_kept: false,
        }
    }

    /// What a restart does to a division that holds partitions (`holds_partitions`: GPU
    /// instances or VFs) on a GPU whose MIG mode is to be on (`mig_on`; `None`: not known).
    pub fn division(&self, mig_on: Option<bool>, holds_partitions: bool) -> DivisionAfterRestart {
        // Whether the MIG mode must be turned on again, and whether that needs a reset.
        let mode: Option<(bool, Option<bool>)> = match (mig_on, self.mig_mode) {
            // Off, kept whatever it was, or none to keep: nothing to turn on again.
            (Some(false), _)
            | (Some(true) | None, MigModeAfterRestart::Kept)
            | (None, MigModeAfterRestart::NoMig) => Some((false, Some(false))),
            (Some(true), MigModeAfterRestart::Cleared) => Some((
                true,
                match self.enabling_mig_needs_reset {
                    MigEnableReset::Needed => Some(true),
                    MigEnableReset::NotNeeded => Some(false),
                    MigEnableReset::NoMig | MigEnableReset::Unknown => None,
                },
            )),
            // Cleared, but whether it was on is not known; on where the architecture has no
            // MIG; or the architecture not known: the mode after the restart is not known.
            (None, MigModeAfterRestart::Cleared)
            | (Some(true), MigModeAfterRestart::NoMig)
            | (_, MigModeAfterRestart::Unknown) => None,
        };
        // Partitions are re-made without a reset once the mode is as it should be: GPU
        // instances are dynamic in MIG mode ("Deployment Considerations"), VFs come of
        // `sriov-manage -e`.
        match (mode, holds_partitions) {
            (Some((false, _)), false) => DivisionAfterRestart {
                comes_back: Some(true),
                restore: Restore::Nothing,
                needs_reset: Some(false),
            },
            (Some((false, _)), true) => DivisionAfterRestart {
                comes_back: Some(false),
                restore: Restore::Partitions,
                needs_reset: Some(false),
            },
            (Some((true, reset)), _) => DivisionAfterRestart {
                comes_back: Some(false),
                restore: Restore::ModeAndPartitions,
                needs_reset: reset,
            },
            (None, holds_partitions) => DivisionAfterRestart {
                // Partitions survive on no generation: that much is known.
                comes_back: holds_partitions.then_some(false),
                restore: Restore::Unknown,
                needs_reset: None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_partition_types::Token;

    fn of(architecture: Architecture) -> AfterRestart {
        AfterRestart::of(Some(architecture.into()))
    }

    #[test]
    fn ampere_keeps_its_mig_mode_and_needs_a_reset_to_turn_it_on() {
        let facts = of(Architecture::Ampere);
        assert_eq!(
            (facts.mig_mode, facts.enabling_mig_needs_reset),
            (MigModeAfterRestart::Kept, MigEnableReset::Needed)
        );
    }

    #[test]
    fn hopper_and_blackwell_lose_their_mig_mode_and_turn_it_on_without_a_reset() {
        for architecture in [Architecture::Hopper, Architecture::Blackwell] {
            let facts = of(architecture);
            assert_eq!(
                (facts.mig_mode, facts.enabling_mig_needs_reset),
                (MigModeAfterRestart::Cleared, MigEnableReset::NotNeeded),
                "{architecture}"
            );
        }
    }

    #[test]
    fn architectures_before_ampere_and_ada_have_no_mig_mode() {
        for architecture in [
            Architecture::Kepler,
            Architecture::Maxwell,
            Architecture::Pascal,
            Architecture::Volta,
            Architecture::Turing,
            Architecture::Ada,
        ] {
            assert_eq!(
                of(architecture).mig_mode,
                MigModeAfterRestart::NoMig,
                "{architecture}"
            );
        }
    }

    #[test]
    fn an_architecture_not_said_or_not_known_leaves_the_mig_mode_unknown() {
        for architecture in [None, Some(CardArchitecture::from_nvml(11))] {
            let facts = AfterRestart::of(architecture);
            assert_eq!(
                (facts.mig_mode, facts.enabling_mig_needs_reset),
                (MigModeAfterRestart::Unknown, MigEnableReset::Unknown)
            );
        }
    }

    #[test]
    fn instances_and_vfs_survive_on_no_architecture() {
        let known = Architecture::ALL.iter().map(|a| Some((*a).into()));
        for architecture in known.chain([None, Some(CardArchitecture::from_nvml(11))]) {
            let facts = AfterRestart::of(architecture);
            assert_eq!((facts.instances_kept, facts.vfs_kept), (false, false));
        }
    }

    #[test]
    fn an_ampere_division_loses_its_instances_and_is_remade_without_a_reset() {
        assert_eq!(
            of(Architecture::Ampere).division(Some(true), true),
            DivisionAfterRestart {
                comes_back: Some(false),
                restore: Restore::Partitions,
                needs_reset: Some(false),
            }
        );
    }

    #[test]
    fn a_hopper_division_loses_its_mode_too_and_is_remade_without_a_reset() {
        assert_eq!(
            of(Architecture::Hopper).division(Some(true), true),
            DivisionAfterRestart {
                comes_back: Some(false),
                restore: Restore::ModeAndPartitions,
                needs_reset: Some(false),
            }
        );
    }

    #[test]
    fn an_ampere_gpu_in_mig_mode_with_no_instance_comes_back_by_itself_and_a_hopper_one_does_not() {
        assert_eq!(
            of(Architecture::Ampere)
                .division(Some(true), false)
                .comes_back,
            Some(true)
        );
        assert_eq!(
            of(Architecture::Hopper).division(Some(true), false).restore,
            Restore::ModeAndPartitions
        );
    }

    #[test]
    fn vfs_on_a_gpu_without_mig_are_remade_without_a_reset() {
        assert_eq!(
            of(Architecture::Ada).division(Some(false), true),
            DivisionAfterRestart {
                comes_back: Some(false),
                restore: Restore::Partitions,
                needs_reset: Some(false),
            }
        );
    }

    #[test]
    fn a_gpu_with_nothing_recorded_and_mig_off_loses_nothing() {
        assert_eq!(
            AfterRestart::of(None).division(Some(false), false),
            DivisionAfterRestart {
                comes_back: Some(true),
                restore: Restore::Nothing,
                needs_reset: Some(false),
            }
        );
    }

    #[test]
    fn an_unknown_architecture_knows_only_that_the_partitions_do_not_come_back() {
        let facts = AfterRestart::of(None);
        assert_eq!(
            facts.division(Some(true), true),
            DivisionAfterRestart {
                comes_back: Some(false),
                restore: Restore::Unknown,
                needs_reset: None,
            }
        );
        assert_eq!(facts.division(Some(true), false).comes_back, None);
    }

    #[test]
    fn a_mig_mode_not_known_leaves_a_hopper_answer_unknown_but_for_the_partitions() {
        let facts = of(Architecture::Hopper);
        assert_eq!(facts.division(None, true).comes_back, Some(false));
        assert_eq!(facts.division(None, false).comes_back, None);
    }

    #[test]
    fn an_ampere_mig_mode_comes_back_whatever_it_was() {
        let facts = of(Architecture::Ampere);
        assert_eq!(facts.division(None, false).comes_back, Some(true));
        assert_eq!(facts.division(None, true).restore, Restore::Partitions);
    }
}
