//! [`Boot`]: which boot the host runs — the kernel's boot id, and the boot time for when the
//! boot id cannot be read — so that the first start after a boot can be told from a later one,
//! and a reset journalled under another boot is known to be over.

use serde::{Deserialize, Serialize};
use std::path::Path;

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

    /// Whether this reading and `other` name the same boot: the boot id decides when both
    /// have one, else the boot time within [`BOOT_TIME_SLACK_SECS`]; with neither on both
    /// sides it cannot be told ([`BootMatch::CannotTell`]). The one rule; each caller decides
    /// what a boot it cannot tell apart means for it.
    pub fn compare(&self, other: &Boot) -> BootMatch {
        match (
            &self.boot_id,
            &other.boot_id,
            self.boot_time,
            other.boot_time,
        ) {
            (Some(one), Some(two), _, _) if one == two => BootMatch::Same,
            (Some(_), Some(_), _, _) => BootMatch::Other,
            (_, _, Some(one), Some(two)) if one.abs_diff(two) <= BOOT_TIME_SLACK_SECS => {
                BootMatch::Same
            }
            (_, _, Some(_), Some(_)) => BootMatch::Other,
            _ => BootMatch::CannotTell,
        }
    }

    /// What to store for the next start: each value read now, else the one stored before.
    pub fn or(self, stored: &Boot) -> Boot {
        Boot {
            boot_id: self.boot_id.or_else(|| stored.boot_id.clone()),
            boot_time: self.boot_time.or(stored.boot_time),
        }
    }
}

/// How far apart two readings of `btime` may be and still name the same boot: the kernel
/// derives it from the clock and the uptime, so a clock adjustment moves it by a second or two,
/// while a reboot moves it by the whole reboot.
pub const BOOT_TIME_SLACK_SECS: u64 = 2;

/// Whether two readings of [`Boot`] name the same boot ([`Boot::compare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootMatch {
    /// The same boot.
    Same,
    /// Another boot.
    Other,
    /// Nothing compares: neither both boot ids nor both boot times read.
    CannotTell,
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

    #[test]
    fn the_boot_id_decides_then_the_boot_time_within_its_slack_else_it_cannot_be_told() {
        let id = |id: &str| Boot::new(Some(id.into()), None);
        let time = |time: u64| Boot::new(None, Some(time));
        let both = |id: &str, time: u64| Boot::new(Some(id.into()), Some(time));
        let table = [
            (id("a"), id("a"), BootMatch::Same),
            (id("a"), id("b"), BootMatch::Other),
            (both("a", 1000), both("a", 1600), BootMatch::Same),
            (both("a", 1000), both("b", 1000), BootMatch::Other),
            (time(1000), time(1002), BootMatch::Same),
            (time(1000), time(1003), BootMatch::Other),
            (id("a"), time(1000), BootMatch::CannotTell),
            (Boot::default(), id("a"), BootMatch::CannotTell),
            (Boot::default(), Boot::default(), BootMatch::CannotTell),
        ];
        for (one, two, want) in table {
            assert_eq!(one.compare(&two), want, "{one:?} against {two:?}");
            assert_eq!(two.compare(&one), want, "{two:?} against {one:?}");
        }
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

    #[test]
    fn the_boot_id_is_read_trimmed_and_an_empty_one_is_none() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let random = dir.path().join("sys/kernel/random");
        std::fs::create_dir_all(&random)?;
        std::fs::write(random.join("boot_id"), "3f1c\n")?;
        assert_eq!(read_boot_id(dir.path()).as_deref(), Some("3f1c"));
        std::fs::write(random.join("boot_id"), "\n")?;
        assert_eq!(read_boot_id(dir.path()), None);
        Ok(())
    }
}
