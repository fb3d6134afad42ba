//! [`Fault`]: what was wrong with one member, found while reading.

use super::Path;
use crate::{JsonPointer, Problem};
use std::fmt;

/// A member that did not read: where, and why. Strict members turn it into a refusal, lenient
/// units into a lost member. Boxed: every member read travels as a [`Field`], and faults are
/// rare, so a field is as small as its value (a `Field<u32>` is 16 bytes, not 56), which keeps
/// the one-pass reader from moving fault-sized slots around on every member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault(Box<Where>);

/// A fault's place and problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Where {
    pub(crate) at: JsonPointer,
    pub(crate) kind: Problem,
    pub(crate) problem: String,
}

impl std::ops::Deref for Fault {
    type Target = Where;

    fn deref(&self) -> &Where {
        &self.0
    }
}

/// The result of reading one member.
pub(crate) type Field<T> = Result<T, Fault>;

impl Fault {
    pub(crate) fn new(at: &Path<'_>, kind: Problem, problem: impl Into<String>) -> Self {
        Self(Box::new(Where {
            at: at.pointer(),
            kind,
            problem: problem.into(),
        }))
    }

    /// The place, the kind and the problem, taken out.
    pub(crate) fn into_parts(self) -> (JsonPointer, Problem, String) {
        let Where { at, kind, problem } = *self.0;
        (at, kind, problem)
    }

    /// The member is absent.
    pub(crate) fn missing(at: &Path<'_>) -> Self {
        Self::new(at, Problem::Absent, "missing member")
    }

    /// The member has the wrong JSON type.
    pub(crate) fn mismatch(at: &Path<'_>, expected: &str, found: Found<'_>) -> Self {
        Self::new(
            at,
            Problem::WrongType,
            format!("expected {expected}, found {found}"),
        )
    }

    /// The problem as seen from the lenient unit at `unit`: the leaf is named when the fault is
    /// deeper than the unit.
    pub(crate) fn problem_within(&self, unit: &JsonPointer) -> String {
        if &self.at == unit {
            self.problem.clone()
        } else {
            format!("{}: {}", self.at, self.problem)
        }
    }
}

/// A JSON value as seen, for messages.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Found<'a> {
    Bool(bool),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Str(&'a str),
    Null,
    Object,
    Array,
}

impl fmt::Display for Found<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bool(value) => write!(f, "the boolean {value}"),
            Self::Unsigned(value) => write!(f, "the integer {value}"),
            Self::Signed(value) => write!(f, "the integer {value}"),
            Self::Float(value) => write!(f, "the number {value:?}"),
            Self::Str(text) => {
                let shown: String = text.chars().take(40).collect();
                let more = if shown.len() < text.len() { "…" } else { "" };
                write!(f, "the string {shown:?}{more}")
            }
            Self::Null => f.write_str("null"),
            Self::Object => f.write_str("an object"),
            Self::Array => f.write_str("a list"),
        }
    }
}
