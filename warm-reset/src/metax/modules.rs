//! What the host's files say: the `metax` use count in `/proc/modules`, and kernel error
//! records in `/dev/kmsg`.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The `metax` kernel module, as `/proc/modules` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverUse {
    /// No `metax` line: the driver is not loaded.
    NotLoaded,
    /// Loaded with this use count.
    Loaded(u32),
    /// The line does not read (counted as in use: never reset when unsure).
    Unreadable(String),
}

/// Reads the `metax` line of a `/proc/modules` text (`name size use_count deps state address`).
pub fn metax_use(modules: &str) -> DriverUse {
    for line in modules.lines() {
        let mut fields = line.split_whitespace();
        if fields.next() != Some("metax") {
            continue;
        }
        return match fields.nth(1).map(str::parse::<u32>) {
            Some(Ok(count)) => DriverUse::Loaded(count),
            _ => DriverUse::Unreadable(line.to_owned()),
        };
    }
    DriverUse::NotLoaded
}

/// One kernel log record: `PRIORITY,SEQUENCE,TIMESTAMP,FLAGS;MESSAGE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmsgRecord {
    /// The syslog level (`PRIORITY & 7`).
    pub level: u8,
    /// The sequence number.
    pub sequence: u64,
    /// The message.
    pub message: String,
}

impl KmsgRecord {
    /// Error or worse (`level <= 3`).
    pub fn is_error(&self) -> bool {
        self.level <= 3
    }
}

/// Reads one record line; continuation lines (` KEY=value`) and lines that do not read give
/// `None`.
pub fn parse_kmsg_record(line: &str) -> Option<KmsgRecord> {
    if line.starts_with(' ') {
        return None;
    }
    let (prefix, message) = line.split_once(';')?;
    let mut fields = prefix.split(',');
    let priority: u32 = fields.next()?.parse().ok()?;
    let sequence: u64 = fields.next()?.parse().ok()?;
    Some(KmsgRecord {
        level: u8::try_from(priority & 7).ok()?,
        sequence,
        message: message.to_owned(),
    })
}

/// Every record the kernel log at `path` holds now: the device (`/dev/kmsg`, read record by
/// record until EAGAIN) or a regular file (read to its end).
pub fn read_kmsg(path: &Path) -> std::io::Result<Vec<KmsgRecord>> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)?;
    let mut records = Vec::new();
    if file.metadata()?.is_file() {
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        records.extend(text.lines().filter_map(parse_kmsg_record));
        return Ok(records);
    }
    let mut buffer = vec![0u8; 8192];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                let text = String::from_utf8_lossy(&buffer[..n]);
                records.extend(text.lines().filter_map(parse_kmsg_record));
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            // EPIPE: the record was overwritten before we read it; the next one follows.
            Err(error) if error.raw_os_error() == Some(nix::errno::Errno::EPIPE as i32) => {}
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metax_use_count_is_the_third_field() {
        let modules = "nvme 61440 3 - Live 0x0\nmetax 4194304 0 - Live 0xffffffffc0a00000\n";
        assert_eq!(metax_use(modules), DriverUse::Loaded(0));
        assert_eq!(
            metax_use("metax 4194304 2 mxgvm, Live 0x0\n"),
            DriverUse::Loaded(2)
        );
    }

    #[test]
    fn no_metax_line_is_not_loaded() {
        assert_eq!(
            metax_use("metax_other 1 0 - Live 0x0\nnvme 1 0 - Live 0x0\n"),
            DriverUse::NotLoaded
        );
    }

    #[test]
    fn a_metax_line_that_does_not_read_is_unreadable() {
        assert!(matches!(
            metax_use("metax 4194304 many - Live\n"),
            DriverUse::Unreadable(_)
        ));
    }

    #[test]
    fn kmsg_records_give_level_and_sequence_and_skip_continuations() {
        assert_eq!(
            parse_kmsg_record("3,1234,5678,-;metax 0000:06:00.0: reset failed"),
            Some(KmsgRecord {
                level: 3,
                sequence: 1234,
                message: "metax 0000:06:00.0: reset failed".into()
            })
        );
        assert_eq!(
            parse_kmsg_record("14,9,1,-;hello").map(|r| (r.level, r.is_error())),
            Some((6, false))
        );
        assert_eq!(parse_kmsg_record(" SUBSYSTEM=pci"), None);
    }
}
