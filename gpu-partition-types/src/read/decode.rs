//! The [`Decode`] trait and the serde glue that drives it: one pass over the text, no
//! intermediate `Value`, every fault kept with its position instead of aborting the parse.
//!
//! Syntax errors (bad bytes, truncation, nesting over serde_json's limit of 128) still abort:
//! they come from the deserializer, not from a `Decode` impl.

use super::{Fault, Field, Found, Path};
use crate::JsonType;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// A type read from one JSON value. Each method receives one kind of value; the defaults
/// answer "wrong type". A fault never stops the parse: compound values are drained.
pub(crate) trait Decode: Sized {
    /// What the member should be, for messages ("an object", "an integer (u32)").
    const EXPECTED: &'static str;

    fn from_bool(value: bool, at: &Path<'_>) -> Field<Self> {
        Err(Fault::mismatch(at, Self::EXPECTED, Found::Bool(value)))
    }
    fn from_unsigned(value: u64, at: &Path<'_>) -> Field<Self> {
        Err(Fault::mismatch(at, Self::EXPECTED, Found::Unsigned(value)))
    }
    fn from_signed(value: i64, at: &Path<'_>) -> Field<Self> {
        Err(Fault::mismatch(at, Self::EXPECTED, Found::Signed(value)))
    }
    fn from_float(value: f64, at: &Path<'_>) -> Field<Self> {
        Err(Fault::mismatch(at, Self::EXPECTED, Found::Float(value)))
    }
    fn from_str(value: &str, at: &Path<'_>) -> Field<Self> {
        Err(Fault::mismatch(at, Self::EXPECTED, Found::Str(value)))
    }
    fn from_null(at: &Path<'_>) -> Field<Self> {
        Err(Fault::mismatch(at, Self::EXPECTED, Found::Null))
    }
    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        drain_object(map)?;
        Ok(Err(Fault::mismatch(at, Self::EXPECTED, Found::Object)))
    }
    fn from_list<'de, A: SeqAccess<'de>>(seq: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        drain_list(seq)?;
        Ok(Err(Fault::mismatch(at, Self::EXPECTED, Found::Array)))
    }
}

/// Reads a `T` at a position: the seed handed to serde for each member.
pub(crate) struct At<'p, T> {
    path: &'p Path<'p>,
    target: PhantomData<fn() -> T>,
}

impl<'p, T> At<'p, T> {
    pub(crate) fn new(path: &'p Path<'p>) -> Self {
        Self {
            path,
            target: PhantomData,
        }
    }
}

impl<'de, T: Decode> DeserializeSeed<'de> for At<'_, T> {
    type Value = Field<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Field<T>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: Decode> Visitor<'de> for At<'_, T> {
    type Value = Field<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTED)
    }
    fn visit_bool<E>(self, value: bool) -> Result<Field<T>, E> {
        Ok(T::from_bool(value, self.path))
    }
    fn visit_u64<E>(self, value: u64) -> Result<Field<T>, E> {
        Ok(T::from_unsigned(value, self.path))
    }
    fn visit_i64<E>(self, value: i64) -> Result<Field<T>, E> {
        Ok(T::from_signed(value, self.path))
    }
    fn visit_f64<E>(self, value: f64) -> Result<Field<T>, E> {
        Ok(T::from_float(value, self.path))
    }
    fn visit_str<E>(self, value: &str) -> Result<Field<T>, E> {
        Ok(T::from_str(value, self.path))
    }
    fn visit_unit<E>(self) -> Result<Field<T>, E> {
        Ok(T::from_null(self.path))
    }
    fn visit_none<E>(self) -> Result<Field<T>, E> {
        Ok(T::from_null(self.path))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Field<T>, A::Error> {
        T::from_object(map, self.path)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Field<T>, A::Error> {
        T::from_list(seq, self.path)
    }
}

/// Any JSON value, read and thrown away but for its type. It goes through `deserialize_any`
/// (not `IgnoredAny`) so that serde_json's nesting limit holds inside unknown members too.
pub(crate) struct Skip(JsonType);

impl<'de> serde::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip(JsonType::Bool))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip(JsonType::Number))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip(JsonType::Number))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip(JsonType::Number))
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip(JsonType::String))
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip(JsonType::Null))
    }
    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip(JsonType::Null))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Skip, A::Error> {
        drain_object(map).map(|()| Skip(JsonType::Object))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Skip, A::Error> {
        drain_list(seq).map(|()| Skip(JsonType::Array))
    }
}

pub(crate) fn drain_object<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<Skip, Skip>()?.is_some() {}
    Ok(())
}

pub(crate) fn drain_list<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Skip>()?.is_some() {}
    Ok(())
}

/// A member name, borrowed from the input when it holds no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(value)))
    }
    fn visit_str<E>(self, value: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(value.to_owned())))
    }
}

/// Walks the members of the object at `at`: `member(name, map)` reads the value of a member it
/// knows and answers `true`; any other member is skipped, and listed (pointer and JSON type)
/// when the reader lists them. The last of repeated members wins.
pub(crate) fn members<'de, A, F>(mut map: A, at: &Path<'_>, mut member: F) -> Result<(), A::Error>
where
    A: MapAccess<'de>,
    F: FnMut(&str, &mut A) -> Result<bool, A::Error>,
{
    while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
        if !member(&name, &mut map)? {
            let Skip(kind) = map.next_value::<Skip>()?;
            at.unknown(&name, kind);
        }
    }
    Ok(())
}

/// Reads the value of the member `name` of the object at `at`.
pub(crate) fn value<'de, T: Decode, A: MapAccess<'de>>(
    map: &mut A,
    at: &Path<'_>,
    name: &str,
) -> Result<Field<T>, A::Error> {
    let here = at.member(name);
    map.next_value_seed(At::<T>::new(&here))
}

/// A member the record cannot do without: its value, or a fault naming it when absent.
pub(crate) fn required<T>(slot: Option<Field<T>>, at: &Path<'_>, name: &str) -> Field<T> {
    slot.unwrap_or_else(|| Err(Fault::missing(&at.member(name))))
}
