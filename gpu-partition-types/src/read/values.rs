//! [`Decode`] for the plain values and for the three wrappers ([`Lenient`], [`Nullable`],
//! [`Enumerated`]).

use super::decode::{At, Decode};
use super::{Fault, Field, Path};
use crate::{Enumerated, Lenient, LostMember, Nullable, Token};
use serde::de::{MapAccess, SeqAccess};

impl Decode for bool {
    const EXPECTED: &'static str = "a boolean";

    fn from_bool(value: bool, _: &Path<'_>) -> Field<Self> {
        Ok(value)
    }
}

impl Decode for String {
    const EXPECTED: &'static str = "a string";

    fn from_str(value: &str, _: &Path<'_>) -> Field<Self> {
        Ok(value.to_owned())
    }
}

/// Integers read only from JSON integers inside the type's range: `1.0`, `1e3`, `"1"`, `-1`
/// and anything past `u64` (which serde_json hands over as a float) all fail.
macro_rules! decode_unsigned {
    ($ty:ty, $expected:literal) => {
        impl Decode for $ty {
            const EXPECTED: &'static str = $expected;

            fn from_unsigned(value: u64, at: &Path<'_>) -> Field<Self> {
                <$ty>::try_from(value).map_err(|_| {
                    Fault::new(
                        at,
                        crate::Problem::OutOfRange,
                        format!("the integer {value} is out of range for {}", $expected),
                    )
                })
            }

            /// A negative integer is a number of the right JSON type outside the range.
            fn from_signed(value: i64, at: &Path<'_>) -> Field<Self> {
                Err(Fault::new(
                    at,
                    crate::Problem::OutOfRange,
                    format!("the integer {value} is out of range for {}", $expected),
                ))
            }
        }
    };
}

decode_unsigned!(u32, "an integer (u32)");
decode_unsigned!(u64, "an integer (u64)");

impl<T: Decode> Decode for Vec<T> {
    const EXPECTED: &'static str = "a list";

    /// Every element must read; the first fault (in list order) is the list's.
    fn from_list<'de, A: SeqAccess<'de>>(
        mut seq: A,
        at: &Path<'_>,
    ) -> Result<Field<Self>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        let mut fault = None;
        for index in 0.. {
            let here = at.index(index);
            match seq.next_element_seed(At::<T>::new(&here))? {
                None => break,
                Some(Ok(item)) => items.push(item),
                Some(Err(problem)) => {
                    fault.get_or_insert(problem);
                }
            }
        }
        Ok(match fault {
            Some(problem) => Err(problem),
            None => Ok(items),
        })
    }
}

impl<T: Token> Decode for Enumerated<T> {
    const EXPECTED: &'static str = "a string";

    fn from_str(value: &str, _: &Path<'_>) -> Field<Self> {
        Ok(Enumerated::from_wire(value))
    }
}

/// Reads a strict token: only a known spelling; anything else is a fault that names the value.
pub(crate) fn known<T: Token>(value: &str, at: &Path<'_>) -> Field<T> {
    T::from_token(value).ok_or_else(|| {
        Fault::new(
            at,
            crate::Problem::UnknownSpelling,
            format!(
                "unknown value {value:?}; expected one of: {}",
                crate::token::expected_list::<T>()
            ),
        )
    })
}

/// Forwards every kind of value to `$inner`'s reader and wraps its answer with `$wrap`.
macro_rules! forward {
    ($inner:ty, $wrap:expr) => {
        fn from_bool(value: bool, at: &Path<'_>) -> Field<Self> {
            $wrap(<$inner>::from_bool(value, at), at)
        }
        fn from_unsigned(value: u64, at: &Path<'_>) -> Field<Self> {
            $wrap(<$inner>::from_unsigned(value, at), at)
        }
        fn from_signed(value: i64, at: &Path<'_>) -> Field<Self> {
            $wrap(<$inner>::from_signed(value, at), at)
        }
        fn from_float(value: f64, at: &Path<'_>) -> Field<Self> {
            $wrap(<$inner>::from_float(value, at), at)
        }
        fn from_str(value: &str, at: &Path<'_>) -> Field<Self> {
            $wrap(<$inner>::from_str(value, at), at)
        }
        fn from_object<'de, A: MapAccess<'de>>(
            map: A,
            at: &Path<'_>,
        ) -> Result<Field<Self>, A::Error> {
            <$inner>::from_object(map, at).map(|read| $wrap(read, at))
        }
        fn from_list<'de, A: SeqAccess<'de>>(
            seq: A,
            at: &Path<'_>,
        ) -> Result<Field<Self>, A::Error> {
            <$inner>::from_list(seq, at).map(|read| $wrap(read, at))
        }
    };
}

impl<T: Decode> Decode for Nullable<T> {
    const EXPECTED: &'static str = T::EXPECTED;

    forward!(T, |read: Field<T>, _: &Path<'_>| read.map(Nullable::Value));

    fn from_null(_: &Path<'_>) -> Field<Self> {
        Ok(Nullable::Null)
    }
}

impl<T: Decode> Decode for Lenient<T> {
    const EXPECTED: &'static str = T::EXPECTED;

    forward!(T, keep::<T>);

    fn from_null(at: &Path<'_>) -> Field<Self> {
        keep(T::from_null(at), at)
    }
}

/// A lenient unit never faults: a fault inside it becomes the unit's loss.
fn keep<T>(read: Field<T>, at: &Path<'_>) -> Field<Lenient<T>> {
    Ok(match read {
        Ok(value) => Lenient::Read(value),
        Err(fault) => {
            let unit = at.pointer();
            let problem = fault.problem_within(&unit);
            Lenient::Lost(LostMember::new(unit, fault.kind, problem))
        }
    })
}

/// A lenient member of a record: its value, or lost as "missing member" when absent.
pub(crate) fn lenient<T>(slot: Option<Field<Lenient<T>>>, at: &Path<'_>, name: &str) -> Lenient<T> {
    match slot {
        Some(Ok(value)) => value,
        Some(Err(fault)) => {
            let unit = at.member(name).pointer();
            let problem = fault.problem_within(&unit);
            Lenient::Lost(LostMember::new(unit, fault.kind, problem))
        }
        None => Lenient::Lost(LostMember::new(
            at.member(name).pointer(),
            crate::Problem::Absent,
            "missing member",
        )),
    }
}
