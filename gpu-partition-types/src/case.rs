//! What the helper found on the card: `case`, and `unreadable` when it could not read it.

use crate::Lenient;
use crate::read::{Decode, Fault, Field, Path, known, lenient, members, required, value};
use serde::Serialize;
use serde::de::MapAccess;

crate::token_enum! {
    /// `case`: what the helper found.
    pub enum Case: "case" {
        /// MIG capable, and at least one GPU instance exists.
        Partitions = "partitions",
        /// MIG capable, no GPU instance (MIG mode on or off).
        NoneCarved = "none_carved",
        /// The helper could not read the card; `unreadable` says why.
        Unreadable = "unreadable",
        /// The card cannot be partitioned.
        NotApplicable = "not_applicable",
    }
}

/// `unreadable`: why the helper could not read the card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// An open token (`busy`, `driver_error`, `permission_denied`, …); the read's reason
    /// becomes `helper:<kind>`.
    pub kind: String,
    /// For people and logs (lenient).
    #[serde(skip_serializing_if = "Lenient::is_lost")]
    pub message: Lenient<String>,
}

impl Decode for Case {
    const EXPECTED: &'static str = "a case string";

    fn from_str(text: &str, at: &Path<'_>) -> Field<Self> {
        known(text, at)
    }
}

impl Decode for Unreadable {
    const EXPECTED: &'static str = "an unreadable object";

    fn from_object<'de, A: MapAccess<'de>>(map: A, at: &Path<'_>) -> Result<Field<Self>, A::Error> {
        let (mut kind, mut message) = (None, None);
        members(map, |name, map| {
            match name {
                "kind" => kind = Some(value(map, at, name)?),
                "message" => message = Some(value(map, at, name)?),
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        let kind: Field<String> = required(kind, at, "kind").and_then(|kind: String| {
            if kind.is_empty() {
                Err(Fault::new(&at.member("kind"), "empty kind"))
            } else {
                Ok(kind)
            }
        });
        Ok(kind.map(|kind| Unreadable {
            kind,
            message: lenient(message, at, "message"),
        }))
    }
}
