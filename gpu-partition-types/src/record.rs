//! [`record!`]: a record of the reply from one list of its members. From that list come the
//! struct, its one-pass reader ([`Decode`](crate::read::Decode)), its writer, its lost members,
//! how its pointers move when the record moves in a list ([`Reindex`]), and a constructor.
//!
//! Each member is `name: required Type = "wire"` (the record cannot do without it: a fault
//! costs the record) or `name: lenient Type = "wire"` (a [`Lenient`]: a fault costs that
//! member only; it is left out when written). Required members are checked in the order of the
//! list, so the first fault named is the first in the protocol's order. A `check` function may
//! refuse a record whose members read but do not agree.

use crate::{JsonPointer, Lenient, LostMember};

/// A record whose lenient members name themselves by pointer, and so must be told when the
/// record moves to another index of its list (when pages are joined).
pub(crate) trait Reindex {
    /// Moves the record to `index` of its list (step 1 of every pointer inside it).
    fn reindex(&mut self, index: usize);
}

impl<T: Reindex> Reindex for Lenient<T> {
    fn reindex(&mut self, index: usize) {
        match self {
            Lenient::Read(item) => item.reindex(index),
            Lenient::Lost(lost) => lost.pointer.reindex(1, index),
        }
    }
}

/// Moves the pointer of a lenient member when its record moves to `index`.
pub(crate) fn reindex_member<T>(member: &mut Lenient<T>, index: usize) {
    if let Lenient::Lost(lost) = member {
        lost.pointer.reindex(1, index);
    }
}

/// A lenient member a constructor leaves unset: not written, and read back as missing.
pub(crate) fn unset<T>() -> Lenient<T> {
    Lenient::Lost(LostMember::new(
        JsonPointer::root(),
        crate::Problem::Absent,
        "not set",
    ))
}

/// The record macro; see the module's docs.
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident : $expected:literal $(, check = $check:path)? {
            $(
                $(#[$field_meta:meta])*
                $field:ident : $kind:ident $ty:ty = $wire:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        #[non_exhaustive]
        pub struct $name {
            $(
                $(#[$field_meta])*
                pub $field: $crate::record::field_type!($kind $ty),
            )+
        }

        impl $crate::read::Decode for $name {
            const EXPECTED: &'static str = $expected;

            fn from_object<'de, A: ::serde::de::MapAccess<'de>>(
                map: A,
                at: &$crate::read::Path<'_>,
            ) -> Result<$crate::read::Field<Self>, A::Error> {
                $(
                    let mut $field: Option<
                        $crate::read::Field<$crate::record::field_type!($kind $ty)>,
                    > = None;
                )+
                $crate::read::members(map, at, |member, map| {
                    match member {
                        $( $wire => $field = Some($crate::read::value(map, at, member)?), )+
                        _ => return Ok(false),
                    }
                    Ok(true)
                })?;
                // The required members first, in the list's order (the first fault named is the
                // first in the protocol's order), then the lenient ones, which never fault. (A
                // record of lenient members only has no `?` in it, and is called all the same.)
                #[allow(clippy::redundant_closure_call)]
                let record = (|| {
                    $( $crate::record::take_required!($kind, $field, at, $wire); )+
                    $( $crate::record::take_lenient!($kind, $field, at, $wire); )+
                    Ok($name { $( $field, )+ })
                })();
                Ok(record $( .and_then(|record| $check(&record, at).map(|()| record)) )?)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(None)?;
                $( $crate::record::write_member!($kind, map, $wire, &self.$field); )+
                map.end()
            }
        }

        #[allow(dead_code)]
        impl $name {
            /// Adds the lenient members kept as lost to `lost`.
            // A record with only required members pushes nothing, and clippy then asks for a
            // slice; the signature is the same for every record.
            #[allow(unused_variables, clippy::ptr_arg)]
            pub(crate) fn lost_into<'a>(&'a self, lost: &mut Vec<&'a $crate::LostMember>) {
                $( $crate::record::lost!($kind, &self.$field, lost); )+
            }
        }

        impl $crate::record::Reindex for $name {
            #[allow(unused_variables)]
            fn reindex(&mut self, index: usize) {
                $( $crate::record::reindex!($kind, &mut self.$field, index); )+
            }
        }

        $crate::record::constructor!($name [] [] $( $kind $field $ty; )+);
    };
}

/// The type of a member.
macro_rules! field_type {
    (required $ty:ty) => { $ty };
    (lenient $ty:ty) => { $crate::Lenient<$ty> };
}

/// A required member's value once the object is read (a fault returns from the closure).
macro_rules! take_required {
    (required, $slot:ident, $at:ident, $wire:literal) => {
        let $slot = $crate::read::required($slot, $at, $wire)?;
    };
    (lenient, $slot:ident, $at:ident, $wire:literal) => {};
}

/// A lenient member's value once the object is read (never a fault).
macro_rules! take_lenient {
    (required, $slot:ident, $at:ident, $wire:literal) => {};
    (lenient, $slot:ident, $at:ident, $wire:literal) => {
        let $slot = $crate::read::lenient($slot, $at, $wire);
    };
}

/// Writes a member: always, or (lenient) only when it was read.
macro_rules! write_member {
    (required, $map:ident, $wire:literal, $value:expr) => {
        $map.serialize_entry($wire, $value)?
    };
    (lenient, $map:ident, $wire:literal, $value:expr) => {
        if let $crate::Lenient::Read(value) = $value {
            $map.serialize_entry($wire, value)?;
        }
    };
}

/// Adds a lenient member to the lost ones when it was lost.
macro_rules! lost {
    (required, $value:expr, $lost:ident) => {};
    (lenient, $value:expr, $lost:ident) => {
        $lost.extend($value.lost())
    };
}

/// Moves a lenient member's pointer.
macro_rules! reindex {
    (required, $value:expr, $index:ident) => {};
    (lenient, $value:expr, $index:ident) => {
        $crate::record::reindex_member($value, $index)
    };
}

/// `new(required members…)`, the lenient ones left unset (set them by assignment).
macro_rules! constructor {
    ($name:ident [$($arg:ident: $arg_ty:ty,)*] [$($init:tt)*]) => {
        impl $name {
            /// A record with these required members; every lenient member is unset (not
            /// written) until assigned.
            #[allow(clippy::too_many_arguments, clippy::new_without_default)]
            pub fn new($($arg: $arg_ty),*) -> Self {
                Self { $($init)* }
            }
        }
    };
    ($name:ident [$($args:tt)*] [$($init:tt)*] required $field:ident $ty:ty; $($rest:tt)*) => {
        $crate::record::constructor!(
            $name [$($args)* $field: $ty,] [$($init)* $field,] $($rest)*
        );
    };
    ($name:ident [$($args:tt)*] [$($init:tt)*] lenient $field:ident $ty:ty; $($rest:tt)*) => {
        $crate::record::constructor!(
            $name [$($args)*] [$($init)* $field: $crate::record::unset(),] $($rest)*
        );
    };
}

pub(crate) use {
    constructor, field_type, lost, record, reindex, take_lenient, take_required, write_member,
};
