//! The kernel's boot id, to tell the first start after a boot from a later one.

use std::path::Path;

/// `<proc_root>/sys/kernel/random/boot_id`, trimmed; `None` when it does not read.
pub fn read_boot_id(proc_root: &Path) -> Option<String> {
    let path = proc_root.join("sys/kernel/random/boot_id");
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        Ok(_) => None,
        Err(error) => {
            tracing::warn!("cannot read the boot id {}: {error}", path.display());
            None
        }
    }
}

/// Whether this is the first sync since boot: no stored id means after boot; an unreadable
/// current id cannot tell, and is taken as the same boot (so GPUs are not reset by mistake).
pub fn is_after_boot(stored: Option<&str>, current: Option<&str>) -> bool {
    match (stored, current) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(stored), Some(current)) => stored != current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_stored_boot_id_is_after_boot() {
        assert!(is_after_boot(None, Some("a")));
        assert!(is_after_boot(None, None));
    }

    #[test]
    fn the_same_boot_id_is_not_after_boot() {
        assert!(!is_after_boot(Some("a"), Some("a")));
    }

    #[test]
    fn a_changed_boot_id_is_after_boot() {
        assert!(is_after_boot(Some("a"), Some("b")));
    }

    #[test]
    fn an_unreadable_current_boot_id_is_taken_as_the_same_boot() {
        assert!(!is_after_boot(Some("a"), None));
    }
}
