//! Closed sets of lower-case tokens (the enumerations of the protocol and of the state).

use std::fmt;

/// An enumeration whose values are spelled on the wire as fixed lower-case tokens.
///
/// Implemented by [`token_enum!`](crate::token_enum); the spelling is exact: `"enabled"` reads,
/// `"Enabled"` does not.
pub trait Token: Copy + Eq + fmt::Debug + 'static {
    /// Every value, in declaration order.
    const ALL: &'static [Self];

    /// The wire spelling.
    fn as_str(self) -> &'static str;

    /// The value spelled exactly `text`, if any.
    fn from_token(text: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.as_str() == text)
    }
}

/// A token that names no value of the enumeration it was read as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{text}`; expected one of: {expected}")]
#[non_exhaustive]
pub struct UnknownToken {
    /// The enumeration's name, for messages.
    pub what: &'static str,
    /// The text that was read.
    pub text: String,
    /// The known spellings, comma separated.
    pub expected: String,
}

impl UnknownToken {
    /// The error for `text`, which is not a value of `T`.
    pub fn new<T: Token>(what: &'static str, text: &str) -> Self {
        Self {
            what,
            text: text.to_owned(),
            expected: expected_list::<T>(),
        }
    }
}

/// The known spellings of `T`, comma separated, for messages.
pub fn expected_list<T: Token>() -> String {
    T::ALL
        .iter()
        .map(|value| value.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Declares an enumeration of lower-case wire tokens: the enum, [`Token`], `Display`, `FromStr`
/// and exact serde (an unknown spelling is an error; wrap the type in
/// [`Enumerated`](crate::Enumerated) to keep it instead).
///
/// ```
/// gpu_partition_types::token_enum! {
///     /// Whether a fan spins.
///     pub enum Fan: "fan state" {
///         /// It spins.
///         On = "on",
///         /// It does not.
///         Off = "off",
///     }
/// }
/// assert_eq!("on".parse::<Fan>().ok(), Some(Fan::On));
/// assert!("On".parse::<Fan>().is_err());
/// ```
#[macro_export]
macro_rules! token_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $crate::Token for $name {
            const ALL: &'static [Self] = &[$(Self::$variant,)+];
            fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )+
                }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str($crate::Token::as_str(*self))
            }
        }

        impl ::core::str::FromStr for $name {
            type Err = $crate::UnknownToken;
            fn from_str(text: &str) -> ::core::result::Result<Self, Self::Err> {
                <Self as $crate::Token>::from_token(text)
                    .ok_or_else(|| $crate::UnknownToken::new::<Self>($what, text))
            }
        }

        impl $crate::__private::serde::Serialize for $name {
            fn serialize<S>(&self, serializer: S) -> ::core::result::Result<S::Ok, S::Error>
            where
                S: $crate::__private::serde::Serializer,
            {
                serializer.serialize_str($crate::Token::as_str(*self))
            }
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $name {
            fn deserialize<D>(deserializer: D) -> ::core::result::Result<Self, D::Error>
            where
                D: $crate::__private::serde::Deserializer<'de>,
            {
                $crate::__private::deserialize_token(deserializer)
            }
        }
    };
}

/// Support for [`token_enum!`]; not public API.
#[doc(hidden)]
pub mod __private {
    pub use serde;

    use super::Token;
    use std::str::FromStr;

    /// Reads a token exactly, failing on any other spelling.
    pub fn deserialize_token<'de, T, D>(deserializer: D) -> Result<T, D::Error>
    where
        T: Token + FromStr,
        T::Err: std::fmt::Display,
        D: serde::Deserializer<'de>,
    {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
