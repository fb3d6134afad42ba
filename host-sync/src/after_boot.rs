//! Whether a start is the first after a boot: the rule that compares the boot now with the one
//! stored at the last sync. ([`Boot`] itself, and its readers, are `gpu-host-probe`'s: a reset's
//! journal needs the boot id too.)

use gpu_host_probe::{Boot, BootMatch};

/// Whether a start is the first after a boot, and why when it cannot tell.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AfterBootDecision {
    /// The first start after a boot.
    pub after_boot: bool,
    /// Set when the boot could not be told apart: the start is taken as the same boot.
    pub warning: Option<String>,
}

/// Decides whether this start is the first after a boot: nothing stored (the first start
/// ever) is after boot; otherwise [`Boot::compare`] decides (the boot id when both sides have
/// one, else the boot time within its slack). When neither can be compared (nothing reads now,
/// or the two sides share no kind), the start is taken as the same boot, with a warning, so
/// GPUs are never cleared by a guess. (A check of the declared layout takes the other side: a
/// boot that cannot be told apart says nothing of the cards.)
pub fn is_after_boot(stored: Option<&Boot>, current: &Boot) -> AfterBootDecision {
    let decided = |after_boot| AfterBootDecision {
        after_boot,
        warning: None,
    };
    let same_boot = |why: &str| AfterBootDecision {
        after_boot: false,
        warning: Some(format!("{why}: this start is taken as the same boot")),
    };
    if !current.is_known() {
        return same_boot("neither the boot id nor the boot time reads");
    }
    let Some(stored) = stored.filter(|stored| stored.is_known()) else {
        return decided(true);
    };
    match stored.compare(current) {
        BootMatch::Same => decided(false),
        BootMatch::Other => decided(true),
        BootMatch::CannotTell => {
            same_boot("the boot was stored by one identity and reads now by the other")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(id: &str) -> Boot {
        Boot::new(Some(id.into()), None)
    }

    fn time(time: u64) -> Boot {
        Boot::new(None, Some(time))
    }

    #[test]
    fn nothing_stored_is_after_boot() {
        assert!(is_after_boot(None, &id("a")).after_boot);
        assert!(is_after_boot(Some(&Boot::default()), &time(5)).after_boot);
    }

    #[test]
    fn the_same_boot_id_is_not_after_boot_and_another_is() {
        assert!(!is_after_boot(Some(&id("a")), &id("a")).after_boot);
        assert!(is_after_boot(Some(&id("a")), &id("b")).after_boot);
    }

    #[test]
    fn without_a_boot_id_the_boot_time_decides_within_its_slack() {
        assert!(!is_after_boot(Some(&time(1000)), &time(1001)).after_boot);
        assert!(is_after_boot(Some(&time(1000)), &time(1600)).after_boot);
    }

    #[test]
    fn the_boot_id_decides_over_the_boot_time_when_both_have_it() {
        let stored = Boot::new(Some("a".into()), Some(1000));
        let now = Boot::new(Some("a".into()), Some(1005));
        assert!(!is_after_boot(Some(&stored), &now).after_boot);
    }

    #[test]
    fn nothing_readable_now_is_the_same_boot_with_a_warning() {
        let decision = is_after_boot(Some(&id("a")), &Boot::default());
        assert!(!decision.after_boot);
        assert!(decision.warning.is_some());
        assert!(!is_after_boot(None, &Boot::default()).after_boot);
    }

    #[test]
    fn identities_of_different_kinds_cannot_tell_and_count_as_the_same_boot() {
        let decision = is_after_boot(Some(&id("a")), &time(5));
        assert!(!decision.after_boot);
        assert!(decision.warning.is_some());
    }
}
