//! `card`: which board was read (format 1.2): its model and the identities the driver gives,
//! so that a reader can tell another card in the same slot from the one it knew; and (format
//! 1.4) its architecture, which says what of a division a restart keeps.

use crate::{CardArchitecture, Nullable};

crate::record::record! {
    /// `card` (a lenient unit, each member lenient inside it): the board the reply is of.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CardIdentity: "a card object" {
        /// The model, as the driver names it (`nvmlDeviceGetName`: `NVIDIA A100-SXM4-40GB`).
        name: lenient String = "name",
        /// The board's serial number (`nvmlDeviceGetSerial`); `null` on a board that has none.
        serial: lenient Nullable<String> = "serial",
        /// The GPU's UUID (`nvmlDeviceGetUUID`: `GPU-…`).
        uuid: lenient String = "uuid",
        /// The GPU's architecture (`nvmlDeviceGetArchitecture`), as NVML numbers it (format
        /// 1.4: a reply of an earlier minor reads with it lost, and the architecture unknown).
        architecture: lenient CardArchitecture = "architecture",
    }
}
