//! [`UnknownMember`]: a member of a later minor that this reader does not know, listed so that a
//! caller sees what it was not told rather than nothing at all.

use crate::JsonPointer;
use std::fmt;

/// A member the reader does not know (a later minor's, or a writer's own): where it is and
/// which JSON type it holds. Its value is not kept; the reply reads as if it were not there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct UnknownMember {
    /// The member itself (RFC 6901), in the folded reply's numbering.
    pub pointer: JsonPointer,
    /// The JSON type of its value.
    pub kind: JsonType,
}

/// The six types of a JSON value (RFC 8259, section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JsonType {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool,
    /// A number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl JsonType {
    /// The type's name: `null`, `boolean`, `number`, `string`, `array`, `object`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool => "boolean",
            Self::Number => "number",
            Self::String => "string",
            Self::Array => "array",
            Self::Object => "object",
        }
    }
}

impl fmt::Display for JsonType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for UnknownMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.pointer, self.kind)
    }
}
