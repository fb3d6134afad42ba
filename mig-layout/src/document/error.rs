//! [`LayoutError`]: a layout document that does not read, named by line and member.

use gpu_partition_types::JsonPointer;
use std::fmt;

/// Why a layout document was refused: where (its line and column in the text, and the member
/// as a JSON Pointer into the document) and what was wrong. Nothing is applied from a
/// document that does not read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayoutError {
    /// The line (1-based) of the fault; `None` for a fault of the whole text (too large).
    pub line: Option<usize>,
    /// The column (1-based) on that line, where the parser knows it.
    pub column: Option<usize>,
    /// The member at fault (`/mig-configs/all-balanced/0/mig-devices`), the root for a fault
    /// of the text itself.
    pub at: JsonPointer,
    /// What was wrong.
    pub message: String,
}

impl LayoutError {
    pub(crate) fn new(line: Option<usize>, at: JsonPointer, message: impl Into<String>) -> Self {
        Self {
            line,
            column: None,
            at,
            message: message.into(),
        }
    }

    pub(crate) fn column(mut self, column: usize) -> Self {
        self.column = Some(column);
        self
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}")?,
            (Some(line), None) => write!(f, "line {line}")?,
            (None, _) => f.write_str("the document")?,
        }
        if !self.at.is_root() {
            write!(f, ", {}", self.at)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for LayoutError {}
