//! [`SimKernelLog`]: a simulated host's kernel log.

use crate::backend::BackendError;
use crate::backend::KernelLogSource;
use crate::kmsg::{KernelLogError, KmsgRecord};
use std::path::PathBuf;

/// A kernel log in memory: records appended by the simulated host, a mark, and whether it can
/// be read at all.
#[derive(Debug, Clone)]
pub struct SimKernelLog {
    /// Whether the log can be read (a host where `/dev/kmsg` is denied: `false`).
    pub readable: bool,
    records: Vec<KmsgRecord>,
    mark: u64,
}

impl Default for SimKernelLog {
    fn default() -> Self {
        let mut log = Self {
            readable: true,
            records: Vec::new(),
            mark: 0,
        };
        log.push(6, "simulated host: booted");
        log
    }
}

impl SimKernelLog {
    /// Appends a record at syslog `level`.
    pub fn push(&mut self, level: u8, message: impl Into<String>) {
        let sequence = self.records.len() as u64 + 1;
        self.records.push(KmsgRecord {
            level,
            sequence,
            message: message.into(),
        });
    }

    fn denied() -> BackendError {
        KernelLogError::Read {
            path: PathBuf::from(crate::kmsg::DEFAULT_KMSG),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied).into(),
        }
        .into()
    }
}

impl KernelLogSource for SimKernelLog {
    fn mark_kernel_log(&mut self) -> Result<(), BackendError> {
        if !self.readable {
            return Err(Self::denied());
        }
        self.mark = self.records.len() as u64;
        Ok(())
    }

    fn records_since_mark(&mut self) -> Result<Vec<KmsgRecord>, BackendError> {
        if !self.readable {
            return Err(Self::denied());
        }
        Ok(self
            .records
            .iter()
            .filter(|record| record.sequence > self.mark)
            .cloned()
            .collect())
    }
}
