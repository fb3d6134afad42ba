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

    /// What to store for the next start: each value read now, else the one stored before.
    pub fn or(self, stored: &Boot) -> Boot {
        Boot {
            boot_id: self.boot_id.or_else(|| stored.boot_id.clone()),
            boot_time: self.boot_time.or(stored.boot_time),
        }
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
