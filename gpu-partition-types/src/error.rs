//! [`RefusedReply`]: why a reply (or a version reply) was refused as a whole.

use crate::{JsonPointer, Problem};
use std::fmt;

/// A reply that does not read: the first strict member at fault, named by JSON Pointer (`""`
/// when the bytes are not a stream of JSON objects at all), and the page it was found in when
/// the reply had several.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct RefusedReply {
    /// The member at fault (RFC 6901); the root (`""`) for bytes that do not read.
    pub pointer: JsonPointer,
    /// The page, by its position in the stream (0-based), when there were several pages.
    pub page: Option<usize>,
    /// Which kind of fault refused it ([`Problem::Malformed`] for bytes that do not read).
    pub problem: Problem,
    /// What was wrong.
    pub message: String,
}

impl RefusedReply {
    pub(crate) fn new(pointer: JsonPointer, problem: Problem, message: impl Into<String>) -> Self {
        Self {
            pointer,
            page: None,
            problem,
            message: message.into(),
        }
    }

    /// Bytes that are not a stream of JSON objects.
    pub(crate) fn at_root(message: impl Into<String>) -> Self {
        Self::new(JsonPointer::root(), Problem::Malformed, message)
    }

    pub(crate) fn in_page(mut self, page: usize) -> Self {
        self.page = Some(page);
        self
    }
}

impl fmt::Display for RefusedReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reply refused at {:?}", self.pointer.to_string())?;
        if let Some(page) = self.page {
            write!(f, " (page {page} of the stream)")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl From<crate::read::Fault> for RefusedReply {
    fn from(fault: crate::read::Fault) -> Self {
        let (at, kind, problem) = fault.into_parts();
        Self::new(at, kind, problem)
    }
}
