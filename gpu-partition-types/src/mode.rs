//! The MIG mode of a card: `mode` in the reply.

use crate::read::{Decode, Field, Path, known};
use crate::{Nullable, PartitionMode};

crate::token_enum! {
    /// Whether MIG mode is on.
    pub enum MigState: "MIG mode" {
        /// MIG mode is on.
        Enabled = "enabled",
        /// MIG mode is off.
        Disabled = "disabled",
    }
}

crate::record::record! {
    /// `mode`: whether the card can be partitioned, its MIG mode now, and a change pending until
    /// the next reset. Every member is strict.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct Mode: "a mode object" {
        /// Whether the card supports MIG.
        capable: required bool = "capable",
        /// The MIG mode now.
        current: required MigState = "current",
        /// The MIG mode after the next reset; `null` when no change is pending.
        pending: required Nullable<MigState> = "pending",
    }
}

impl Mode {
    /// The partition mode this axis reads as: one of the five modes a read can give.
    pub fn partition_mode(&self) -> PartitionMode {
        if !self.capable {
            return PartitionMode::NotSupported;
        }
        match (self.current, self.pending.into_option()) {
            (MigState::Disabled, None | Some(MigState::Disabled)) => PartitionMode::Disabled,
            (MigState::Disabled, Some(MigState::Enabled)) => PartitionMode::EnableOnReboot,
            (MigState::Enabled, None | Some(MigState::Enabled)) => PartitionMode::Enabled,
            (MigState::Enabled, Some(MigState::Disabled)) => PartitionMode::DisableOnReboot,
        }
    }
}

impl Decode for MigState {
    const EXPECTED: &'static str = "\"enabled\" or \"disabled\"";

    fn from_str(text: &str, at: &Path<'_>) -> Field<Self> {
        known(text, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(capable: bool, current: MigState, pending: Option<MigState>) -> PartitionMode {
        Mode {
            capable,
            current,
            pending: pending.into(),
        }
        .partition_mode()
    }

    #[test]
    fn a_card_that_is_not_capable_is_not_supported_whatever_its_mode() {
        assert_eq!(
            mode(false, MigState::Enabled, None),
            PartitionMode::NotSupported
        );
    }

    #[test]
    fn mig_off_with_nothing_pending_is_disabled() {
        assert_eq!(
            mode(true, MigState::Disabled, None),
            PartitionMode::Disabled
        );
    }

    #[test]
    fn mig_off_with_on_pending_is_enable_on_reboot() {
        assert_eq!(
            mode(true, MigState::Disabled, Some(MigState::Enabled)),
            PartitionMode::EnableOnReboot
        );
    }

    #[test]
    fn mig_on_with_nothing_pending_is_enabled() {
        assert_eq!(mode(true, MigState::Enabled, None), PartitionMode::Enabled);
    }

    #[test]
    fn mig_on_with_off_pending_is_disable_on_reboot() {
        assert_eq!(
            mode(true, MigState::Enabled, Some(MigState::Disabled)),
            PartitionMode::DisableOnReboot
        );
    }

    #[test]
    fn a_pending_value_equal_to_the_current_one_is_no_change() {
        assert_eq!(
            mode(true, MigState::Enabled, Some(MigState::Enabled)),
            PartitionMode::Enabled
        );
        assert_eq!(
            mode(true, MigState::Disabled, Some(MigState::Disabled)),
            PartitionMode::Disabled
        );
    }
}
