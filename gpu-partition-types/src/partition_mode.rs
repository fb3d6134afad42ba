//! [`PartitionMode`]: the nine partition modes of a GPU.

crate::token_enum! {
    /// A GPU's partition mode. The first five come from what the helper read; the other four say
    /// why there is no reading.
    pub enum PartitionMode: "partition mode" {
        /// The card cannot be partitioned.
        NotSupported = "not_supported",
        /// Capable, MIG off, no change pending.
        Disabled = "disabled",
        /// MIG off now, on after the next reset.
        EnableOnReboot = "enable_on_reboot",
        /// MIG on, no change pending.
        Enabled = "enabled",
        /// MIG on now, off after the next reset.
        DisableOnReboot = "disable_on_reboot",
        /// About to be read, or the read failed; the reason says why.
        Unknown = "unknown",
        /// The host takes part but does not read this GPU by design.
        NotChecked = "not_checked",
        /// Partitioning is not in use on this host; the default for a new GPU.
        NotInUse = "not_in_use",
        /// A read failed over a GPU last known divided: it may still be divided.
        PossiblyEnabled = "possibly_enabled",
    }
}

impl PartitionMode {
    /// Divided or possibly divided: `enabled`, `enable_on_reboot`, `disable_on_reboot`,
    /// `possibly_enabled`.
    pub fn is_divided_or_possibly(self) -> bool {
        match self {
            Self::Enabled
            | Self::EnableOnReboot
            | Self::DisableOnReboot
            | Self::PossiblyEnabled => true,
            Self::NotSupported
            | Self::Disabled
            | Self::Unknown
            | Self::NotChecked
            | Self::NotInUse => false,
        }
    }

    /// Settled: a mode read from the card, or `not_checked`. The others (`unknown`,
    /// `enable_on_reboot`, `disable_on_reboot`, `possibly_enabled`, and `not_in_use` on a GPU
    /// that should be read) still wait for something.
    pub fn is_settled(self) -> bool {
        match self {
            Self::NotSupported | Self::Disabled | Self::Enabled | Self::NotChecked => true,
            Self::EnableOnReboot
            | Self::DisableOnReboot
            | Self::Unknown
            | Self::NotInUse
            | Self::PossiblyEnabled => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Token;

    #[test]
    fn there_are_nine_modes_each_spelled_in_lower_case() {
        assert_eq!(PartitionMode::ALL.len(), 9);
        for mode in PartitionMode::ALL {
            assert_eq!(mode.as_str(), mode.as_str().to_lowercase());
            assert_eq!(mode.as_str().parse::<PartitionMode>().ok(), Some(*mode));
        }
    }

    #[test]
    fn divided_or_possibly_divided_is_exactly_four_modes() {
        let divided: Vec<_> = PartitionMode::ALL
            .iter()
            .filter(|mode| mode.is_divided_or_possibly())
            .map(|mode| mode.as_str())
            .collect();
        assert_eq!(
            divided,
            [
                "enable_on_reboot",
                "enabled",
                "disable_on_reboot",
                "possibly_enabled"
            ]
        );
    }
}
