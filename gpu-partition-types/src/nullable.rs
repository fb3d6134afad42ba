//! [`Nullable`]: a member that is always present and may be `null`.

use serde::{Serialize, Serializer};

/// A member that is always present and may be `null`.
///
/// Unlike `Option`, absence is not `null`: a reader refuses (or, inside a lenient unit, loses) a
/// nullable member that is missing. It is written as `null` or as the value, never left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Nullable<T> {
    /// The member is `null`.
    #[default]
    Null,
    /// The member holds a value.
    Value(T),
}

impl<T> Nullable<T> {
    /// The value, as an `Option`.
    pub fn as_option(&self) -> Option<&T> {
        match self {
            Self::Null => None,
            Self::Value(value) => Some(value),
        }
    }

    /// The value, as an owned `Option`.
    pub fn into_option(self) -> Option<T> {
        match self {
            Self::Null => None,
            Self::Value(value) => Some(value),
        }
    }

    /// Whether the member is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Self::Null)
    }
}

impl<T> From<Option<T>> for Nullable<T> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Null, Self::Value)
    }
}

impl<T: Serialize> Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Null => serializer.serialize_none(),
            Self::Value(value) => serializer.serialize_some(value),
        }
    }
}
