//! The MIG mode of a card: `mode` in the reply.

use crate::read::{Decode, Field, Path, known, members, required, value};
use crate::{Nullable, PartitionMode};
use serde::Serialize;
use serde::de::MapAccess;

crate::token_enum! {
    /// Whether MIG mode is on.
    pub enum MigState: "MIG mode" {
        /// MIG mode is on.
        Enabled = "enabled",
        /// MIG mode is off.
        Disabled = "disabled",
    }
}

/// `mode`: whether the card can be partitioned, its MIG mode now, and a change pending until
/// the next reset. Every member is strict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Mode {
    /// Whether the card supports MIG.
    pub capable: bool,
    /// The MIG mode now.
    pub current: MigState,
    /// The MIG mode after the next reset; `null` when no change is pending.
    pub pending: Nullable<MigState>,
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

impl Decode for Mode {
    const EXPECTED: &'static str = "a mode object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut capable, mut current, mut pending) = (None, None, None);
        members(map, |name, map| {
            match name {
                "capable" => capable = Some(value(map, at, name)?),
                "current" => current = Some(value(map, at, name)?),
                "pending" => pending = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok((|| {
            Ok(Mode {
                capable: required(capable, at, "capable")?,
                current: required(current, at, "current")?,
                pending: required(pending, at, "pending")?,
            })
        })())
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
