//! [`Enumerated`]: an enumeration value that keeps what it does not know.

use crate::Token;
use serde::{Serialize, Serializer};
use std::fmt;

/// A value of the enumeration `T`, or a spelling this reader does not know, kept with its text.
///
/// Only the exact lower-case spelling reads as [`Known`](Self::Known): `"enabled"` is known,
/// `"Enabled"`, `"ENABLED"` and `"on"` are [`Unknown`](Self::Unknown). An unknown value writes back
/// unchanged, so a newer helper's value survives a read and a write.
///
/// An unknown value is made only by [`Enumerated::from_wire`], which reads a known spelling as
/// known: a value has one form, so two spellings of it never compare unequal.
///
/// ```compile_fail
/// use gpu_partition_types::{Capability, Enumerated, UnknownValue};
/// // UnknownValue cannot be built by hand: `p2p` could not pose as unknown.
/// let p2p = Enumerated::<Capability>::Unknown(UnknownValue("p2p".to_owned()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Enumerated<T> {
    /// A value of `T`.
    Known(T),
    /// A spelling that is no value of `T`, as it was read.
    Unknown(UnknownValue),
}

/// The text of a value an [`Enumerated`] does not know: opaque, made only by the reader.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnknownValue(String);

impl UnknownValue {
    /// The text as it was read.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<T: Token> Enumerated<T> {
    /// Reads `text` exactly: a known spelling, or the text kept as unknown.
    pub fn from_wire(text: &str) -> Self {
        match T::from_token(text) {
            Some(value) => Self::Known(value),
            None => Self::Unknown(UnknownValue(text.to_owned())),
        }
    }

    /// The spelling that is written: the token, or the unknown text unchanged.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Known(value) => value.as_str(),
            Self::Unknown(text) => text.as_str(),
        }
    }

    /// The known value, if this is one.
    pub fn known(&self) -> Option<T> {
        match self {
            Self::Known(value) => Some(*value),
            Self::Unknown(_) => None,
        }
    }
}

impl<T> From<T> for Enumerated<T> {
    fn from(value: T) -> Self {
        Self::Known(value)
    }
}

impl<T: Token> fmt::Display for Enumerated<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<T: Token> Serialize for Enumerated<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de, T: Token> serde::Deserialize<'de> for Enumerated<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Self::from_wire(&text))
    }
}
