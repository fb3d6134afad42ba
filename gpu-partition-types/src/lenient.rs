//! [`Lenient`]: a member the reader can do without.

use crate::JsonPointer;
use serde::{Serialize, Serializer};

/// A member the reader can do without: read, or lost with the reason why.
///
/// A fault anywhere inside a lenient unit costs exactly that unit and nothing around it. A lost
/// member is not written back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lenient<T> {
    /// The member was read.
    Read(T),
    /// The member was absent or did not read.
    Lost(LostMember),
}

/// Why a lenient member was lost, and where it is: its [`Lost`] (the pointer and the
/// problem), boxed, so that a lenient member costs no more room than its value (a reply holds
/// thousands; losses are rare). Its fields read through it: `lost.pointer`, `lost.problem`,
/// `lost.message`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LostMember(Box<Lost>);

/// What a [`LostMember`] says.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Lost {
    /// The lenient unit that was lost (RFC 6901), never a leaf inside it.
    pub pointer: JsonPointer,
    /// Which kind of fault lost it (of the leaf that faulted, when deeper than the unit).
    pub problem: Problem,
    /// What was wrong, for people; it may name a leaf inside the unit.
    pub message: String,
}

/// The kind of fault that cost a member ([`Lost::problem`]) or refused a reply
/// ([`RefusedReply::problem`](crate::RefusedReply::problem)): what a caller acts on (a member
/// absent from an earlier minor, a value of a later one) without reading the message. Today's
/// lenient members are lost as `Absent`, `WrongType` or `OutOfRange`; the others refuse strict
/// members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Problem {
    /// The member is not there (an earlier minor did not write it, or a writer left it out).
    Absent,
    /// It holds another JSON type than the protocol's.
    WrongType,
    /// A number outside the member's range.
    OutOfRange,
    /// A token the protocol does not spell so (a later minor's value of a strict token).
    UnknownSpelling,
    /// A value of the right type that the protocol does not allow (an empty kind, a bus ID
    /// that is none, a page out of order, a format of another major).
    Invalid,
    /// Bytes that are not a stream of JSON objects (not UTF-8, not JSON, cut short, nested too
    /// deep, empty): a refusal at the root only, never a lost member.
    Malformed,
}

impl Problem {
    /// The kind's token: `absent`, `wrong_type`, `out_of_range`, `unknown_spelling`,
    /// `invalid`, `malformed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Absent => "absent",
            Self::WrongType => "wrong_type",
            Self::OutOfRange => "out_of_range",
            Self::UnknownSpelling => "unknown_spelling",
            Self::Invalid => "invalid",
            Self::Malformed => "malformed",
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl LostMember {
    /// A lost member at `pointer`, lost for a fault of kind `problem` said by `message`.
    pub fn new(pointer: JsonPointer, problem: Problem, message: impl Into<String>) -> Self {
        Self(Box::new(Lost {
            pointer,
            problem,
            message: message.into(),
        }))
    }
}

impl std::ops::Deref for LostMember {
    type Target = Lost;

    fn deref(&self) -> &Lost {
        &self.0
    }
}

impl std::ops::DerefMut for LostMember {
    fn deref_mut(&mut self) -> &mut Lost {
        &mut self.0
    }
}

impl std::fmt::Display for LostMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.pointer, self.message)
    }
}

impl std::error::Error for LostMember {}

impl<T> Lenient<T> {
    /// The member, if it was read.
    pub fn read(&self) -> Option<&T> {
        match self {
            Self::Read(value) => Some(value),
            Self::Lost(_) => None,
        }
    }

    /// The member, if it was read, mutably.
    pub fn read_mut(&mut self) -> Option<&mut T> {
        match self {
            Self::Read(value) => Some(value),
            Self::Lost(_) => None,
        }
    }

    /// Why the member was lost, if it was.
    pub fn lost(&self) -> Option<&LostMember> {
        match self {
            Self::Read(_) => None,
            Self::Lost(lost) => Some(lost),
        }
    }

    /// Whether the member was lost (used to leave it out when writing).
    pub fn is_lost(&self) -> bool {
        matches!(self, Self::Lost(_))
    }

    /// The member as a `Result`.
    pub fn as_result(&self) -> Result<&T, &LostMember> {
        match self {
            Self::Read(value) => Ok(value),
            Self::Lost(lost) => Err(lost),
        }
    }
}

impl<T> From<T> for Lenient<T> {
    fn from(value: T) -> Self {
        Self::Read(value)
    }
}

/// Writes the read value; a lost member writes `null`, which is why records skip lost members
/// (`skip_serializing_if = "Lenient::is_lost"`) and lists leave lost elements out.
impl<T: Serialize> Serialize for Lenient<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Read(value) => value.serialize(serializer),
            Self::Lost(_) => serializer.serialize_none(),
        }
    }
}
