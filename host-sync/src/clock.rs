//! The wall clock of the host's records: seconds since the Unix epoch, the one reading every
//! record of this crate is stamped with.

/// Seconds since the Unix epoch now (0 on a clock set before it).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or_default()
}
