//! Which boot this is: the kernel's boot id, or the boot time when the boot id cannot be read,
//! to tell the first start after a boot from a later one.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// How far apart two readings of `btime` may be and still name the same boot: the kernel
/// derives it from the clock and the uptime, so a clock adjustment moves it by a second or two,
/// while a reboot moves it by the whole reboot.
pub const BOOT_TIME_SLACK_SECS: u64 = 2;

/// What identifies the boot the host runs: the kernel's boot id
/// (`<proc-root>/sys/kernel/random/boot_id`) and the boot time (`btime` in `<proc-root>/stat`),
/// each when it reads. The boot id decides when both sides have it; else the boot time.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Boot {
    /// The kernel's boot id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The boot time, seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_time: Option<u64>,
}

impl Boot {
    /// A boot known by these (for embedders that read them another way, and for tests).
    pub fn new(boot_id: Option<String>, boot_time: Option<u64>) -> Self {
        Self { boot_id, boot_time }
    }

    /// Reads both from `proc_root`; what does not read is `None` (logged at debug).
    pub fn read(proc_root: &Path) -> Self {
        Self {
            boot_id: read_boot_id(proc_root),
            boot_time: read_boot_time(proc_root),
        }
    }

    /// Whether anything identifies the boot.
    pub fn is_known(&self) -> bool {
        self.boot_id.is_some() || self.boot_time.is_some()
    }

    /// What to store for the next start: each value read now, else the one stored before.
    pub fn or(self, stored: &Boot) -> Boot {
        Boot {
            boot_id: self.boot_id.or_else(|| stored.boot_id.clone()),
            boot_time: self.boot_time.or(stored.boot_time),
        }
    }
}

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
/// ever) is after boot; otherwise the boot id decides when both sides have one, else the boot
/// time (within [`BOOT_TIME_SLACK_SECS`]). When neither can be compared (nothing reads now, or
/// the two sides share no kind), the start is taken as the same boot, with a warning, so GPUs
/// are never cleared by a guess.
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
    match (
        &stored.boot_id,
        &current.boot_id,
        stored.boot_time,
        current.boot_time,
    ) {
        (Some(then), Some(now), _, _) => decided(then != now),
        (_, _, Some(then), Some(now)) => decided(then.abs_diff(now) > BOOT_TIME_SLACK_SECS),
        _ => same_boot("the boot was stored by one identity and reads now by the other"),
    }
}

/// `<proc_root>/sys/kernel/random/boot_id`, trimmed; `None` when it does not read.
pub fn read_boot_id(proc_root: &Path) -> Option<String> {
    let path = proc_root.join("sys/kernel/random/boot_id");
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Some(text.trim().to_owned()),
        Ok(_) => None,
        Err(error) => {
            tracing::debug!("cannot read the boot id {}: {error}", path.display());
            None
        }
    }
}

/// The `btime` line of `<proc_root>/stat` (seconds since the epoch); `None` when it does not
/// read.
pub fn read_boot_time(proc_root: &Path) -> Option<u64> {
    let path = proc_root.join("stat");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => {
            tracing::debug!("cannot read the boot time {}: {error}", path.display());
            return None;
        }
    };
    let time = text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        (fields.next() == Some("btime"))
            .then(|| fields.next()?.parse().ok())
            .flatten()
    });
    if time.is_none() {
        tracing::debug!("{} has no btime line that reads", path.display());
    }
    time
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

    #[test]
    fn btime_is_read_from_its_line_of_proc_stat() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join("stat"),
            "cpu  1 2 3\nbtime 1767225600\nprocesses 9\n",
        )?;
        assert_eq!(read_boot_time(dir.path()), Some(1_767_225_600));
        std::fs::write(dir.path().join("stat"), "cpu  1 2 3\nbtime soon\n")?;
        assert_eq!(read_boot_time(dir.path()), None);
        Ok(())
    }
}
