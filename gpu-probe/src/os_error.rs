//! [`OsError`]: an I/O error that can travel in the machine's events, which are cloned and
//! compared.

use std::fmt;
use std::sync::Arc;

/// An I/O error, shared: clones point to the same error, and two errors are equal when they are
/// of the same kind and say the same.
#[derive(Debug, Clone)]
pub struct OsError(Arc<std::io::Error>);

impl OsError {
    /// The error's kind.
    pub fn kind(&self) -> std::io::ErrorKind {
        self.0.kind()
    }

    /// The OS error number, when it has one.
    pub fn raw_os_error(&self) -> Option<i32> {
        self.0.raw_os_error()
    }
}

impl From<std::io::Error> for OsError {
    fn from(error: std::io::Error) -> Self {
        Self(Arc::new(error))
    }
}

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for OsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for OsError {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind() && self.to_string() == other.to_string()
    }
}

impl Eq for OsError {}
