//! The kernel log (`/dev/kmsg`): its records, and a [`KernelLog`] that notes where it ends
//! before a reset and gives the error records added after that mark. Any vendor's reset is
//! verified against it.

use gpu_host_probe::OsError;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where the kernel log is read by default.
pub const DEFAULT_KMSG: &str = "/dev/kmsg";

/// The kernel log could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelLogError {
    /// It could not be opened or read.
    #[error("cannot read the kernel log {}", path.display())]
    Read {
        /// The log.
        path: PathBuf,
        /// Why.
        #[source]
        source: OsError,
    },
    /// The errors since a mark were asked for before any mark.
    #[error("the kernel log was not marked before the reset")]
    NotMarked,
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

/// The kernel log of a host, with the mark a reset's verification reads from.
#[derive(Debug, Clone)]
pub struct KernelLog {
    path: PathBuf,
    mark: Option<u64>,
}

impl KernelLog {
    /// The log at `path` (usually [`DEFAULT_KMSG`]), not yet marked.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            mark: None,
        }
    }

    fn records(&self) -> Result<Vec<KmsgRecord>, KernelLogError> {
        read_kmsg(&self.path).map_err(|source| KernelLogError::Read {
            path: self.path.clone(),
            source: source.into(),
        })
    }

    /// Notes where the log ends now.
    pub fn mark(&mut self) -> Result<(), KernelLogError> {
        let records = self.records()?;
        self.mark = Some(
            records
                .iter()
                .map(|record| record.sequence)
                .max()
                .unwrap_or(0),
        );
        Ok(())
    }

    /// The records added since the mark.
    pub fn since_mark(&self) -> Result<Vec<KmsgRecord>, KernelLogError> {
        let mark = self.mark.ok_or(KernelLogError::NotMarked)?;
        Ok(self
            .records()?
            .into_iter()
            .filter(|record| record.sequence > mark)
            .collect())
    }
}

/// The messages of the error records (level 3 or worse), in order.
pub fn error_messages(records: Vec<KmsgRecord>) -> Vec<String> {
    records
        .into_iter()
        .filter(KmsgRecord::is_error)
        .map(|record| record.message)
        .collect()
}

/// What a PCI function's failed reset or wake-up logs, whatever the record's level: the kernel
/// gives up on it (`not ready …; giving up`, at warning level), or cannot reach it
/// (`… inaccessible`).
pub fn is_device_failure(message: &str) -> bool {
    message.contains("; giving up") || message.contains("inaccessible")
}

/// The messages of the records about one of `devices` (named by their PCI address, as the
/// kernel prefixes them: `nvidia 0000:01:00.0: …`) that are errors, or device failures at any
/// level ([`is_device_failure`]).
pub fn device_errors(
    records: Vec<KmsgRecord>,
    devices: &[gpu_partition_types::Bdf],
) -> Vec<String> {
    device_errors_by(records, devices, is_device_failure)
}

/// The messages of the records about one of `devices` (named by their PCI address, `<bdf>: `,
/// as the kernel and the drivers prefix them) that are errors, or at any level a failure as
/// `failure` reads it: the rule of [`device_errors`], with a driver's own words for a failure
/// added where it has them ([`crate::amd::amd_device_errors`]).
pub(crate) fn device_errors_by(
    records: Vec<KmsgRecord>,
    devices: &[gpu_partition_types::Bdf],
    failure: impl Fn(&str) -> bool,
) -> Vec<String> {
    let names: Vec<String> = devices.iter().map(|bdf| format!("{bdf}: ")).collect();
    records
        .into_iter()
        .filter(|record| {
            names.iter().any(|name| record.message.contains(name))
                && (record.is_error() || failure(&record.message))
        })
        .map(|record| record.message)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
