//! The helper's exit statuses that carry a meaning of their own (`docs/helper-protocol.md`,
//! "Running the helper"): every other non-zero status, and every death by a signal, is a
//! crash.

/// The exit status with which a helper says the card is busy (held by another client or a
/// lock); its stdout is then ignored.
pub const EXIT_BUSY: u8 = 75;
